/**
 * How the edge refuses a request before any route sees it: a JSON body in the shape the client
 * at that path reads (see `refusalShape`), with a message that says what to change.
 */
import { type HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { isOpenAiPath, openAiRefusal } from "../refusalShape.js"

/** A refusal of a request for `path` with `status`, tagged `tag`, saying `message`. */
export const refusal = (path: string, status: number, tag: string, message: string, headers: Readonly<Record<string, string>> = {}) =>
  HttpServerResponse.unsafeJson(isOpenAiPath(path) ? openAiRefusal(status, tag, message) : { _tag: tag, message }, { status, headers })

/** The request's path, without its query. */
export const pathOf = (request: HttpServerRequest.HttpServerRequest): string => request.url.split("?")[0] ?? ""
