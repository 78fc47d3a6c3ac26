/**
 * The answer to a request the API cannot take as sent: which field is wrong and what was expected,
 * one line each in `message` and one entry each in `issues`. It stands in for HttpApi's own
 * `HttpApiDecodeError` (a Schema tree), which the edge never sends (see `readableErrors`).
 */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { ReadableIssue } from "../../../definitions/readableIssues.js"

/** A request whose path, query, headers or body does not match its endpoint (or cannot be read). */
export class BadRequest extends Schema.TaggedError<BadRequest>()(
  "BadRequest",
  {
    message: Schema.String,
    issues: Schema.Array(ReadableIssue)
  },
  HttpApiSchema.annotations({
    status: 400,
    description: "The request does not match the endpoint: one issue per field, saying what was expected"
  })
) {}

const decodeErrorName = "HttpApiDecodeError"
const decodeErrorRef = `#/components/schemas/${decodeErrorName}`

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

const withoutDecodeErrorRefs = (value: unknown): unknown =>
  Array.isArray(value)
    ? value.filter((item) => !(isRecord(item) && item.$ref === decodeErrorRef)).map(withoutDecodeErrorRefs)
    : isRecord(value)
    ? Object.fromEntries(Object.entries(value).map(([key, item]) => [key, withoutDecodeErrorRefs(item)]))
    : value

/**
 * An `OpenApi.Transform` for the API: every `HttpApi` declares `HttpApiDecodeError`, but this one
 * answers `BadRequest` instead, so the document says only that.
 */
export const declareBadRequestOnly = (spec: Record<string, unknown>): Record<string, unknown> => {
  const stripped = Object.fromEntries(Object.entries(spec).map(([key, value]) => [key, withoutDecodeErrorRefs(value)]))
  const components = stripped.components
  if (!isRecord(components) || !isRecord(components.schemas)) return stripped
  const schemas = Object.fromEntries(Object.entries(components.schemas).filter(([name]) => name !== decodeErrorName))
  return { ...stripped, components: { ...components, schemas } }
}
