/**
 * `foundry deploy`, `foundry releases` and `foundry rollback`: the real binary against a running
 * `foundry start` that asks for tokens. A deploy builds the project (checked, bundled), uploads the
 * release and prints what changed; a dry run switches nothing; a rollback makes an earlier release
 * current again; a token without the `deploy` scope, or no server at all, reads as one clear line.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { freePort, runCli, startCli } from "../support/cli.js"
import { http, runIdOf } from "../support/server.js"
import { answeringAgentFile as deskAgent, answerToolFile, tempProject, writeFiles } from "../support/tempProject.js"

/** The tool, answering `answer`. */
const answerTool = (answer: string) => answerToolFile(JSON.stringify(answer))

const helperAgent = `import { defineAgent } from "foundry"
export default defineAgent({ description: "Helps", model: "demo" })
`

/** A project whose server on `port` needs tokens: v1 of the desk agent's tool. */
const project = (port: number) =>
  tempProject({
    "agents/desk/agent.ts": deskAgent,
    "agents/desk/tools/answer.tool.ts": answerTool("v1"),
    "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ server: { port: ${port} }, auth: { required: true } })\n`
  })

/** `foundry token create --scope <scope>` on the project's store: the token it printed. */
const createToken = (root: string, scope: string) =>
  Effect.gen(function*() {
    const created = yield* runCli(["token", "create", "--scope", scope, "--dir", root])
    const token = /^\s+(fdy_\S+)\s*$/m.exec(created.stdout)?.[1]
    if (created.code !== 0 || token === undefined) throw new Error(`foundry token create failed:\n${created.stdout}${created.stderr}`)
    return token
  })

/** The project served by `foundry start`, with a token of each scope a test needs. */
const served = Effect.gen(function*() {
  const port = yield* freePort
  const root = yield* project(port)
  const deployToken = yield* createToken(root, "deploy")
  const readToken = yield* createToken(root, "read")
  // A deploy token ships code and starts no runs.
  const runToken = yield* createToken(root, "run")
  const server = yield* startCli(["start", root])
  yield* server.waitFor(/listening on/)
  return { root, url: `http://127.0.0.1:${port}`, deployToken, readToken, runToken }
})

interface ReleaseRow {
  readonly id: string
  readonly current: boolean
}

const isReleaseRows = (body: unknown): body is ReadonlyArray<ReleaseRow> =>
  Array.isArray(body) && body.every((row) => typeof row === "object" && row !== null && "id" in row && "current" in row)

/** `GET /api/releases` with `token`. */
const releasesOf = (url: string, token: string) =>
  Effect.gen(function*() {
    const answer = yield* http(`${url}/api/releases`, { headers: { authorization: `Bearer ${token}` } })
    if (answer.status !== 200 || !isReleaseRows(answer.json)) throw new Error(`GET /api/releases answered ${answer.status}: ${answer.text}`)
    return answer.json
  })

const currentOf = (url: string, token: string) => Effect.map(releasesOf(url, token), (rows) => rows.filter((row) => row.current).map((row) => row.id))

/** A run of the desk agent to its end: what it answered. */
const askDesk = (url: string, token: string) =>
  Effect.gen(function*() {
    const headers = { authorization: `Bearer ${token}` }
    const started = yield* http(`${url}/api/runs`, { body: { agent: "desk", message: "what does the tool say?" }, headers })
    expect(started.status, started.text).toBe(202)
    const runId = runIdOf(started.json)
    for (let attempt = 0; attempt < 400; attempt++) {
      const run = yield* http(`${url}/api/runs/${runId}`, { headers })
      const body = run.json
      if (typeof body === "object" && body !== null && "status" in body && body.status !== "queued" && body.status !== "running") {
        return "output" in body ? body.output : body
      }
      yield* Effect.sleep("25 millis")
    }
    throw new Error(`run ${runId} did not end`)
  })

/** The id of the release a deploy printed. */
const deployedId = (stdout: string): string => {
  const id = /deploying (rel_[0-9a-f]{12})/.exec(stdout)?.[1]
  if (id === undefined) throw new Error(`no release id in:\n${stdout}`)
  return id
}

/** The rows of a printed table: its cells split on runs of two or more spaces. */
const rowsOf = (stdout: string) => stdout.trim().split("\n").map((line) => line.trim().split(/ {2,}/))

/** `foundry releases`' two tables, each as rows of cells: the releases kept, and the latest deployments. */
const releasesOutput = (stdout: string) => {
  const [kept = "", log = ""] = stdout.split("latest deployments")
  return { releases: rowsOf(kept), deployments: rowsOf(log) }
}

describe("foundry deploy, releases and rollback", () => {
  it.scopedLive("a dry run prints the changes and switches nothing; a deploy switches new runs; releases lists both; rollback switches back", () =>
    Effect.gen(function*() {
      const { deployToken, readToken, root, runToken, url } = yield* served

      const first = yield* runCli(["deploy", root, "--token", deployToken])
      expect(first.stderr).toBe("")
      expect(first.code).toBe(0)
      const v1 = deployedId(first.stdout)
      expect(first.stdout).toContain("check passed")
      expect(first.stdout).toContain(`switched: new runs start on ${v1}`)
      expect(yield* currentOf(url, readToken)).toEqual([v1])
      expect(yield* askDesk(url, runToken)).toBe("the tool said: v1")

      // v2: the tool answers differently, and there is a new agent.
      writeFiles(root, { "agents/desk/tools/answer.tool.ts": answerTool("v2"), "agents/helper/agent.ts": helperAgent })

      // The address the server prints for its API names the server as well.
      const dry = yield* runCli(["deploy", root, "--dry-run", "--to", `${url}/api`, "--token", deployToken])
      expect(dry.stderr).toBe("")
      expect(dry.code).toBe(0)
      const v2 = deployedId(dry.stdout)
      expect(v2).not.toBe(v1)
      const dryLines = dry.stdout.split("\n").map((line) => line.trim())
      // The desk agent changed too: the code it runs includes its tool's.
      expect(dryLines.filter((line) => /^[+~-] /.test(line))).toEqual(["+ agent helper", "~ agent desk", "~ tool desk/answer"])
      expect(dry.stdout).toContain(`dry run: nothing switched; new runs still start on ${v1}`)
      expect(yield* currentOf(url, readToken)).toEqual([v1])
      expect(yield* askDesk(url, runToken)).toBe("the tool said: v1")

      // The token from FOUNDRY_TOKEN, this time.
      const second = yield* startCli(["deploy", root], { env: { FOUNDRY_TOKEN: deployToken } })
      yield* second.waitFor(new RegExp(`switched: new runs start on ${v2} \\(was ${v1}\\)`))
      expect(second.output()).toContain("+ agent helper")
      expect(yield* currentOf(url, readToken)).toEqual([v2])
      expect(yield* askDesk(url, runToken)).toBe("the tool said: v2")

      const listed = yield* runCli(["releases", "--dir", root, "--token", readToken])
      expect(listed.stderr).toBe("")
      expect(listed.code).toBe(0)
      const { deployments: log, releases: [header, ...rows] } = releasesOutput(listed.stdout)
      expect(header).toEqual(["ID", "DEPLOYED", "BY", "CURRENT", "RUNS", "CHANGES"])
      expect(rows.map((row) => [row[0], row[3], row[4]])).toEqual([[v2, "yes", "1"], [v1, "-", "2"]])
      expect(rows[0]?.[1]).toMatch(/^\d{4}-\d\d-\d\d \d\d:\d\d$/)
      // Who deployed: the id of the token that did (`fdy_<id>_<secret>`).
      expect(rows.map((row) => row[2])).toEqual([deployToken.split("_")[1], deployToken.split("_")[1]])
      expect(rows[0]?.[5]).toBe("agents +1 ~1, tools ~1")
      const [logHeader, ...entries] = log
      expect(logHeader).toEqual(["WHEN", "ACTION", "RELEASE", "FROM", "BY", "CHANGES"])
      expect(entries.map((entry) => entry.slice(1, 4))).toEqual([["deploy", v2, v1], ["deploy", v1, "-"]])

      const back = yield* runCli(["rollback", v1, "--to", url, "--token", deployToken])
      expect(back.stderr).toBe("")
      expect(back.code).toBe(0)
      const backLines = back.stdout.split("\n").map((line) => line.trim())
      expect(backLines.filter((line) => /^[+~-] /.test(line))).toEqual(["- agent helper", "~ agent desk", "~ tool desk/answer"])
      expect(back.stdout).toContain(`switched: new runs start on ${v1} (was ${v2})`)
      expect(yield* currentOf(url, readToken)).toEqual([v1])
      expect(yield* askDesk(url, runToken)).toBe("the tool said: v1")
      // v1's row now says when it was rolled back to; the log keeps its first deploy as well.
      const history = releasesOutput((yield* runCli(["releases", "--dir", root, "--token", readToken])).stdout).deployments
      expect(history.slice(1).map((entry) => entry.slice(1, 5))).toEqual([
        ["rollback", v1, v2, deployToken.split("_")[1]],
        ["deploy", v2, v1, deployToken.split("_")[1]],
        ["deploy", v1, "-", deployToken.split("_")[1]]
      ])

      const unknown = yield* runCli(["rollback", "rel_000000000000", "--to", url, "--token", deployToken])
      expect(unknown.code).toBe(1)
      expect(unknown.stderr).toContain("`foundry releases` lists the releases the server keeps")
      expect(yield* currentOf(url, readToken)).toEqual([v1])
    }))

  it.scopedLive("a token without the deploy scope, an unknown one, or none, is refused before the build with how to make one; nothing switches", () =>
    Effect.gen(function*() {
      const { deployToken, readToken, root, url } = yield* served
      const hint = "`foundry token create --scope deploy`"

      const withRead = yield* runCli(["deploy", root, "--token", readToken])
      expect(withRead.code).toBe(1)
      expect(withRead.stderr).toContain(`the token ${readToken.split("_")[1]} has the read scope, which may not deploy`)
      expect(withRead.stderr).toContain("changing the current release needs a token with the deploy scope")
      expect(withRead.stderr).toContain(hint)
      expect(withRead.stderr).not.toMatch(/\n\s+at /)
      // Said before the check and the build, which take seconds.
      expect(withRead.stdout).toBe("")
      expect(yield* releasesOf(url, readToken)).toEqual([])

      const withUnknown = yield* runCli(["deploy", root, "--token", "fdy_unknown_token"])
      expect(withUnknown.code).toBe(1)
      expect(withUnknown.stderr).toContain(hint)
      expect(withUnknown.stdout).toBe("")

      const withNone = yield* runCli(["deploy", root])
      expect(withNone.code).toBe(1)
      expect(withNone.stderr).toContain("this server needs an API token")
      expect(withNone.stderr).toContain(hint)
      expect(withNone.stdout).toBe("")

      const deployed = yield* runCli(["deploy", root, "--token", deployToken])
      expect(deployed.code, deployed.stderr).toBe(0)
      const id = deployedId(deployed.stdout)
      const rollback = yield* runCli(["rollback", id, "--dir", root, "--token", readToken])
      expect(rollback.code).toBe(1)
      expect(rollback.stderr).toContain(hint)
      // Reading the releases needs only `read`.
      const listed = yield* runCli(["releases", "--dir", root, "--token", readToken])
      expect(listed.code).toBe(0)
      expect(listed.stdout).toContain(id)
    }))

  it.scopedLive("a release the server cannot load is refused with the server's errors, and nothing switches", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const root = yield* tempProject({
        "agents/desk/agent.ts": deskAgent,
        "agents/desk/tools/answer.tool.ts": answerTool("v1"),
        "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ server: { port: ${port} } })\n`
      })
      // This agent loads where it is built and checked, and throws where the server loads it.
      const picky = yield* tempProject({
        "agents/desk/agent.ts": `import { defineAgent } from "foundry"
declare const process: { readonly env: Readonly<Record<string, string | undefined>> }
if (process.env.FOUNDRY_TEST_REFUSE === "1") throw new Error("this agent refuses to load on that server")
export default defineAgent({ description: "Picky", model: "demo" })
`
      })
      const server = yield* startCli(["start", root], { env: { FOUNDRY_TEST_REFUSE: "1" } })
      yield* server.waitFor(/listening on/)
      const url = `http://127.0.0.1:${port}`
      const v1 = deployedId((yield* runCli(["deploy", root])).stdout)

      const refused = yield* runCli(["deploy", picky, "--to", url])
      expect(refused.code).toBe(1)
      const id = deployedId(refused.stdout)
      expect(refused.stderr).toContain(`${id} does not load`)
      expect(refused.stderr).toContain("agents/desk/agent.js: importing the file failed: this agent refuses to load on that server")
      expect(refused.stderr).toContain("nothing switched: new runs still start on the current release")
      expect(refused.stderr).not.toMatch(/\n\s+at /)
      const listed = yield* runCli(["releases", "--to", url])
      expect(releasesOutput(listed.stdout).releases.slice(1).map((row) => [row[0], row[3]])).toEqual([[v1, "yes"]])
      // Read by a reader that stops early (`| head -1`), and named the way people write an address.
      const headed = yield* runCli(["releases", "--to", url.replace("http://", "")], { firstChunkOnly: true })
      expect(headed.stderr).toBe("")
      expect(headed.code).toBe(0)
      expect(headed.stdout).toContain("CURRENT")
    }))

  it.scopedLive("with no server there, each command says so in one line and exits 1 (the server named with --to or --url)", () =>
    Effect.gen(function*() {
      const port = yield* freePort
      const root = yield* project(port)
      const nobody = `no Foundry server at http://127.0.0.1:${port}: start one with \`foundry start\`, or pass --to`

      const deploy = yield* runCli(["deploy", root, "--token", "fdy_unused"])
      expect(deploy.code).toBe(1)
      expect(deploy.stderr).toContain(nobody)
      expect(deploy.stderr).not.toMatch(/\n\s+at /)
      const listed = yield* runCli(["releases", "--to", `http://127.0.0.1:${port}/`])
      expect(listed.code).toBe(1)
      expect(listed.stderr).toContain(nobody)
      // --url, as the other client commands name it, says the same.
      const byUrl = yield* runCli(["releases", "--url", `http://127.0.0.1:${port}/`])
      expect(byUrl.stderr).toContain(nobody)
      const rollback = yield* runCli(["rollback", "rel_0123456789ab", "--dir", root])
      expect(rollback.code).toBe(1)
      expect(rollback.stderr).toContain(nobody)
      const notAUrl = yield* runCli(["releases", "--to", "http://"])
      expect(notAUrl.code).toBe(1)
      expect(notAUrl.stderr).toContain("--to http:// is not a server's address: give one like http://127.0.0.1:4141")
      const notAnId = yield* runCli(["rollback", "v1", "--dir", root])
      expect(notAnId.code).toBe(1)
      expect(notAnId.stderr).toContain("v1 is not a release id (rel_ and 12 hex digits)")
    }))
})
