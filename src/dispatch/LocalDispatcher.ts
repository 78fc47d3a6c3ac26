/**
 * The local Dispatcher: in-process, one serial lane per conversation, a global concurrency limit,
 * every run a fiber in the dispatcher's scope (closed on shutdown).
 */
import { Deferred, Effect, FiberSet, Layer, Option } from "effect"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { newId } from "../durable/ids.js"
import type { RunRecord } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import { runAgent } from "../engine/AgentLoop.js"
import { EventLog } from "../events/EventLog.js"
import { ModelResolver } from "../models/Model.js"
import { spanIdOf, traceIdOf } from "../engine/trace.js"
import { AgentNotFound, ConversationNotFound, Dispatcher, type RunRequest } from "./Dispatcher.js"

/** The local dispatcher with at most `concurrency` runs executing at once. */
export const layer = (concurrency: number) =>
  Layer.scoped(
    Dispatcher,
    Effect.gen(function*() {
      const store = yield* Store
      const events = yield* EventLog
      const current = yield* CurrentApp
      const context = yield* Effect.context<Store | EventLog | ModelResolver>()
      const fibers = yield* FiberSet.make()
      const slots = yield* Effect.makeSemaphore(concurrency)
      const lanes = new Map<string, Deferred.Deferred<void>>()
      const done = new Map<string, Deferred.Deferred<void>>()

      const doneSignal = (runId: string) =>
        Effect.gen(function*() {
          const existing = done.get(runId)
          if (existing !== undefined) return existing
          const created = yield* Deferred.make<void>()
          done.set(runId, created)
          return created
        })

      /** Chains the run behind the conversation's previous run, then executes it in a slot. */
      const schedule = (run: RunRecord) =>
        Effect.gen(function*() {
          const previous = lanes.get(run.conversationId)
          const mine = yield* Deferred.make<void>()
          lanes.set(run.conversationId, mine)
          const finished = yield* doneSignal(run.id)
          const execute = Effect.gen(function*() {
            if (previous !== undefined) yield* Deferred.await(previous)
            const app = yield* current.get
            yield* slots.withPermits(1)(runAgent(app, run))
          }).pipe(
            Effect.provide(context),
            Effect.ensuring(
              Effect.gen(function*() {
                yield* Deferred.succeed(mine, undefined)
                yield* Deferred.succeed(finished, undefined)
                done.delete(run.id)
                if (lanes.get(run.conversationId) === mine) lanes.delete(run.conversationId)
              })
            )
          )
          yield* FiberSet.run(fibers, execute)
        })

      const submit = Effect.fn("Dispatcher.submit")(function*(request: RunRequest) {
        const app = yield* current.get
        if (!app.agents.has(request.agent)) {
          const known = [...app.agents.keys()].join(", ")
          return yield* new AgentNotFound({
            agent: request.agent,
            message: `there is no agent "${request.agent}"; the agents are: ${known || "(none)"}`
          })
        }
        const instanceId = request.instance ?? "default"
        yield* store.ensureInstance(request.agent, instanceId)
        let conversationId: string
        if (request.conversation === undefined) {
          conversationId = newId("conv")
          yield* store.createConversation(conversationId, request.agent, instanceId)
        } else {
          const conversation = yield* store.getConversation(request.conversation)
          if (Option.isNone(conversation)) {
            return yield* new ConversationNotFound({
              conversation: request.conversation,
              message: `there is no conversation "${request.conversation}"; omit "conversation" to start a new one`
            })
          }
          if (conversation.value.agent !== request.agent || conversation.value.instanceId !== instanceId) {
            return yield* new ConversationNotFound({
              conversation: request.conversation,
              message: `conversation "${request.conversation}" belongs to agent "${conversation.value.agent}", ` +
                `instance "${conversation.value.instanceId}", not agent "${request.agent}", instance "${instanceId}"`
            })
          }
          conversationId = conversation.value.id
        }
        const run = yield* store.createRun({
          id: newId("run"),
          agent: request.agent,
          instanceId,
          conversationId,
          input: request.message
        })
        yield* events.emit({
          type: "run.queued",
          traceId: traceIdOf(run.id),
          spanId: spanIdOf(run.id, "run"),
          parentSpanId: null,
          runId: run.id,
          conversationId,
          instanceId,
          agent: request.agent,
          data: { input: request.message }
        })
        yield* schedule(run)
        return run
      })

      const recover = Effect.gen(function*() {
        const runs = yield* store.unfinishedRuns
        yield* Effect.forEach(runs, schedule, { discard: true })
        return runs.length
      })

      const awaitRun = (runId: string) =>
        Effect.gen(function*() {
          const signal = done.get(runId)
          if (signal !== undefined) yield* Deferred.await(signal)
        })

      return Dispatcher.of({ submit, recover, await: awaitRun })
    })
  )

