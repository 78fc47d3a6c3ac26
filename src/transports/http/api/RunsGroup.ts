/**
 * `/api/runs`: start a run, read it, list runs, follow its events.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import {
  AgentNotFound,
  ConversationNotFound,
  InstanceUnavailable,
  RunAlreadyEnded,
  RunNotFound
} from "../../../dispatch/Dispatcher.js"
import { ClientIdempotencyKey } from "../../../dispatch/idempotencyKey.js"
import { MessageText } from "../../../dispatch/messageText.js"
import { RunStatus } from "../../../durable/records.js"
import { FoundryEvent } from "../../../events/FoundryEvent.js"
import { instanceIdForm, instanceIdPattern } from "../../../definitions/instanceId.js"
import { RunView } from "./views.js"
import { strictBody } from "./strictBody.js"

/** The body of `POST /api/runs`. Messages follow the field's path in a 400: `agent: expected ...`. */
export const CreateRun = Schema.Struct({
  agent: Schema.String.pipe(Schema.nonEmptyString({ message: () => "expected a non-empty agent id" })),
  message: MessageText,
  instance: Schema.optional(Schema.String.pipe(Schema.pattern(instanceIdPattern, { message: () => `expected ${instanceIdForm}` }))),
  conversation: Schema.optional(Schema.String)
}).annotations(strictBody)

/**
 * An `Idempotency-Key` that already started a run for a different request: the key names one
 * request, and repeating it with another body would silently answer with the first run.
 */
export class IdempotencyKeyReused extends Schema.TaggedError<IdempotencyKeyReused>()("IdempotencyKeyReused", {
  idempotencyKey: Schema.String,
  runId: Schema.String,
  message: Schema.String
}) {}

/** The answer to `POST /api/runs`. */
export const RunCreated = Schema.Struct({
  runId: Schema.String,
  conversationId: Schema.String,
  instanceId: Schema.String
})

/**
 * The other answer to `POST /api/runs`: asked for with `Accept: text/event-stream`, the run's events
 * from its start to its end as server-sent events, in place of the 202 (one request where a client
 * would otherwise follow `/api/runs/:runId/events` after it).
 */
const withRunEventStream = (operation: Record<string, unknown>): Record<string, unknown> => {
  const responses = typeof operation.responses === "object" && operation.responses !== null ? operation.responses : {}
  return {
    ...operation,
    responses: {
      ...responses,
      "200": {
        description: "With `Accept: text/event-stream`: the run's events from its `run.queued` to its end " +
          "(`run.completed`, `run.failed` or `run.cancelled`), a frame each (`id: <seq>`, `event: <type>`, " +
          "`data: <event>`; the answer's text deltas without an id), with a comment every `server.sseHeartbeat` " +
          "while nothing happens; the response " +
          "ends with the run, or waits with it (an approval, a child run). `Location` names the run; a client " +
          "that lost the stream follows `/api/runs/:runId/events` with `Last-Event-ID`.",
        headers: { location: { description: "The run's path, `/api/runs/<runId>`", schema: { type: "string" } } },
        content: { "text/event-stream": { schema: { type: "string" } } }
      }
    }
  }
}

const RunIdPath = Schema.Struct({ runId: Schema.String })

/** The body of `POST /api/runs/:runId/steer`. */
export const SteerRun = Schema.Struct({
  message: MessageText
}).annotations(strictBody)

/** The answer to a steer: the new run, linked to the cancelled one. */
export const RunSteered = Schema.Struct({
  runId: Schema.String,
  conversationId: Schema.String,
  instanceId: Schema.String,
  steeredFrom: Schema.String
})

/** The runs group. */
export class RunsGroup extends HttpApiGroup.make("runs")
  .add(
    HttpApiEndpoint.post("create", "/api/runs")
      .setPayload(CreateRun)
      .setHeaders(Schema.Struct({ "idempotency-key": Schema.optional(ClientIdempotencyKey) }))
      .addSuccess(RunCreated, { status: 202 })
      .addError(AgentNotFound, { status: 404 })
      .addError(ConversationNotFound, { status: 404 })
      .addError(InstanceUnavailable, { status: 409 })
      .addError(IdempotencyKeyReused, { status: 422 })
      .annotate(OpenApi.Transform, withRunEventStream)
  )
  .add(
    HttpApiEndpoint.get("list", "/api/runs")
      .setUrlParams(Schema.Struct({
        agent: Schema.optional(Schema.String),
        /** Runs of instances with this id (of `agent`, when given). */
        instance: Schema.optional(Schema.String),
        /** The runs of one conversation. */
        conversation: Schema.optional(Schema.String),
        /** The runs one run started: its subagents' and those its tools spawned. */
        parent: Schema.optional(Schema.String),
        /** The next page: the runs listed after this run id (the last of the page before), newest first. */
        before: Schema.optional(Schema.String),
        status: Schema.optional(RunStatus),
        limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000)))
      }))
      .addSuccess(Schema.Array(RunView))
      .addError(RunNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.get("get", "/api/runs/:runId")
      .setPath(RunIdPath)
      .addSuccess(RunView)
      .addError(RunNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.post("cancel", "/api/runs/:runId/cancel")
      .setPath(RunIdPath)
      .addSuccess(RunView)
      .addError(RunNotFound, { status: 404 })
      .addError(RunAlreadyEnded, { status: 409 })
  )
  .add(
    HttpApiEndpoint.post("steer", "/api/runs/:runId/steer")
      .setPath(RunIdPath)
      .setPayload(SteerRun)
      .addSuccess(RunSteered, { status: 202 })
      .addError(RunNotFound, { status: 404 })
      .addError(RunAlreadyEnded, { status: 409 })
      .addError(InstanceUnavailable, { status: 409 })
  )
  .add(
    HttpApiEndpoint.get("events", "/api/runs/:runId/events")
      .setPath(RunIdPath)
      .addSuccess(Schema.Array(FoundryEvent))
      .addError(RunNotFound, { status: 404 })
  )
{}
