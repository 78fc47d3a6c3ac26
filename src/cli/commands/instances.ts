/**
 * `foundry instances`, `foundry install` and `foundry uninstall`: a running server's instances
 * from the terminal, through its HTTP API. The server is the one the project's config names
 * (`--url` for another), and the token comes from `--token` or `FOUNDRY_TOKEN`. A refusal prints
 * what the server said (each wrong field on a line of its own), never a stack trace.
 */
import { FileSystem, HttpClientRequest } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { CapabilityView } from "../../transports/http/api/CapabilitiesGroup.js"
import { InstallationView, InstanceSummary } from "../../transports/http/api/instanceViews.js"
import { RouteView } from "../../transports/http/api/SystemGroup.js"
import { CliError } from "../CliError.js"
import { givenFields } from "../givenFields.js"
import { serverApi, type ServerHint, type ServerOptions, type ServerRefused } from "../serverApi.js"
import { say, style, table, when } from "../terminal.js"
import { noSuch } from "../../text/closest.js"

/** Where the server is, how to say that nobody answered there, and the flags sent as query parameters. */
const hint: ServerHint = { flag: "--url", start: "foundry dev", params: { agent: "--agent", search: "--search" } }

/** The server's API, for the instance commands. */
export const api = (options: ServerOptions) => serverApi(options, hint)

/** A page of instances; its `next` is opaque text to a client, sent back as `after`. */
const Page = Schema.Struct({ instances: Schema.Array(InstanceSummary), next: Schema.NullOr(Schema.String) })

/** Every page lists at most this many (the API's largest page). */
const pageLimit = 500

/** `foundry instances`: the server's instances, the first page or (`--all`) every one. */
export const list = (options: ServerOptions & {
  readonly agent: Option.Option<string>
  readonly search: Option.Option<string>
  readonly all: boolean
}) =>
  Effect.gen(function*() {
    const { read } = yield* api(options)
    const filters = givenFields({ agent: options.agent, search: options.search })
    const instances: Array<InstanceSummary> = []
    let after: string | null = null
    let more = false
    do {
      const page: typeof Page.Type = yield* read(
        HttpClientRequest.get("/api/instances", {
          urlParams: { ...filters, ...(options.all ? { limit: String(pageLimit) } : {}), ...(after === null ? {} : { after }) }
        }),
        Page
      )
      instances.push(...page.instances)
      after = page.next
      more = page.next !== null
    } while (options.all && more)
    if (instances.length === 0) {
      // None of an agent the server does not have is a mistyped name, not an empty list.
      if (Option.isSome(options.agent)) {
        const served = yield* read(HttpClientRequest.get("/api/routes"), Schema.Struct({ routes: Schema.Array(RouteView) }))
        const agents = served.routes.flatMap((route) => route.kind === "agent" ? [route.id] : [])
        if (!agents.includes(options.agent.value)) {
          return yield* new CliError({ message: noSuch("agent", options.agent.value, agents) })
        }
      }
      yield* say(Option.isNone(options.agent) && Option.isNone(options.search) ? "no instances" : "no instances match")
      return
    }
    yield* table(
      ["ID", "AGENT", "KEY", "STATUS", "INSTALLED", "UPDATED"],
      instances.map((i) => [i.id, i.agent, i.provisioningKey ?? "-", i.status, String(i.installations), when(i.updatedAt)])
    )
    if (more) yield* say(style.dim(`the first ${instances.length} instances: --all lists every one, --agent and --search narrow them`))
  })

/** `tool:<id>`, `mcp:<id>`, or a bare id that exactly one capability has. */
const resolveCapability = (
  given: string,
  read: <A, I>(request: HttpClientRequest.HttpClientRequest, schema: Schema.Schema<A, I>) => Effect.Effect<A, CliError | ServerRefused>
) =>
  Effect.gen(function*() {
    const prefixed = /^(tool|mcp):(.+)$/.exec(given)
    if (prefixed?.[1] === "tool" || prefixed?.[1] === "mcp") return { kind: prefixed[1], id: prefixed[2] ?? "" }
    const capabilities = yield* read(HttpClientRequest.get("/api/capabilities"), Schema.Array(CapabilityView))
    const named = capabilities.filter((capability) => capability.id === given)
    const [only] = named
    if (only !== undefined && named.length === 1) return { kind: only.kind, id: only.id }
    const known = capabilities.map((capability) => `${capability.kind}:${capability.id}`).join(", ") || "(none)"
    return yield* new CliError({
      message: named.length === 0
        ? `there is no installable capability "${given}"; installable: ${known}`
        : `"${given}" is both ${named.map((capability) => `${capability.kind}:${capability.id}`).join(" and ")}: say which`
    })
  })

/** A JSON file's value (an installation's config, an instance's context). */
export const readJsonFile = (file: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError((error) => new CliError({ message: `cannot read ${file}: ${error.message}` }))
    )
    return yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (error) => new CliError({ message: `${file} is not JSON: ${error instanceof Error ? error.message : String(error)}` })
    })
  })

/** `?agent=` when the command was given `--agent`. */
export const agentParam = (agent: Option.Option<string>) => givenFields({ agent })

/** `foundry install`: installs a capability on an instance with the config in a JSON file. */
export const install = (options: ServerOptions & {
  readonly instance: string
  readonly capability: string
  readonly config: Option.Option<string>
  readonly agent: Option.Option<string>
}) =>
  Effect.gen(function*() {
    const config = yield* Option.match(options.config, { onNone: () => Effect.succeed({}), onSome: readJsonFile })
    const { read } = yield* api(options)
    const { id, kind } = yield* resolveCapability(options.capability, read)
    const installed = yield* read(
      HttpClientRequest.post(`/api/instances/${encodeURIComponent(options.instance)}/installations`, {
        urlParams: agentParam(options.agent)
      }).pipe(HttpClientRequest.bodyUnsafeJson({ kind, id, config })),
      InstallationView
    )
    yield* say(style.green(`installed ${installed.kind} ${installed.id} on instance ${options.instance}`))
    yield* say(`config (secrets redacted):\n${JSON.stringify(installed.config, null, 2).split("\n").map((line) => `  ${line}`).join("\n")}`)
  })

/** `foundry uninstall`: removes a capability from an instance. */
export const uninstall = (options: ServerOptions & {
  readonly instance: string
  readonly capability: string
  readonly agent: Option.Option<string>
}) =>
  Effect.gen(function*() {
    const { read, send } = yield* api(options)
    const { id, kind } = yield* resolveCapability(options.capability, read)
    yield* send(
      HttpClientRequest.del(`/api/instances/${encodeURIComponent(options.instance)}/installations`, {
        urlParams: { ...agentParam(options.agent), kind, capability: id }
      })
    )
    yield* say(`uninstalled ${kind} ${id} from instance ${options.instance}`)
  })
