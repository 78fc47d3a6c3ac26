/**
 * Runs a run starts: `context.spawn` (another agent, not waited for), `context.emit` (the playbooks
 * listening for an internal event) and subagent calls (a child run whose answer is the call's
 * result; the parent suspends until the child has ended). Each child run hangs under the span of
 * the call that started it.
 */
import { Effect, Option, Predicate, Schema } from "effect"
import { type CompiledApp, playbooksLeftOut } from "../compiler/CompiledApp.js"
import type { AgentDefinition } from "../definitions/defineAgent.js"
import { SpawnFailed } from "../definitions/defineTool.js"
import { finalStatuses, type RunRecord } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import { spanIdOf, traceOfRun } from "../journal/trace.js"
import type { ToolCall } from "../models/Model.js"
import { failedOutcome, type ToolOutcome } from "./executeTool.js"
import { deliverToPlaybook, type Started } from "./playbookDelivery.js"
import { RunStarter } from "./RunStarter.js"
import type { StepBuffer } from "./StepBuffer.js"

/** A tool call's `context.spawn`: a run of another agent, started without waiting, under the call's span. */
export const spawnFrom = (app: CompiledApp, run: RunRecord, starter: RunStarter["Type"], callId: string) =>
(target: AgentDefinition, message: string, options?: { readonly instance?: string }) => {
  const id = app.table.idOf(target)
  return id === undefined
    ? Effect.fail(new SpawnFailed({ message: "spawn: that agent is not a route of this project" }))
    : starter.start({
      agent: id,
      message,
      instance: options?.instance ?? "default",
      parentRunId: run.id,
      traceId: traceOfRun(run),
      parentSpanId: spanIdOf(run.id, `tool:${callId}`)
    }).pipe(
      Effect.map((child) => ({ runId: child.id })),
      Effect.mapError((error) => new SpawnFailed({ message: `spawn: ${error.message}` }))
    )
}

/**
 * A tool call's `context.emit`: the playbooks listening for the event start their runs, under the
 * call's span. An instance that takes no runs (paused, archived) is skipped, saying why.
 */
export const emitFrom = (app: CompiledApp, run: RunRecord, starter: RunStarter["Type"], step: StepBuffer, callId: string) =>
(name: string, payload: unknown) =>
  Effect.gen(function*() {
    // A playbook left out (`foundry dev` while its file does not build) may listen for it: not
    // delivered to some now and to that one never, the event is refused, and the tool says so.
    const leftOut = playbooksLeftOut(app)
    if (leftOut !== undefined) {
      return yield* new SpawnFailed({ message: `not delivered: ${leftOut}, which may listen for it; emit it again once they build` })
    }
    const runs: Array<string> = []
    const parentStep = `tool:${callId}`
    for (const route of app.table.playbooks) {
      const on = route.definition.on
      if (on._tag !== "Event" || on.name !== name) continue
      const span = `emit:${callId}:${route.id}`
      const decoded = yield* Schema.decodeUnknown(on.schema)(payload).pipe(Effect.either)
      if (decoded._tag === "Left") {
        step.emit("playbook.skipped", span, {
          event: name,
          playbook: route.id,
          reason: "the event does not match its schema",
          agent: app.table.idOf(route.definition.agent) ?? ""
        }, parentStep)
        continue
      }
      const started = yield* deliverToPlaybook(app, route, decoded.right, {
        // The envelope is the emitting run's (its instance emitted the event): the data names the
        // playbook's agent, and the instance that took no run when the skip is about one.
        skipped: (agent, reason, instanceId) =>
          Effect.sync(() =>
            step.emit(
              "playbook.skipped",
              span,
              { event: name, playbook: route.id, reason, agent, ...(instanceId === undefined ? {} : { instanceId }) },
              parentStep
            )
          ),
        matched: (agent, instanceId) => Effect.sync(() => step.emit("playbook.matched", span, { event: name, playbook: route.id, agent, instanceId }, parentStep)),
        provisioned: (agent, instanceId) => Effect.sync(() => step.emit("instance.provisioned", span, { playbook: route.id, agent, instanceId }, parentStep)),
        start: (agent, instanceId, message) =>
          starter.start({ agent, message, instance: instanceId, parentRunId: run.id, traceId: traceOfRun(run), parentSpanId: spanIdOf(run.id, span) })
            .pipe(
              Effect.map((child): Started => ({ _tag: "Started", runId: child.id })),
              Effect.catchIf(
                Predicate.isTagged("InstanceUnavailable"),
                (unavailable) => Effect.succeed<Started>({ _tag: "Unavailable", reason: unavailable.message })
              )
            ),
        dispatched: (_agent, _instanceId, runId) => Effect.sync(() => step.emit("playbook.dispatched", span, { event: name, playbook: route.id, runId }, parentStep))
      }).pipe(
        // One playbook's broken code takes the event from it alone: the others still get it.
        Effect.catchTag("PlaybookFailed", (failed) =>
          Effect.as(
            Effect.zipRight(
              Effect.logWarning(`emit ${name}: ${failed.message}`),
              Effect.sync(() =>
                step.emit("playbook.failed", span, {
                  event: name,
                  playbook: route.id,
                  agent: app.table.idOf(route.definition.agent) ?? "",
                  call: failed.call,
                  error: failed.message
                }, parentStep)
              )
            ),
            []
          ))
      )
      runs.push(...started.map((child) => child.runId))
    }
    return { runs }
  }).pipe(Effect.mapError((error) => new SpawnFailed({ message: `emit ${name}: ${error.message}` })))

/**
 * A subagent call: its child run's answer once the child has ended, or a suspension until then.
 * The suspension is written before the child's status is read again, so a child that ends in
 * between is seen here (and the run goes on) rather than lost.
 */
export const awaitChild = Effect.fnUntraced(function*(
  run: RunRecord,
  step: StepBuffer,
  call: ToolCall,
  subagent: string,
  input: unknown,
  rawInput: unknown,
  hide: (value: unknown) => unknown
) {
  const store = yield* Store
  const starter = yield* RunStarter
  const message = typeof input === "object" && input !== null && "message" in input ? String(input.message) : ""
  const existing = yield* store.findChildRun(run.id, call.id)
  let child: RunRecord
  if (Option.isSome(existing)) {
    child = existing.value
  } else {
    yield* step.commit()
    const started = yield* starter.start({
      agent: subagent,
      message,
      instance: run.instanceId,
      parentRunId: run.id,
      parentToolCallId: call.id,
      traceId: traceOfRun(run),
      parentSpanId: spanIdOf(run.id, `tool:${call.id}`)
    }).pipe(Effect.either)
    if (started._tag === "Left") return failedOutcome(rawInput, `could not start ${subagent}: ${started.left.message}`)
    step.emit("tool.call.started", `tool:${call.id}`, {
      toolCallId: call.id,
      tool: call.name,
      input: hide(rawInput),
      childRunId: started.right.id
    })
    child = started.right
  }
  const outcomeOf = (ended: RunRecord): ToolOutcome =>
    ended.status === "completed"
      ? { _tag: "Succeeded", input: rawInput, output: { runId: ended.id, output: ended.output ?? "" }, content: ended.output ?? "" }
      : failedOutcome(rawInput, `the ${subagent} run ${ended.status}${ended.error === null ? "" : `: ${ended.error}`}`)
  // Woken by its child's end: the answer is there, no second suspension.
  if (finalStatuses.has(child.status)) return outcomeOf(child)
  step.emit("run.suspended", "run", { reason: "child", childRunId: child.id, tool: call.name })
  yield* step.commit({ status: { status: "suspended" } })
  const latest = yield* store.getRun(child.id)
  if (Option.isNone(latest) || !finalStatuses.has(latest.value.status)) return "suspended" as const
  // The child ended while the suspension was written, when nobody could wake this run.
  step.emit("run.resumed", "run", { reason: "child", childRunId: child.id })
  yield* step.commit({ status: { status: "running" } })
  return outcomeOf(latest.value)
})
