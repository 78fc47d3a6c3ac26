/**
 * The shape a refusal takes for the client that asked: OpenAI's error object under `/v1` (OpenAI
 * clients turn it into their own typed errors), Foundry's `{ _tag, message }` everywhere else.
 * The edge and the auth door refuse before any route runs, so they choose by path.
 */
import { String as Str } from "effect"

/** Whether `path` is one of the OpenAI-compatible routes. */
export const isOpenAiPath = (path: string): boolean => path === "/v1" || path.startsWith("/v1/")

/** OpenAI's own codes for the refusals it has; other tags become snake_case codes. */
const openAiCodes: Readonly<Record<string, string>> = {
  Unauthorized: "invalid_api_key",
  Forbidden: "insufficient_permissions",
  RateLimited: "rate_limit_exceeded"
}

/** A refusal as OpenAI's error object. */
export const openAiRefusal = (status: number, tag: string, message: string) => ({
  error: {
    message,
    type: status === 429 ? "requests" : "invalid_request_error",
    param: null,
    code: openAiCodes[tag] ?? Str.camelToSnake(tag.charAt(0).toLowerCase() + tag.slice(1))
  }
})
