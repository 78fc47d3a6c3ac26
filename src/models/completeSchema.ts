/**
 * A JSON Schema as OpenAI accepts a function's parameters: it refuses (400, the whole request) an
 * object schema without `properties` or an array schema without `items`, at any depth. MCP
 * servers send such schemas, and so does Effect's JSONSchema for `Schema.Object`
 * (`anyOf: [{ type: "object" }, { type: "array" }]`); `{}` is what they mean.
 */
import { Predicate } from "effect"

/** The keywords whose value is one schema, a list of them, or schemas by name. */
const oneSchema = ["items", "additionalProperties", "not"] as const
const schemaLists = ["anyOf", "oneOf", "allOf", "prefixItems"] as const
const schemasByName = ["properties", "$defs", "definitions", "patternProperties"] as const

const hasType = (schema: Record<string, unknown>, type: string): boolean =>
  schema.type === type || (Array.isArray(schema.type) && schema.type.includes(type))

/** `schema` (JSON Schema; `true`/`false` and anything else stay as they are) with every object given `properties` and every array `items`. */
export const completed = (schema: unknown): unknown => {
  if (!Predicate.isRecord(schema)) return schema
  const out: Record<string, unknown> = { ...schema }
  for (const key of oneSchema) if (key in out) out[key] = completed(out[key])
  for (const key of schemaLists) {
    const list = out[key]
    if (Array.isArray(list)) out[key] = list.map(completed)
  }
  for (const key of schemasByName) {
    const named = out[key]
    if (Predicate.isRecord(named)) out[key] = Object.fromEntries(Object.entries(named).map(([name, s]) => [name, completed(s)]))
  }
  // Tuple-form `items` (a list of schemas, draft 2019 and before).
  if (Array.isArray(out.items)) out.items = out.items.map(completed)
  if (hasType(out, "object") && !("properties" in out)) out.properties = {}
  if (hasType(out, "array") && !("items" in out)) out.items = {}
  return out
}
