/**
 * What the MCP SDK's errors say, as a person fixing the server reads them: an error with its
 * cause, refused credentials said as such, and where a result the SDK's schema rejected was wrong.
 */
import { Schema } from "effect"
import type { McpClientSdk } from "./mcpClientSdk.js"

/** An error's message, with its cause's when it has one (`fetch failed` says little without `connect ECONNREFUSED ...`). */
export const messageOf = (error: unknown): string =>
  error instanceof Error
    ? error.cause instanceof Error ? `${error.message} (${error.cause.message})` : error.message
    : String(error)

/** Why connecting failed, as a person fixing it reads it: refused credentials said as such. */
export const connectFailure = (sdk: McpClientSdk, error: unknown): string =>
  error instanceof sdk.StreamableHTTPError && (error.code === 401 || error.code === 403)
    ? `the server refused the credentials (HTTP ${error.code}): ${messageOf(error)}; check the token or headers it is given`
    : messageOf(error)

/**
 * What the SDK rejects a result with when its schema refuses it (a zod error): where in the result,
 * and what is wrong there.
 */
const SchemaRejection = Schema.Struct({
  issues: Schema.NonEmptyArray(Schema.Struct({ path: Schema.Array(Schema.Unknown), message: Schema.String }))
})
export const schemaRejection = Schema.decodeUnknownOption(SchemaRejection)

/** The issues a person reads of a rejected result: a few, each where it is (`content.0.data`). */
export const issuesText = (rejection: typeof SchemaRejection.Type): string =>
  rejection.issues.slice(0, 3).map((issue) => issue.path.length === 0 ? issue.message : `${issue.path.map(String).join(".")}: ${issue.message}`)
    .join("; ") + (rejection.issues.length > 3 ? `; and ${rejection.issues.length - 3} more` : "")

/** The most of an HTTP error's body a failed call's reason quotes: a gateway may answer with a whole page. */
export const httpErrorChars = 300
