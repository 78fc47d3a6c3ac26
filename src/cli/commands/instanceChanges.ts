/**
 * `foundry instances create | show | context | pause | resume | archive`: one instance of a
 * running server made, read or changed from the terminal, through the instances API, as
 * `foundry instances` lists them. Each prints what the server answered, in a line or two.
 */
import { HttpClientRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { InstanceCreated, InstanceView } from "../../transports/http/api/instanceViews.js"
import { givenFields } from "../givenFields.js"
import type { ServerOptions } from "../serverApi.js"
import { say, style, when } from "../terminal.js"
import { agentParam, api, readJsonFile } from "./instances.js"

/** One instance, named by id and, where several agents have that id, `--agent`. */
interface OneInstance extends ServerOptions {
  readonly instance: string
  readonly agent: Option.Option<string>
}

const pathOf = (instance: string) => `/api/instances/${encodeURIComponent(instance)}`

/** `text` indented under a heading line. */
const indented = (text: string) => text.split("\n").map((line) => `  ${line}`).join("\n")

/** The instance as a person reads it: who it is, its status and why, its context and installations. */
const describe = (instance: InstanceView) =>
  Effect.gen(function*() {
    const why = instance.statusReason === null ? "" : ` (${instance.statusReason})`
    yield* say(`${style.bold(instance.id)} of agent ${instance.agent}: ${instance.status}${why}`)
    if (instance.provisioningKey !== null) yield* say(`key:      ${instance.provisioningKey}`)
    yield* say(`created:  ${when(instance.createdAt)}, updated ${when(instance.updatedAt)}`)
    yield* say(`context:\n${indented(JSON.stringify(instance.context, null, 2))}`)
    yield* say(
      instance.installations.length === 0
        ? "installed: nothing"
        : `installed:\n${instance.installations.map((i) => `  ${i.kind}:${i.id} ${JSON.stringify(i.config)}`).join("\n")}`
    )
  })

/** `foundry instances create`: an instance of `agent`, with its context from a JSON file. */
export const create = (options: ServerOptions & {
  readonly agent: string
  readonly id: Option.Option<string>
  readonly key: Option.Option<string>
  readonly context: Option.Option<string>
}) =>
  Effect.gen(function*() {
    const context = yield* Option.match(options.context, { onNone: () => Effect.succeed(undefined), onSome: readJsonFile })
    const { read } = yield* api(options)
    const made = yield* read(
      HttpClientRequest.post("/api/instances").pipe(HttpClientRequest.bodyUnsafeJson({
        agent: options.agent,
        ...givenFields({ id: options.id, provisioningKey: options.key }),
        ...(context === undefined ? {} : { context })
      })),
      InstanceCreated
    )
    yield* say(
      made.created
        ? style.green(`created instance ${made.id} of agent ${made.agent}`)
        // A provisioning key names one instance: asked again, it is that one, unchanged.
        : style.yellow(`instance ${made.id} of agent ${made.agent} has key ${made.provisioningKey ?? ""} already; nothing changed`)
    )
    yield* describe(made)
  })

/** `foundry instances show`: one instance, whole. */
export const show = (options: OneInstance) =>
  Effect.gen(function*() {
    const { read } = yield* api(options)
    yield* describe(yield* read(HttpClientRequest.get(pathOf(options.instance), { urlParams: agentParam(options.agent) }), InstanceView))
  })

/** A PATCH of the instance, and what it came to. */
const change = (options: OneInstance, body: Record<string, unknown>, done: (instance: InstanceView) => string) =>
  Effect.gen(function*() {
    const { read } = yield* api(options)
    const changed = yield* read(
      HttpClientRequest.patch(pathOf(options.instance), { urlParams: agentParam(options.agent) }).pipe(HttpClientRequest.bodyUnsafeJson(body)),
      InstanceView
    )
    yield* say(style.green(done(changed)))
  })

/** `foundry instances context`: replaces the instance's context with a JSON file's. */
export const setContext = (options: OneInstance & { readonly file: string }) =>
  Effect.flatMap(readJsonFile(options.file), (context) =>
    change(options, { context }, (instance) => `instance ${instance.id} of agent ${instance.agent} has the context of ${options.file}`))

/** `foundry instances pause` and `resume`. */
export const setPaused = (options: OneInstance & { readonly paused: boolean; readonly reason: Option.Option<string> }) =>
  change(
    options,
    { paused: options.paused, ...givenFields({ reason: options.reason }) },
    (instance) =>
      options.paused
        ? `paused instance ${instance.id} of agent ${instance.agent}: it takes no new runs until it is resumed (runs under way go on)`
        : `resumed instance ${instance.id} of agent ${instance.agent}: it takes runs`
  )

/** `foundry instances archive`: the instance takes no runs again; its runs and conversations stay readable. */
export const archive = (options: OneInstance & { readonly reason: Option.Option<string> }) =>
  Effect.gen(function*() {
    const { read } = yield* api(options)
    const archived = yield* read(
      HttpClientRequest.del(pathOf(options.instance), {
        urlParams: givenFields({ agent: options.agent, reason: options.reason })
      }),
      InstanceView
    )
    yield* say(style.green(`archived instance ${archived.id} of agent ${archived.agent}: it takes no runs again; its runs and conversations stay readable`))
  })
