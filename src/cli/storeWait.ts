/**
 * A PostgreSQL store that does not answer (a host that takes the connection and says nothing, a
 * firewall that drops the packets) is said in the terminal every few seconds while the process
 * waits, and given up after `store.connectTimeout` with an error naming the address and the
 * setting: it hung silently, the server never listening and nothing saying why.
 */
import { Clock, Duration, Effect, Fiber, Layer, Redacted } from "effect"
import { durationText } from "../definitions/configFields.js"
import { StoreError } from "../durable/StoreError.js"
import { style, warn } from "./terminal.js"

const between = Duration.seconds(5)

/** Where a PostgreSQL URL points, as `host:port` (PostgreSQL's port when it names none). */
export const storeAddress = (url: Redacted.Redacted | string): string => {
  const text = typeof url === "string" ? url : Redacted.value(url)
  if (!URL.canParse(text)) return "the URL of store.postgres"
  const parsed = new URL(text)
  return `${parsed.hostname === "" ? "localhost" : parsed.hostname}:${parsed.port === "" ? "5432" : parsed.port}`
}

/** What node-postgres and @effect/sql-pg say when a connection timed out. */
const timedOut = (message: string): boolean => /timed? ?out|timeout/i.test(message)

/**
 * Builds `layer` (the store at `address`), saying every 5 seconds that it still waits, and naming
 * the address and `store.connectTimeout` (of `configFile`) when connecting timed out.
 */
export const waitingSaid = <A, R>(
  layer: Layer.Layer<A, StoreError, R>,
  address: string,
  connectTimeout: Duration.DurationInput,
  configFile: string
): Layer.Layer<A, StoreError, R> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const started = yield* Clock.currentTimeMillis
      const limit = durationText(connectTimeout)
      const ticking = yield* Effect.fork(Effect.forever(Effect.gen(function*() {
        yield* Effect.sleep(between)
        const seconds = Math.round(((yield* Clock.currentTimeMillis) - started) / 1000)
        yield* warn(style.yellow(
          `waiting for the store at ${address}: no answer yet (${seconds} s; gives up after ${limit}, store.connectTimeout in ${configFile})`
        ))
      })))
      return yield* Layer.build(layer).pipe(
        Effect.ensuring(Fiber.interrupt(ticking)),
        Effect.mapError((error) =>
          error.operation === "connect" && timedOut(error.message)
            ? new StoreError({
              operation: "connect",
              message: `the store at ${address} did not answer within ${limit} (store.connectTimeout in ${configFile}): ${error.message}\n` +
                "  fix: check that PostgreSQL runs at that address and is reachable from here, or raise store.connectTimeout"
            })
            : error
        )
      )
    })
  )
