/** The OpenAI adapter's failures, from the SDK's errors and a stream's error events, as `ModelError`s. */
import type OpenAI from "openai"
import { ModelError } from "./Model.js"
import { askedWait } from "./rateLimitWait.js"

/**
 * 429 and 5xx answers, connection failures and timeouts (also a connection dropped mid-stream),
 * and error events mid-stream whose type or code says the server failed or is busy, are
 * transient; other 4xx answers, other error events and anything unexpected are permanent.
 * Messages stay one readable line, never a stack trace.
 */
export const classifyError = (model: string, sdk: typeof OpenAI) => (error: unknown): ModelError => {
  // Connection errors are `APIError`s without a status, so they must be checked first.
  if (error instanceof sdk.APIConnectionError) {
    return new ModelError({
      model,
      kind: "transient",
      message: `OpenAI request failed: ${error.message}`
    })
  }
  if (error instanceof sdk.APIError) {
    const detail = errorBodyMessage(error.error) ?? error.message
    if (error.status === undefined) {
      // An error event in the middle of the stream: no status to classify by, only its type and code.
      return new ModelError({
        model,
        kind: isTransientErrorEvent(error.error) ? "transient" : "permanent",
        message: `OpenAI stream failed: ${detail}`
      })
    }
    const code = errorCode(error)
    const asked = askedWait(error.headers, error.status === 429 ? { type: errorType(error.error), message: detail } : undefined)
    return new ModelError({
      model,
      // A 429 for an exhausted quota (no credit left) does not pass by waiting: retrying it only delays the failure.
      kind: (error.status === 429 && code !== "insufficient_quota") || error.status >= 500 ? "transient" : "permanent",
      status: error.status,
      message: `OpenAI returned ${error.status}: ${detail}`,
      ...(code === undefined ? {} : { code }),
      ...(asked === undefined ? {} : { retryAfter: asked.millis, retryAfterFrom: asked.from })
    })
  }
  const networkCause = findNetworkCause(error)
  if (networkCause !== undefined) {
    // The SDK only wraps failures before the response; a socket dropped mid-stream surfaces
    // as undici's bare `TypeError: terminated`, with the network error as its cause.
    return new ModelError({
      model,
      kind: "transient",
      message: `OpenAI connection lost: ${describe(error)} (${networkCause})`
    })
  }
  return new ModelError({ model, kind: "permanent", message: `OpenAI request failed: ${describe(error)}` })
}

/** The error's code as text, else its type (llama.cpp sends the HTTP status as `code`, and names the failure in `type`). */
const errorCode = (error: { readonly code?: unknown; readonly type?: unknown }): string | undefined =>
  typeof error.code === "string" && error.code.length > 0
    ? error.code
    : typeof error.type === "string" && error.type.length > 0
    ? error.type
    : undefined

/** The `type` of an OpenAI error body: OpenAI's 429 names the limit it hit there ("requests", "tokens"). */
const errorType = (body: unknown): unknown => typeof body === "object" && body !== null && "type" in body ? body.type : undefined

const describe = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** Error codes of the network failures Node's fetch (undici) reports as an error's `cause`. */
const networkErrorCodes: ReadonlySet<string> = new Set([
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "ETIMEDOUT",
  "EPIPE",
  "ENETUNREACH",
  "EHOSTUNREACH",
  "EAI_AGAIN"
])

/** The first network error code along `error`'s `cause` chain, if any. */
const findNetworkCause = (error: unknown): string | undefined => {
  let current: unknown = error
  for (let depth = 0; depth < 5 && typeof current === "object" && current !== null; depth++) {
    if ("code" in current && typeof current.code === "string" && networkErrorCodes.has(current.code)) {
      return current.code
    }
    current = "cause" in current ? current.cause : undefined
  }
  return undefined
}

/**
 * The `type`s and `code`s of error events that say the server failed, was overloaded or limited
 * the rate, as OpenAI and the compatible servers that borrow Anthropic's names send them.
 */
const transientErrorKinds: ReadonlySet<string> = new Set([
  "server_error",
  "rate_limit_exceeded",
  "rate_limit_error",
  "overloaded_error",
  "overloaded",
  "timeout"
])

/** Whether an error event's body (`{ type, code }`, already unwrapped by the SDK) names a transient failure. */
const isTransientErrorEvent = (body: unknown): boolean => {
  if (typeof body !== "object" || body === null) return false
  const type = "type" in body ? body.type : undefined
  const code = "code" in body ? body.code : undefined
  // Some servers (vLLM) give the HTTP status they would have answered with as the code.
  if (typeof code === "number") return code === 429 || code >= 500
  return [type, code].some((kind) => typeof kind === "string" && transientErrorKinds.has(kind))
}

/** The `message` of an OpenAI error body (`{ error: { message } }`, already unwrapped by the SDK). */
const errorBodyMessage = (body: unknown): string | undefined =>
  typeof body === "object" && body !== null && "message" in body && typeof body.message === "string" &&
    body.message.length > 0
    ? body.message
    : undefined
