/**
 * The OpenAPI document without the `$id`s Effect's JSON Schema gives its built-in schemas
 * (`/schemas/unknown` for `Schema.Unknown`, `/schemas/%7B%7D` for an empty struct): each appears
 * wherever such a schema does, and a validator that compiles the document (Ajv, and the client
 * generators built on it) refuses an id that resolves to more than one schema.
 */

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

const strip = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(strip)
  if (!isRecord(value)) return value
  return Object.fromEntries(
    Object.entries(value).flatMap(([key, inner]) =>
      key === "$id" && typeof inner === "string" && inner.startsWith("/schemas/") ? [] : [[key, strip(inner)]]
    )
  )
}

/** `spec` with Effect's built-in schema ids removed. */
export const withoutSchemaIds = (spec: Record<string, unknown>): Record<string, unknown> =>
  Object.fromEntries(Object.entries(spec).map(([key, value]) => [key, strip(value)]))
