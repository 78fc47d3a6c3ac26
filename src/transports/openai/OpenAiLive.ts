/**
 * The handlers of `/v1`. A chat completion is one durable run: submitted through the dispatcher,
 * followed through the event log, answered from what the run wrote (its text, its usage). The
 * handlers answer every refusal themselves, in OpenAI's error shape, and never fail: nothing of
 * the native API's error handling reaches a `/v1` client.
 *
 * A run that stops to wait for a person's approval answers with a completion that says so (which
 * approval, how to decide it): an OpenAI client has no way to wait for a person, and the run goes
 * on by itself once decided, its answer landing in the conversation.
 */
import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Clock, Effect, Option, Schedule, Schema, Stream } from "effect"
import { CurrentApp } from "../../compiler/CurrentApp.js"
import { formatIssues, readableIssues } from "../../definitions/readableIssues.js"
import { Dispatcher } from "../../dispatch/Dispatcher.js"
import { InstanceStorage } from "../../durable/InstanceStorage.js"
import type { RunRecord } from "../../durable/records.js"
import { Store } from "../../durable/Store.js"
import type { StoreError } from "../../durable/StoreError.js"
import { EventLog } from "../../events/EventLog.js"
import { RunJournal } from "../../journal/RunJournal.js"
import { isSameSubmission } from "../../journal/submissionFingerprint.js"
import { FoundryApi } from "../http/api/FoundryApi.js"
import { heartbeatFrame } from "../http/handlers/sse.js"
import { logStoreError } from "../http/handlers/storeUnavailable.js"
import { chunks, completion, type CompletionIdentity, type ModelList, usageOf } from "./ChatCompletion.js"
import { ChatCompletionRequest } from "./ChatCompletionRequest.js"
import { type ChatTurn, chatTurn, conversationHeader } from "./chatTurn.js"
import { errorBody, errorResponse, invalidRequest, OpenAiError } from "./OpenAiError.js"
import { type RunEnd, runAnswer, wholeAnswer } from "./runAnswer.js"
import { ApprovalStorage } from "../../durable/ApprovalStorage.js"
import { ownKeyProblem } from "../../dispatch/idempotencyKey.js"

const storeUnavailable = new OpenAiError({
  status: 503,
  type: "server_error",
  message: "the store could not be reached or used; nothing is wrong with the request, which can be sent again",
  param: null,
  code: "store_unavailable",
  retryable: true
})

/** A store failure logged for the operator and told the client as a 503. */
const orUnavailable = (error: StoreError) => Effect.as(logStoreError(error), storeUnavailable)

/** No model of that id, as OpenAI says it (its clients raise `NotFoundError`); `why` follows the id. */
const modelNotFound = (model: string, why: string) =>
  new OpenAiError({
    status: 404,
    type: "invalid_request_error",
    message: `The model "${model}" does not exist${why} (GET /v1/models lists the models)`,
    param: "model",
    code: "model_not_found",
    retryable: false
  })

/** A run that failed or was cancelled, as the client's error; its error text is the run's readable one. */
const runError = (run: RunRecord, end: RunEnd): OpenAiError =>
  new OpenAiError({
    status: 500,
    type: "server_error",
    message: end._tag === "Cancelled"
      ? `run ${run.id} was cancelled before it answered`
      : `run ${run.id} failed: ${end._tag === "Failed" ? end.error : run.error ?? "no error was recorded"}`,
    param: null,
    code: end._tag === "Cancelled" ? "run_cancelled" : "run_failed",
    retryable: false
  })

const encoder = new TextEncoder()
const dataFrame = (value: unknown): Uint8Array => encoder.encode(`data: ${JSON.stringify(value)}\n\n`)
const doneFrame = encoder.encode("data: [DONE]\n\n")

/**
 * The body, decoded, or the OpenAI error that says what is wrong. (A body over the server's limit
 * never gets here: the edge answers it 413.)
 */
const readRequest = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const text = yield* request.text.pipe(Effect.mapError(() => invalidRequest("the body could not be read: send the request as JSON", null)))
  const json = yield* Effect.try({
    try: (): unknown => JSON.parse(text),
    catch: () => invalidRequest("the body is not valid JSON: send a chat completion request as JSON (content-type: application/json)", null, "invalid_json")
  })
  return yield* Schema.decodeUnknown(ChatCompletionRequest)(json, { errors: "all" }).pipe(Effect.mapError((error) => {
    const issues = readableIssues(error, { root: "(body)" })
    return invalidRequest(formatIssues(issues), issues[0]?.path ?? null)
  }))
}).pipe(Effect.withSpan("openai.readRequest"))

/** Handlers for `/v1`. */
export const OpenAiLive = HttpApiBuilder.group(FoundryApi, "openai", (handlers) =>
  Effect.gen(function*() {
    const dispatcher = yield* Dispatcher
    const store = yield* Store
    const approvals = yield* ApprovalStorage
    const instances = yield* InstanceStorage
    const current = yield* CurrentApp
    const events = yield* EventLog
    const journal = yield* RunJournal
    // Agents have no creation time of their own: the models of this server date from its start.
    const started = Math.floor((yield* Clock.currentTimeMillis) / 1000)

    // An archived instance takes no runs: it is no model (a paused one is, and says why it waits).
    const modelList = Effect.gen(function*() {
      const app = yield* current.get
      const agents = [...app.agents.keys()].sort()
      const known = new Set(agents)
      const all = yield* instances.list
      const list: ModelList = {
        object: "list",
        data: [
          ...agents.map((id) => ({ id, object: "model" as const, created: started, owned_by: "foundry" as const })),
          ...all.filter((instance) => known.has(instance.agent) && instance.status !== "archived").map((instance) => ({
            id: `${instance.agent}@${instance.id}`,
            object: "model" as const,
            created: Math.floor(instance.createdAt / 1000),
            owned_by: "foundry" as const
          }))
        ]
      }
      return list
    })
    const unavailable = <R>(answer: Effect.Effect<HttpServerResponse.HttpServerResponse, StoreError, R>) =>
      Effect.catchTag(answer, "StoreError", (error) => Effect.map(orUnavailable(error), errorResponse))
    const models = modelList.pipe(Effect.map((list) => HttpServerResponse.unsafeJson(list)), unavailable)
    const model = (id: string) =>
      modelList.pipe(
        Effect.map((list) => {
          const found = list.data.find((entry) => entry.id === id)
          return found !== undefined ? HttpServerResponse.unsafeJson(found) : errorResponse(modelNotFound(id, ""))
        }),
        unavailable
      )

    /**
     * A key that already started a run for another request is refused, not answered with that run.
     * The first request may have made its conversation or continued it: either is this request. A
     * stateless request's earlier messages are part of it: another history is another request.
     */
    const sameRequest = (idempotencyKey: string, run: RunRecord, turn: ChatTurn) =>
      Effect.gen(function*() {
        const first = yield* journal.idempotencyFingerprint(run.id)
        const submission = { agent: turn.agent, instanceId: turn.instance, input: turn.message, history: turn.history }
        if (isSameSubmission(first, submission, [null, run.conversationId])) return
        return yield* invalidRequest(
          `idempotency-key "${idempotencyKey}" already started run ${run.id} for a different request: ` +
            "use a new key for a new request, or repeat the first request exactly to get its answer",
          "idempotency-key",
          "idempotency_key_reused"
        )
      })

    /** Submits the request's run; the run, the request as it was read, and the completion's identity. */
    const submit = Effect.fn("openai.submit")(function*(header: string | undefined, idempotencyKey: string | undefined) {
      const body = yield* readRequest
      const keyProblem = idempotencyKey === undefined ? undefined : ownKeyProblem(idempotencyKey)
      if (keyProblem !== undefined) return yield* invalidRequest(`idempotency-key: ${keyProblem}`, "idempotency-key")
      const turn = yield* chatTurn(body, header)
      const run = yield* dispatcher.submit({
        agent: turn.agent,
        instance: turn.instance,
        message: turn.message,
        conversation: turn.conversation,
        createConversation: true,
        history: turn.history,
        idempotencyKey
      }).pipe(
        // Two first requests of one new conversation at once: the second one's insert of the
        // conversation fails on the first one's; asked again, it continues that conversation.
        Effect.retry({ times: 1, while: (error) => error._tag === "StoreError" && turn.conversation !== undefined }),
        Effect.catchTags({
          AgentNotFound: (error) =>
            Effect.fail(modelNotFound(body.model, `: ${error.message}`)),
          ConversationNotFound: (error) =>
            Effect.fail(invalidRequest(error.message, conversationHeader, "conversation_mismatch")),
          // OpenAI's clients retry a 409; the instance is closed until a person acts, so it is a 403.
          InstanceUnavailable: (error) =>
            Effect.fail(
              new OpenAiError({
                status: error.reason === "context" ? 404 : 403,
                type: "invalid_request_error",
                message: error.message,
                param: "model",
                code: error.reason === "context" ? "model_not_found" : `instance_${error.reason}`,
                retryable: false
              })
            ),
          StoreError: (error) => Effect.flatMap(orUnavailable(error), Effect.fail)
        })
      )
      if (idempotencyKey !== undefined) {
        yield* sameRequest(idempotencyKey, run, turn).pipe(Effect.catchTag("StoreError", (error) => Effect.flatMap(orUnavailable(error), Effect.fail)))
      }
      const identity: CompletionIdentity = { id: `chatcmpl-${run.id}`, created: Math.floor(run.createdAt / 1000), model: body.model }
      return { run, body, identity }
    })

    /** The run's record once its answer has ended. */
    const ended = (runId: string) =>
      store.getRun(runId).pipe(Effect.flatMap(Option.match({
        onNone: () => Effect.dieMessage(`run ${runId} vanished from the store while it was followed`),
        onSome: Effect.succeed
      })))

    const answerWhole = Effect.fn("openai.answerWhole")(function*(run: RunRecord, identity: CompletionIdentity) {
      const answer = yield* wholeAnswer(run.id, { events, store, approvals })
      const record = yield* ended(run.id)
      if (answer.end._tag === "Failed" || answer.end._tag === "Cancelled") return errorResponse(runError(record, answer.end))
      return HttpServerResponse.unsafeJson(completion(identity, answer.text, usageOf(record)))
    })

    /** The chunks of the answer as SSE frames: the role first, the text as it is written, then how it ended. */
    const answerStream = (run: RunRecord, identity: CompletionIdentity, withUsage: boolean, heartbeat: Stream.Stream<Uint8Array>) => {
      const parts = chunks(identity, withUsage)
      const closing = (end: RunEnd) =>
        Effect.map(ended(run.id), (record): ReadonlyArray<Uint8Array> =>
          end._tag === "Failed" || end._tag === "Cancelled"
            ? [dataFrame(errorBody(runError(record, end)))]
            : [dataFrame(parts.stop), ...(withUsage ? [dataFrame(parts.usage(usageOf(record)))] : []), doneFrame])
      const answer = runAnswer(run.id, { events, store, approvals }).pipe(
        Stream.mapEffect((piece) => piece._tag === "Text" ? Effect.succeed([dataFrame(parts.text(piece.text))]) : closing(piece.end)),
        Stream.flattenIterables,
        // The status line is sent: a store failure can only be told in the stream.
        Stream.catchAll((error) => Stream.fromEffect(Effect.map(orUnavailable(error), (unavailable) => dataFrame(errorBody(unavailable)))))
      )
      return Stream.concat(Stream.make(dataFrame(parts.start)), Stream.merge(answer, heartbeat, { haltStrategy: "left" }))
    }

    return handlers
      .handleRaw("models", () => models)
      .handleRaw("model", ({ path }) => model(path.model))
      .handleRaw("chatCompletions", ({ headers }) =>
        Effect.gen(function*() {
          const { body, identity, run } = yield* submit(headers[conversationHeader], headers["idempotency-key"])
          const replyHeaders = { [conversationHeader]: run.conversationId, "x-foundry-run": run.id }
          if (body.stream !== true) {
            const response = yield* answerWhole(run, identity).pipe(Effect.catchTag("StoreError", (error) => Effect.map(orUnavailable(error), errorResponse)))
            return HttpServerResponse.setHeaders(response, replyHeaders)
          }
          const every = (yield* current.get).table.config.server.sseHeartbeat
          const heartbeat = Stream.fromSchedule(Schedule.spaced(every)).pipe(Stream.map(() => heartbeatFrame))
          return HttpServerResponse.stream(answerStream(run, identity, body.stream_options?.include_usage === true, heartbeat), {
            contentType: "text/event-stream",
            headers: { ...replyHeaders, "cache-control": "no-cache" }
          })
        }).pipe(
          Effect.catchTag("OpenAiError", (error) => Effect.succeed(errorResponse(error)))
        ))
  }))
