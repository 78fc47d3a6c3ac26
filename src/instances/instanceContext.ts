/**
 * An instance's context, checked against its agent's context schema.
 */
import { Either, Schema } from "effect"
import { type AnySchema, isContext } from "../definitions/defineAgent.js"
import { type ReadableIssue, readableIssues } from "../definitions/readableIssues.js"

/**
 * A context checked against the agent's schema and stored in its encoded form (defaults filled
 * in); without a schema, any JSON object.
 */
export const checkContext = (schema: AnySchema | undefined, input: unknown): Either.Either<Readonly<Record<string, unknown>>, ReadonlyArray<ReadableIssue>> => {
  if (schema === undefined) {
    return isContext(input) ? Either.right(input) : Either.left([{ path: "context", message: "expected an object" }])
  }
  const decoded = Schema.decodeUnknownEither(schema)(input, { errors: "all", onExcessProperty: "error" })
  if (Either.isLeft(decoded)) return Either.left(readableIssues(decoded.left, { under: "context" }))
  const encoded = Schema.encodeEither(schema)(decoded.right)
  if (Either.isLeft(encoded)) return Either.left(readableIssues(encoded.left, { under: "context" }))
  return isContext(encoded.right) ? Either.right(encoded.right) : Either.left([{ path: "context", message: "the agent's context schema must describe an object" }])
}

/**
 * Whether instances of an agent with this context schema need a context to be made: its schema
 * does not accept `{}`, so no instance can be made on first use.
 */
export const needsContext = (schema: AnySchema | undefined): boolean => schema !== undefined && Either.isLeft(checkContext(schema, {}))
