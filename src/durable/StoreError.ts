/**
 * The one error every storage fails with: which operation could not be done, and why.
 */
import { Effect, Schema } from "effect"

/** The store could not do what was asked; `operation` says what. */
export class StoreError extends Schema.TaggedError<StoreError>()("StoreError", {
  operation: Schema.String,
  message: Schema.String
}) {}

/** What an inner error says: its message, else its code (`ECONNREFUSED` has none), else its name. */
const reasonOf = (inner: unknown): string => {
  if (typeof inner !== "object" || inner === null) return ""
  const said = "message" in inner ? String(inner.message) : ""
  if (said !== "") return said
  return "code" in inner ? String(inner.code) : inner instanceof Error ? inner.name : ""
}

/**
 * What a failure says, whatever failed; with what its own cause says (the database's words under a
 * client's "Failed to execute statement", the driver's reason under "PgClient: Failed to connect").
 */
export const messageOf = (cause: unknown): string => {
  if (typeof cause !== "object" || cause === null || !("message" in cause)) return String(cause)
  const message = String(cause.message)
  const inner = "cause" in cause ? reasonOf(cause.cause) : ""
  return inner === "" || message.includes(inner) ? message : `${message}: ${inner}`
}

/** Turns any failure of one store operation into a `StoreError` that says which. */
export const failAs = (operation: string) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, StoreError, R> =>
  Effect.mapError(effect, (cause) => new StoreError({ operation, message: messageOf(cause) }))
