/**
 * `foundry deploy`, `foundry releases` and `foundry rollback`: a project's release shipped to a
 * running server, the server's releases and latest deployments listed, and an earlier one made current again, through its
 * HTTP API (`/api/releases`). Changing the current release needs a token with the `deploy` scope;
 * a refusal says so and how to make one.
 */
import { join } from "node:path"
import { FileSystem, HttpClientRequest } from "@effect/platform"
import { Effect, Encoding, Schema } from "effect"
import { allows } from "../../auth/TokenScope.js"
import { ReleaseSwitch, ReleaseView } from "../../release/Deployments.js"
import { DeploymentView } from "../../release/ReleaseStorage.js"
import { ReleaseId, releaseFile, ReleaseManifest } from "../../release/ReleaseManifest.js"
import { changeCounts, changeLines } from "../../release/summaryText.js"
import { SessionView } from "../../transports/http/api/TokensGroup.js"
import { CliError } from "../CliError.js"
import { type ServerApi, serverApi, type ServerHint, type ServerOptions, type ServerRefused } from "../serverApi.js"
import { say, style, table, when } from "../terminal.js"
import { checkedRelease } from "./build.js"

const hint: ServerHint = { flag: "--to", start: "foundry start" }

const needsDeployScope = "changing the current release needs a token with the deploy scope: create one where the server's store is " +
  "with `foundry token create --scope deploy`, then pass it with --token or FOUNDRY_TOKEN"

/**
 * A refusal to change the current release, with what it means: a token's refusal says that
 * changing it needs the `deploy` scope and how to make such a token; a release refused as it is
 * (400: it does not load there, say) leaves the current one serving.
 */
const switchRefused = (refused: ServerRefused) =>
  refused.status === 401 || refused.status === 403
    ? new CliError({ message: `${refused.message}\n${needsDeployScope}` })
    : refused.status === 400
    ? new CliError({ message: `${refused.message}\nnothing switched: new runs still start on the current release` })
    : refused

/** Prints the answer to a deploy or a rollback. */
const report = (answer: ReleaseSwitch, options: { readonly dryRun: boolean }) =>
  Effect.gen(function*() {
    const lines = changeLines(answer.summary)
    yield* say(lines.length === 0 ? `${answer.id}: neither a route nor the config changed against the current release` : `${answer.id} against the current release:`)
    for (const line of lines) yield* say(`  ${line}`)
    if (options.dryRun) yield* say(style.yellow(`dry run: nothing switched; new runs still start on ${answer.current}`))
    else if (answer.switched) {
      const was = answer.previous === undefined ? "" : ` (was ${answer.previous})`
      yield* say(style.green(`switched: new runs start on ${answer.current}${was}; runs in flight finish on the release they started on`))
    } else yield* say(`nothing switched: ${answer.current} is the current release`)
    if (answer.restartNeeded !== undefined) yield* say(style.yellow(`note: ${answer.restartNeeded}`))
  })

/** A release folder as the API takes it: `release.json` as it is, and every bundled file in base64. */
const uploadOf = (folder: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(join(folder, releaseFile))
    const json = yield* Schema.decode(Schema.parseJson())(text)
    const manifest = yield* Schema.decodeUnknown(ReleaseManifest)(json)
    const files: Record<string, string> = {}
    for (const file of manifest.files) files[file] = Encoding.encodeBase64(yield* fs.readFile(join(folder, file)))
    return { manifest: json, files }
  }).pipe(
    Effect.mapError((error) => new CliError({ message: `cannot read the release in ${folder}: ${error.message}; build it again with \`foundry build\`` }))
  )

/**
 * Whether the server takes a deploy with the token sent: `GET /api/session` tells its mode and the
 * token's scope, and changes nothing (an unknown or revoked token is refused there).
 */
const mayDeploy = (read: ServerApi["read"]) =>
  Effect.gen(function*() {
    const session = yield* read(HttpClientRequest.get("/api/session"), SessionView).pipe(
      Effect.catchTag("ServerRefused", (refused) => Effect.fail(switchRefused(refused)))
    )
    if (session.mode === "open") return
    if (session.token === null) return yield* new CliError({ message: `this server needs an API token\n${needsDeployScope}` })
    if (!allows(session.token.scope, "deploy")) {
      return yield* new CliError({
        message: `the token ${session.token.id} has the ${session.token.scope} scope, which may not deploy\n${needsDeployScope}`
      })
    }
  })

/** `foundry deploy`: builds the project at `dir` and ships its release to the server, switching to it unless `dryRun`. */
export const deploy = (options: ServerOptions & { readonly dryRun: boolean }) =>
  Effect.gen(function*() {
    const { read, url } = yield* serverApi(options, hint)
    // Before the build, which takes seconds, so that a wrong --to or a token that may not deploy says so at once.
    yield* mayDeploy(read)
    const { release } = yield* checkedRelease(options.dir, "nothing was deployed: fix the problems above and deploy again")
    const upload = yield* uploadOf(release.folder)
    yield* say(style.dim(`deploying ${release.id} to ${url}${options.dryRun ? " (dry run)" : ""} ...`))
    const answer = yield* read(
      HttpClientRequest.post("/api/releases").pipe(HttpClientRequest.bodyUnsafeJson({ ...upload, dryRun: options.dryRun })),
      ReleaseSwitch
    ).pipe(Effect.catchTag("ServerRefused", (refused) => Effect.fail(switchRefused(refused))))
    yield* report(answer, options)
  })

/** `foundry releases`: the server's releases, newest first. */
export const releases = (options: ServerOptions) =>
  Effect.gen(function*() {
    const { read } = yield* serverApi(options, hint)
    const stored = yield* read(HttpClientRequest.get("/api/releases"), Schema.Array(ReleaseView))
    if (stored.length === 0) {
      yield* say("no releases deployed: `foundry deploy` ships one")
      return
    }
    yield* table(
      ["ID", "DEPLOYED", "BY", "CURRENT", "RUNS", "CHANGES"],
      stored.map((r) => [r.id, when(r.deployedAt), r.deployedBy ?? "-", r.current ? "yes" : "-", String(r.runs), changeCounts(r.summary) || "none"])
    )
    // A release's row says only when it was last made current; the log says every time, and from what.
    const log = yield* read(HttpClientRequest.get("/api/deployments?limit=10"), Schema.Array(DeploymentView))
    yield* say("")
    yield* say(style.bold("latest deployments"))
    yield* table(
      ["WHEN", "ACTION", "RELEASE", "FROM", "BY", "CHANGES"],
      log.map((d) => [when(d.deployedAt), d.action, d.release, d.previous ?? "-", d.deployedBy ?? "-", changeCounts(d.summary) || "none"])
    )
  })

const isReleaseId = Schema.is(ReleaseId)

/** `foundry rollback`: makes a release the server keeps the current one again. */
export const rollback = (options: ServerOptions & { readonly id: string }) =>
  Effect.gen(function*() {
    if (!isReleaseId(options.id)) {
      return yield* new CliError({ message: `${options.id} is not a release id (rel_ and 12 hex digits); \`foundry releases\` lists them` })
    }
    const { read } = yield* serverApi(options, hint)
    const answer = yield* read(HttpClientRequest.post(`/api/releases/${options.id}/activate`), ReleaseSwitch).pipe(
      Effect.catchTag("ServerRefused", (refused) =>
        Effect.fail(
          refused.status === 404
            ? new CliError({ message: `${refused.message}\n\`foundry releases\` lists the releases the server keeps` })
            : switchRefused(refused)
        ))
    )
    yield* report(answer, { dryRun: false })
  })
