/**
 * Request bodies of the native API refuse fields they do not know: a misspelt field (`instanceId`
 * for `instance`) would otherwise be dropped without a word and the request served as if it had
 * not been sent. `/v1` stays lenient: OpenAI's clients send parameters Foundry does not read.
 */
import type { ParseOptions } from "effect/SchemaAST"

/** The annotation that makes a body's schema (and the structs within it) refuse unknown fields. */
export const strictBody: { readonly parseOptions: ParseOptions } = { parseOptions: { onExcessProperty: "error" } }
