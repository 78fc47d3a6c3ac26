/**
 * A type error of a project, as the type check reports it and the API and inspector show it.
 */
import { Schema } from "effect"

/** One type error, at a project-relative file and a 1-based line and column. */
export class TypeDiagnostic extends Schema.Class<TypeDiagnostic>("TypeDiagnostic")({
  file: Schema.String,
  line: Schema.Number,
  column: Schema.Number,
  code: Schema.String,
  message: Schema.String
}) {}

/** `file:line:column - message`, the way editors and terminals link to a place in a file. */
export const formatDiagnostic = (d: TypeDiagnostic): string => `${d.file}:${d.line}:${d.column} - ${d.code}: ${d.message}`
