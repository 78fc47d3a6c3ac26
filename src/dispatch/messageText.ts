/**
 * What a person says to an agent, as every door that takes one reads it (the API, a steer, MCP):
 * text with something in it. Blank text would start a run about nothing, and leave a conversation
 * titled with nothing.
 */
import { Schema } from "effect"

/** A message to an agent: text that is not blank. */
export const MessageText = Schema.String.pipe(
  Schema.filter((text) => text.trim() !== "", {
    message: () => "expected text that is not blank",
    jsonSchema: { minLength: 1, pattern: "\\S" }
  })
)
