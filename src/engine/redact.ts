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

/** A tool call's raw JSON arguments, redacted (left as they are when they are not JSON). */
export const redactArguments = (text: string, fields: ReadonlySet<string>): string => {
  if (fields.size === 0) return text
  try {
    return JSON.stringify(redactFields(JSON.parse(text), fields))
  } catch {
    return text
  }
}
