/**
 * Which fields of a schema are secrets: those declared `Schema.Redacted(...)`. Read from the schema
 * itself, so it can be said before any value exists (what `GET /api/capabilities` lists, and what
 * the router refuses in a context schema, which is stored and shown as plain data).
 */
import { Array as Arr, Option, SchemaAST as AST } from "effect"

/**
 * `Schema.Redacted(x)` decodes to a declaration that `Schema.RedactedFromSelf` marks with the
 * `effect/Redacted` type constructor: the one mark that stays however the field is annotated,
 * refined or made optional.
 */
const isRedacted = (ast: AST.AST): boolean =>
  ast._tag === "Declaration" &&
  Option.exists(AST.getTypeConstructorAnnotation(ast), (constructor) => constructor._tag === "effect/Redacted")

/** The secret fields under `ast` (a type-side AST), as paths: array items and record values are `*`. */
const secretsUnder = (ast: AST.AST, path: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (isRedacted(ast)) return [path.join(".")]
  switch (ast._tag) {
    case "TypeLiteral":
      return [
        ...ast.propertySignatures.flatMap((field) => secretsUnder(field.type, [...path, String(field.name)])),
        ...ast.indexSignatures.flatMap((signature) => secretsUnder(signature.type, [...path, "*"]))
      ]
    case "TupleType":
      return [
        ...ast.elements.flatMap((element, index) => secretsUnder(element.type, [...path, String(index)])),
        ...ast.rest.flatMap((rest) => secretsUnder(rest.type, [...path, "*"]))
      ]
    case "Union":
      return Arr.dedupe(ast.types.flatMap((member) => secretsUnder(member, path)))
    case "Refinement":
      return secretsUnder(ast.from, path)
    default:
      // A suspended (recursive) schema is not followed: it could go on for ever.
      return []
  }
}

/** The dotted paths of the fields declared `Schema.Redacted(...)`, e.g. `["auth.token"]`. */
export const secretFields = (schema: { readonly ast: AST.AST }): ReadonlyArray<string> => secretsUnder(AST.typeAST(schema.ast), [])
