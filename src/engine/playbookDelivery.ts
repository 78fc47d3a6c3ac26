/**
 * What a playbook does with an event it accepted, whether the event came from a webhook or from a
 * tool's `context.emit`: its `when` decides, its `instance` names the agent's instance (made on
 * first use), and the run starts. Each decision is recorded by the caller, which knows where the
 * event came from and how runs are started there.
 */
import { Effect } from "effect"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import type { PlaybookDefinition } from "../definitions/definePlaybook.js"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import type { Route } from "../router/RouteTable.js"

/** What the playbook did. */
export type PlaybookDecision =
  | { readonly _tag: "Skipped"; readonly reason: string }
  | { readonly _tag: "Dispatched"; readonly agent: string; readonly instanceId: string; readonly runId: string }

/** How the caller records each decision and starts the playbook's run. */
export interface PlaybookHooks<E> {
  readonly skipped: (agent: string, reason: string) => Effect.Effect<unknown, E>
  readonly matched: (agent: string, instanceId: string) => Effect.Effect<unknown, E>
  readonly provisioned: (agent: string, instanceId: string) => Effect.Effect<unknown, E>
  /** Starts the run; its id. */
  readonly start: (agent: string, instanceId: string, message: string) => Effect.Effect<string, E>
  readonly dispatched: (agent: string, instanceId: string, runId: string) => Effect.Effect<unknown, E>
}

/** Delivers `event`, already decoded with the playbook's schema, to the playbook of `route`. */
export const deliverToPlaybook = <E>(app: CompiledApp, route: Route<PlaybookDefinition>, event: unknown, hooks: PlaybookHooks<E>) =>
  Effect.gen(function*() {
    const instances = yield* InstanceStorage
    const agent = app.table.idOf(route.definition.agent) ?? ""
    if (!route.definition.when(event)) {
      const reason = "when(event) is false"
      yield* hooks.skipped(agent, reason)
      return { _tag: "Skipped", reason } satisfies PlaybookDecision
    }
    const instanceId = route.definition.instance(event)
    yield* hooks.matched(agent, instanceId)
    const provisioned = yield* instances.provision(agent, instanceId)
    if (provisioned.created) yield* hooks.provisioned(agent, instanceId)
    const runId = yield* hooks.start(agent, instanceId, route.definition.message(event))
    yield* hooks.dispatched(agent, instanceId, runId)
    return { _tag: "Dispatched", agent, instanceId, runId } satisfies PlaybookDecision
  })
