/**
 * The runs group's handlers.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import { Dispatcher, RunNotFound } from "../../../dispatch/Dispatcher.js"
import { Store } from "../../../durable/Store.js"
import { EventStorage } from "../../../events/EventStorage.js"
import { EventLog } from "../../../events/EventLog.js"
import { RunJournal } from "../../../journal/RunJournal.js"
import { isSameSubmission } from "../../../journal/submissionFingerprint.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { type CreateRun, IdempotencyKeyReused } from "../api/RunsGroup.js"
import { lastEventId, sseResponse, wantsEventStream } from "./sse.js"
import { orStoreUnavailable } from "./storeUnavailable.js"
import { runView } from "./toView.js"

/** The 404 of run `runId`. */
const runNotFound = (runId: string) => Effect.fail(new RunNotFound({ runId, message: `there is no run "${runId}"` }))

/** What was found, or `missing` when nothing was. */
const orMissing = <E>(missing: () => Effect.Effect<never, E>) => Option.match({ onNone: missing, onSome: <A>(found: A) => Effect.succeed(found) })

const findRun = (runId: string) => Effect.flatMap(Store, (store) => Effect.flatMap(store.getRun(runId), orMissing(() => runNotFound(runId))))

/** Handlers for `/api/runs`. */
export const RunsLive = HttpApiBuilder.group(FoundryApi, "runs", (handlers) =>
  Effect.gen(function*() {
    const dispatcher = yield* Dispatcher
    const store = yield* Store
    const eventStorage = yield* EventStorage
    const events = yield* EventLog
    const journal = yield* RunJournal
    const current = yield* CurrentApp

    /**
     * Submits a run; a key that already started a run for another request is refused, not answered
     * with that run. No span of its own: the submission's (`Dispatcher.submit`) is this request's.
     */
    const create = Effect.fnUntraced(function*(payload: typeof CreateRun.Type, idempotencyKey: string | undefined) {
      const run = yield* dispatcher.submit({ ...payload, idempotencyKey })
      if (idempotencyKey !== undefined) {
        const first = yield* journal.idempotencyFingerprint(run.id)
        // A conversation given without an instance is continued in its own (the run's) instance.
        const instanceId = payload.instance ?? (payload.conversation === undefined ? "default" : run.instanceId)
        const submission = { agent: payload.agent, instanceId, input: payload.message }
        if (!isSameSubmission(first, submission, [payload.conversation ?? null])) {
          return yield* new IdempotencyKeyReused({
            idempotencyKey,
            runId: run.id,
            message: `idempotency-key "${idempotencyKey}" already started run ${run.id} for a different request: ` +
              "use a new key for a new request, or repeat the first request exactly to get its run"
          })
        }
      }
      return { runId: run.id, conversationId: run.conversationId, instanceId: run.instanceId }
    })

    /**
     * The run's events after `after` as server-sent events, live until its end; `missing` when there
     * is no such run. The follower reads the run itself (after subscribing): no run, no stream.
     */
    const eventStream = <E>(
      runId: string,
      after: number | undefined,
      missing: () => Effect.Effect<never, E>,
      headers?: Readonly<Record<string, string>>
    ) =>
      Effect.flatMap(current.get, (app) =>
        sseResponse(
          Effect.flatMap(events.followRun(runId, after), orMissing(missing)),
          app.table.config.server.sseHeartbeat,
          headers
        ))

    return handlers
      .handle("create", ({ headers, payload, request }) =>
        Effect.gen(function*() {
          const created = yield* create(payload, headers["idempotency-key"])
          if (!wantsEventStream(request)) return created
          // Asked for as a stream: the run's events from its start, in place of the 202.
          return yield* eventStream(
            created.runId,
            undefined,
            () => Effect.dieMessage(`run ${created.runId} was not found just after its submission`),
            { location: `/api/runs/${encodeURIComponent(created.runId)}` }
          )
        }).pipe(orStoreUnavailable))
      .handle("list", ({ urlParams }) =>
        Effect.gen(function*() {
          // A cursor that names no run would read as the end of the list.
          if (urlParams.before !== undefined) yield* findRun(urlParams.before)
          const runs = yield* store.listRuns({
            agent: urlParams.agent,
            instanceId: urlParams.instance,
            conversationId: urlParams.conversation,
            parentRunId: urlParams.parent,
            before: urlParams.before,
            status: urlParams.status,
            limit: urlParams.limit ?? 50
          })
          return runs.map(runView)
        }).pipe(orStoreUnavailable))
      .handle("get", ({ path }) => findRun(path.runId).pipe(Effect.map(runView), orStoreUnavailable))
      .handle("cancel", ({ path }) => dispatcher.cancel(path.runId).pipe(Effect.map(runView), orStoreUnavailable))
      .handle("steer", ({ path, payload }) =>
        dispatcher.steer(path.runId, payload.message).pipe(
          Effect.map((run) => ({
            runId: run.id,
            conversationId: run.conversationId,
            instanceId: run.instanceId,
            steeredFrom: path.runId
          })),
          orStoreUnavailable
        ))
      .handleRaw("events", ({ path }) =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          // A client that reconnects (`Last-Event-ID`) gets what came after the last event it had.
          if (wantsEventStream(request)) return yield* eventStream(path.runId, yield* lastEventId(request), () => runNotFound(path.runId))
          yield* findRun(path.runId)
          const stored = yield* eventStorage.list({ runId: path.runId, limit: 100_000 })
          return yield* HttpServerResponse.json(stored).pipe(Effect.orDie)
        }).pipe(orStoreUnavailable))
  }))
