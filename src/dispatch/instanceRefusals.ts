/**
 * Why an instance takes no run, said to the client with how to go on: a paused or archived
 * instance, or an instance that does not exist yet for an agent whose instances need a context.
 */
import { type Context, Effect, Option } from "effect"
import type { CompiledAgent } from "../compiler/CompiledApp.js"
import { instanceIdForm, isInstanceId } from "../definitions/instanceId.js"
import type { InstanceStorage } from "../durable/InstanceStorage.js"
import { needsContext } from "../instances/instanceContext.js"
import { InstanceUnavailable } from "./Dispatcher.js"

/** Refusals over `instances`. */
export const makeInstanceRefusals = (instances: Context.Tag.Service<InstanceStorage>) => ({
  /** Why a submission's instance took nothing (it is paused or archived), and how to go on. */
  unavailable: (closed: { readonly agent: string; readonly instanceId: string }) =>
    Effect.flatMap(instances.get(closed.agent, closed.instanceId), (found) => {
      const status = Option.isSome(found) && found.value.status === "archived" ? "archived" as const : "paused" as const
      const why = Option.isSome(found) && found.value.statusReason !== null ? ` (${found.value.statusReason})` : ""
      const where = `instance "${closed.instanceId}" of agent "${closed.agent}"`
      return Effect.fail(new InstanceUnavailable({
        agent: closed.agent,
        instance: closed.instanceId,
        reason: status,
        message: status === "archived"
          ? `${where} is archived${why}: it takes no new runs; its history stays readable`
          : `${where} is paused${why}: it takes no new runs until it is resumed (PATCH /api/instances/${closed.instanceId}?agent=${closed.agent} {"paused": false})`
      }))
    }),

  /**
   * An id that no instance can have: every way in (the API, `/v1`, MCP, playbooks, schedules, the
   * CLI) comes through here, and an id refused at one must not be taken at another.
   */
  invalidId: (agent: string, instanceId: string) =>
    isInstanceId(instanceId) ? Effect.void : Effect.fail(
      new InstanceUnavailable({
        agent,
        instance: instanceId,
        reason: "id",
        message: `"${instanceId}" is not an instance id: expected ${instanceIdForm}`
      })
    ),

  /**
   * An agent that declares a `context` cannot have an instance made on first use without one that
   * its schema accepts: the client is told to create the instance first.
   */
  withoutContext: (agent: CompiledAgent, instanceId: string) =>
    Effect.gen(function*() {
      if (!needsContext(agent.definition.context)) return
      if (Option.isSome(yield* instances.get(agent.id, instanceId))) return
      return yield* new InstanceUnavailable({
        agent: agent.id,
        instance: instanceId,
        reason: "context",
        message: `agent "${agent.id}" has no instance "${instanceId}", and its instances need a context (${agent.file} declares one): ` +
          `create it first with POST /api/instances {"agent": "${agent.id}", "id": "${instanceId}", "context": {...}}`
      })
    })
})

/** The refusals of one store's instances. */
export type InstanceRefusals = ReturnType<typeof makeInstanceRefusals>
