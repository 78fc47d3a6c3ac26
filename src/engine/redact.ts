/**
 * Redaction for events: fields a tool marks as redacted are replaced, wherever they appear in its
 * input or output, before an event is written. The transcript keeps them (the model needs them).
 */

/** What a redacted value becomes in an event. */
export const redacted = "[redacted]"

/** `value` with every property named in `fields`, at any depth, replaced by `[redacted]`. */
export const redactFields = (value: unknown, fields: ReadonlySet<string>): unknown => {
  if (fields.size === 0) return value
  if (Array.isArray(value)) return value.map((item) => redactFields(item, fields))
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(
    Object.entries(value).map(([key, inner]) => [key, fields.has(key) ? redacted : redactFields(inner, fields)])
  )
}

/**
 * What arguments that are not JSON become in an event of a tool that redacts fields: no field can
 * be found in them to replace, and they may hold one (a model cut off, or writing broken JSON).
 */
export const unparsedArguments = "[arguments redacted: not valid JSON]"

/** What arguments that are a bare value become there: it may be a redacted field's value sent alone. */
export const bareArguments = "[arguments redacted: not a JSON object]"

const isObject = (value: unknown): value is object => typeof value === "object" && value !== null

/**
 * A tool call's raw JSON arguments, redacted. For a tool that redacts fields, arguments that are
 * not a JSON object or array become a placeholder; blank ones, which hold nothing, stay.
 */
export const redactArguments = (text: string, fields: ReadonlySet<string>): string => {
  if (fields.size === 0 || text.trim() === "") return text
  let parsed: unknown
  try {
    parsed = JSON.parse(text)
  } catch {
    return unparsedArguments
  }
  return isObject(parsed) ? JSON.stringify(redactFields(parsed, fields)) : bareArguments
}

/**
 * A tool call's input as its events show it, redacted. The input is the parsed arguments, or their
 * text when they did not parse (or the model sent JSON text inside a JSON string): text is
 * redacted as arguments, so that what could not be parsed is never shown as it is.
 */
export const redactInput = (value: unknown, fields: ReadonlySet<string>): unknown => {
  if (fields.size === 0) return value
  if (typeof value === "string") return redactArguments(value, fields)
  return isObject(value) ? redactFields(value, fields) : bareArguments
}
