/**
 * `/v1`'s errors, in OpenAI's shape (`{ error: { message, type, param, code } }`) with the status
 * OpenAI would send, so that OpenAI clients raise their own error classes (`BadRequestError`,
 * `NotFoundError`, ...). The native API's error shapes never reach a `/v1` client.
 */
import { HttpServerResponse } from "@effect/platform"
import { Schema } from "effect"

/** The body of every `/v1` error. */
export const OpenAiErrorBody = Schema.Struct({
  error: Schema.Struct({
    message: Schema.String,
    type: Schema.String,
    param: Schema.NullOr(Schema.String),
    code: Schema.NullOr(Schema.String)
  })
}).annotations({ identifier: "OpenAiError", description: "OpenAI's error shape" })

/** A `/v1` request that ends in an error. */
export class OpenAiError extends Schema.TaggedError<OpenAiError>()("OpenAiError", {
  status: Schema.Number,
  type: Schema.Literal("invalid_request_error", "server_error"),
  message: Schema.String,
  param: Schema.NullOr(Schema.String),
  code: Schema.NullOr(Schema.String),
  /**
   * Whether a client may send the request again: OpenAI's clients retry 409s and 5xx by default,
   * which for a failed run would start the same failing run again.
   */
  retryable: Schema.Boolean
}) {}

/** A request the client has to change: which field (`param`) and how. */
export const invalidRequest = (message: string, param: string | null, code: string | null = null) =>
  new OpenAiError({ status: 400, type: "invalid_request_error", message, param, code, retryable: false })

/** The error as OpenAI's body. */
export const errorBody = (error: OpenAiError): typeof OpenAiErrorBody.Type => ({
  error: { message: error.message, type: error.type, param: error.param, code: error.code }
})

/** The error as a response. */
export const errorResponse = (error: OpenAiError): HttpServerResponse.HttpServerResponse =>
  HttpServerResponse.unsafeJson(errorBody(error), {
    status: error.status,
    headers: { "x-should-retry": error.retryable ? "true" : "false" }
  })
