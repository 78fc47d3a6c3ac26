/**
 * What a playbook does with an event it accepted, whether the event came from a webhook or from a
 * tool's `context.emit`: its `when` decides, its `instance` names the agent's instances that take
 * it (one by id, made on first use; one by provisioning key, picked or created; or every instance
 * that has a capability installed), and a run starts in each. Each decision is recorded by the
 * caller, which knows where the event came from and how runs are started there.
 */
import { Effect, Either, Option, Schema } from "effect"
import { capabilityKey, type CompiledApp } from "../compiler/CompiledApp.js"
import type { InstanceByKey, InstallableCapability, PlaybookDefinition } from "../definitions/definePlaybook.js"
import { instanceIdForm, isInstanceId } from "../definitions/instanceId.js"
import { kindOf } from "../definitions/RouteKind.js"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import { needsContext } from "../instances/instanceContext.js"
import { Instances } from "../instances/Instances.js"
import type { Route } from "../router/RouteTable.js"

/**
 * A playbook's own code threw, or gave what it may not (a message that is no text, an instance id
 * that is no string): the playbook took no part of the event, and started no run of it. `call` is
 * the function that failed (`when(event)`); `message` names the playbook's file and what it did,
 * which may quote the event, so it goes to the log and the event log, never to a sender.
 */
export class PlaybookFailed extends Schema.TaggedError<PlaybookFailed>()("PlaybookFailed", {
  playbook: Schema.String,
  call: Schema.String,
  message: Schema.String
}) {}

const shown = (value: unknown): string => {
  try {
    return value === undefined ? "undefined" : JSON.stringify(value)?.slice(0, 80) ?? typeof value
  } catch {
    return typeof value
  }
}

/**
 * `call` (the playbook's `what`, a function of the event) run, its answer checked to be `expected`;
 * a throw or another answer is the playbook's failure, saying which function and what it gave.
 */
export const playbookCall = <A>(
  route: Pick<Route<PlaybookDefinition>, "id" | "file">,
  what: string,
  call: () => unknown,
  check: (value: unknown) => value is A,
  expected: string
): Effect.Effect<A, PlaybookFailed> =>
  Effect.suspend(() => {
    const failed = (problem: string) =>
      Effect.fail(new PlaybookFailed({ playbook: route.id, call: what, message: `${route.file}: ${what} ${problem}: fix the playbook` }))
    let value: unknown
    try {
      value = call()
    } catch (error) {
      return failed(`threw ${error instanceof Error ? `${error.name}: ${error.message}` : shown(error)}`)
    }
    return check(value) ? Effect.succeed(value) : failed(`gave ${shown(value)}, not ${expected}`)
  })

const isBoolean = (value: unknown): value is boolean => typeof value === "boolean"
const isString = (value: unknown): value is string => typeof value === "string"
const isText = (value: unknown): value is string => typeof value === "string" && value.trim() !== ""
const isSeed = (value: unknown): value is { readonly context?: unknown; readonly installations?: never } => typeof value === "object" && value !== null

/** A run the playbook started. */
export interface PlaybookRun {
  readonly agent: string
  readonly instanceId: string
  readonly runId: string
}

/** What starting a run in an instance came to: the run, or why the instance took none. */
export type Started =
  | { readonly _tag: "Started"; readonly runId: string }
  | { readonly _tag: "Unavailable"; readonly reason: string }

/** How the caller records each decision and starts the playbook's runs. */
export interface PlaybookHooks<E> {
  /** Nothing went to `instanceId`, or to any instance when it is left out, because of `reason`. */
  readonly skipped: (agent: string, reason: string, instanceId?: string) => Effect.Effect<unknown, E>
  readonly matched: (agent: string, instanceId: string) => Effect.Effect<unknown, E>
  readonly provisioned: (agent: string, instanceId: string) => Effect.Effect<unknown, E>
  /** Starts the run; an instance that takes no runs (paused, archived) is `Unavailable`. */
  readonly start: (agent: string, instanceId: string, message: string) => Effect.Effect<Started, E>
  readonly dispatched: (agent: string, instanceId: string, runId: string) => Effect.Effect<unknown, E>
}

/** Where the event goes: instances to run in (`provisioned`: made for it), or why none. */
type Targets =
  | { readonly _tag: "Instances"; readonly instances: ReadonlyArray<{ readonly id: string; readonly provisioned: boolean }> }
  | { readonly _tag: "Skipped"; readonly reason: string }

const skip = (reason: string): Targets => ({ _tag: "Skipped", reason })

const some = (ids: ReadonlyArray<string>, provisioned = false): Targets => ({
  _tag: "Instances",
  instances: ids.map((id) => ({ id, provisioned }))
})

/** The playbook's `when(event)`: whether it takes `event`, already decoded with its schema. */
export const playbookWhen = (route: Route<PlaybookDefinition>, event: unknown) =>
  playbookCall(route, "when(event)", () => route.definition.when(event), isBoolean, "a boolean")

/** The reason a playbook whose `when(event)` is false gives for skipping the event. */
export const whenFalse = "when(event) is false"

/** Delivers `event`, already decoded with the playbook's schema, to the playbook of `route`; the runs it started. */
export const deliverToPlaybook = <E>(app: CompiledApp, route: Route<PlaybookDefinition>, event: unknown, hooks: PlaybookHooks<E>) =>
  Effect.flatMap(playbookWhen(route, event), (when) =>
    when
      ? dispatchToPlaybook(app, route, event, hooks)
      : Effect.as(hooks.skipped(app.table.idOf(route.definition.agent) ?? "", whenFalse), []))

/**
 * Delivers `event` to the playbook of `route` whose `when(event)` was true (the webhook asks every
 * playbook's `when` before it asks their `eventId`s): its instances, its message, its runs.
 */
export const dispatchToPlaybook = <E>(app: CompiledApp, route: Route<PlaybookDefinition>, event: unknown, hooks: PlaybookHooks<E>) =>
  Effect.gen(function*() {
    const agent = app.table.idOf(route.definition.agent) ?? ""
    const runs: Array<PlaybookRun> = []
    const targets = yield* targetsOf(app, route, agent, event)
    if (targets._tag === "Skipped") {
      yield* hooks.skipped(agent, targets.reason)
      return runs
    }
    const message = yield* playbookCall(route, "message(event)", () => route.definition.message(event), isText, "the message's text")
    for (const { id: instanceId, provisioned } of targets.instances) {
      yield* hooks.matched(agent, instanceId)
      if (provisioned) yield* hooks.provisioned(agent, instanceId)
      const started = yield* hooks.start(agent, instanceId, message)
      if (started._tag === "Unavailable") {
        yield* hooks.skipped(agent, started.reason, instanceId)
        continue
      }
      yield* hooks.dispatched(agent, instanceId, started.runId)
      runs.push({ agent, instanceId, runId: started.runId })
    }
    return runs
  })

/** The instances the playbook's `instance` names for `event`, made when it says so. */
const targetsOf = (app: CompiledApp, route: Route<PlaybookDefinition>, agent: string, event: unknown) => {
  const target = route.definition.instance
  if (typeof target === "string") return byId(app, agent, target)
  if (typeof target === "function") {
    return Effect.flatMap(playbookCall(route, "instance(event)", () => target(event), isString, "an instance id"), (id) => byId(app, agent, id))
  }
  if ("installed" in target) return withInstalled(app, agent, target.installed)
  return byKey(route, agent, target, event)
}

/** The instance `id`, made on first use (with an empty context, so only where its agent accepts one). */
const byId = (app: CompiledApp, agent: string, id: string) =>
  Effect.gen(function*() {
    // Before anything is made under it: an id no client could have used.
    if (!isInstanceId(id)) return skip(`instance "${id}" is not an instance id: instance(event) must give ${instanceIdForm}`)
    const storage = yield* InstanceStorage
    if (needsContext(app.agents.get(agent)?.definition.context) && Option.isNone(yield* storage.get(agent, id))) {
      return skip(
        `instance "${id}" of agent "${agent}" does not exist, and its instances need a context: ` +
          `create it first (POST /api/instances), or give the playbook instance: { key: (event) => "...", create: (event) => ({ context }) }`
      )
    }
    const provisioned = yield* storage.provision(agent, id)
    return some([id], provisioned.created)
  })

/** The instance whose provisioning key is `key(event)`; created by `create(event)` when there is none. */
const byKey = (route: Route<PlaybookDefinition>, agent: string, target: InstanceByKey<unknown, unknown>, event: unknown) =>
  Effect.gen(function*() {
    const key = yield* playbookCall(route, "instance.key(event)", () => target.key(event), isString, "a provisioning key")
    const found = yield* Effect.flatMap(InstanceStorage, (storage) => storage.findByKey(agent, key))
    if (Option.isSome(found)) return some([found.value.id])
    if (target.create === undefined) {
      return skip(
        `instance key "${key}" matches no instance of agent "${agent}": create one with POST /api/instances ` +
          `{"agent": "${agent}", "provisioningKey": "${key}"}, or add create: (event) => ({ context }) to the playbook's instance`
      )
    }
    const create = target.create
    const seed = yield* playbookCall(route, "instance.create(event)", () => create(event), isSeed, "{ context, installations }")
    const schema = route.definition.agent.context
    // The context is given as the agent's schema types it; it is stored encoded. A value the schema
    // cannot encode goes as it is, for `create` to name its wrong fields.
    const context = seed.context === undefined || schema === undefined
      ? seed.context
      : Either.getOrElse(Schema.encodeUnknownEither(schema)(seed.context), () => seed.context)
    const instances = yield* Instances
    const made = yield* instances.create({
      agent,
      provisioningKey: key,
      context,
      installations: seed.installations,
      by: `playbook:${route.id}`
    }).pipe(
      Effect.map((made) => Either.right(made)),
      Effect.catchTags({
        InvalidInstance: (error) =>
          Effect.succeed(Either.left(
            `create(event) gave an invalid instance for key "${key}": ${error.issues.map((i) => `${i.path}: ${i.message}`).join("; ")}`
          )),
        // Not expected from a create by key (it answers the instance that has the key), but said if they come.
        InstanceConflict: (error) => Effect.succeed(Either.left(error.message)),
        InstanceNotFound: (error) => Effect.succeed(Either.left(error.message)),
        AgentNotFound: (error) => Effect.succeed(Either.left(error.message))
      })
    )
    if (Either.isLeft(made)) return skip(made.left)
    return some([made.right.instance.id], made.right.created)
  })

/** Every active instance of `agent` that has `capability` installed. */
const withInstalled = (app: CompiledApp, agent: string, capability: InstallableCapability) =>
  Effect.gen(function*() {
    const kind = kindOf(capability)
    const id = app.table.idOf(capability)
    if ((kind !== "tool" && kind !== "mcp") || id === undefined || !app.capabilities.has(capabilityKey(kind, id))) {
      return skip(`installed names ${id === undefined ? "a value" : `"${id}"`}, which is not an installable capability of this build`)
    }
    const found = yield* Effect.flatMap(InstanceStorage, (storage) => storage.withInstallation(agent, kind, id))
    return found.length > 0 ? some(found.map((instance) => instance.id)) : skip(
      `installed ${kind} "${id}" is on no active instance of agent "${agent}": install it with ` +
        `foundry install <instance> ${kind}:${id} (or POST /api/instances/<instance>/installations?agent=${agent})`
    )
  })
