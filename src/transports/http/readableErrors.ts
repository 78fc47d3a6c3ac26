/**
 * Middleware that keeps the API's promises at its edge: request bodies are size-limited, and a
 * body that is not JSON or a path that is not a route gets a JSON error that says so, never an
 * empty response or a stack trace.
 */
import { HttpIncomingMessage, type HttpApp, HttpServerError, HttpServerResponse } from "@effect/platform"
import { Cause, Effect, Option } from "effect"

/** The largest request body the API reads. */
export const maxBodyBytes = 1024 * 1024

const answer = (status: number, tag: string, message: string) =>
  HttpServerResponse.json({ _tag: tag, message }, { status }).pipe(Effect.orDie)

/** Wraps the API's app. */
export const readableErrors = <E, R>(app: HttpApp.Default<E, R>): HttpApp.Default<E, R> =>
  app.pipe(
    HttpIncomingMessage.withMaxBodySize(Option.some(maxBodyBytes)),
    Effect.catchAllCause((cause) => {
      // Body decoding dies rather than fails inside HttpApi, so defects are looked at too.
      const error = Cause.squash(cause)
      if (HttpServerError.isServerError(error)) {
        switch (error._tag) {
          case "RequestError":
            return answer(
              400,
              "BadRequest",
              error.reason === "Decode"
                ? `the request body could not be read: send valid JSON (at most ${maxBodyBytes} bytes) with content-type: application/json`
                : "the request could not be read"
            )
          case "RouteNotFound":
            return answer(404, "NotFound", `${error.request.method} ${error.request.url} is not a route; see /api/openapi.json`)
        }
      }
      return Effect.failCause(cause)
    })
  )
