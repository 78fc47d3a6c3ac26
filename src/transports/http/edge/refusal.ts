/**
 * How the edge refuses a request before any route sees it: a JSON body in the API's error shape
 * (`_tag`, `message`), with a message that says what to change.
 */
import { HttpServerResponse } from "@effect/platform"

/** A refusal with `status`, tagged `tag`, saying `message`. */
export const refusal = (status: number, tag: string, message: string, headers: Readonly<Record<string, string>> = {}) =>
  HttpServerResponse.unsafeJson({ _tag: tag, message }, { status, headers })
