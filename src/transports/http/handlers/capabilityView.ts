/**
 * An installable capability as clients read it: the JSON Schema of its config (so a form or a
 * client can be made from it) and the paths of its secret fields, found in the schema itself.
 */
import { Array as Arr, Either, JSONSchema, Option, SchemaAST as AST } from "effect"
import type { Capability } from "../../../compiler/CompiledApp.js"
import type { AnySchema } from "../../../definitions/defineAgent.js"
import type { CapabilityView } from "../api/CapabilitiesGroup.js"

/** The config's JSON Schema; `{}` (anything) when the schema has parts JSON Schema cannot express. */
export const configJsonSchema = (schema: AnySchema): unknown =>
  Either.getOrElse(Either.try(() => JSONSchema.make(schema)), () => ({}))

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

/** The dotted paths of the config's fields declared `Schema.Redacted(...)`, e.g. `["auth.token"]`. */
export const secretFields = (schema: AnySchema): ReadonlyArray<string> => secretsUnder(AST.typeAST(schema.ast), [])

/** A capability as `GET /api/capabilities` shows it. */
export const capabilityView = (capability: Capability): CapabilityView => ({
  kind: capability.kind,
  id: capability.id,
  description: capability.description,
  file: capability.file,
  config: configJsonSchema(capability.config),
  secrets: secretFields(capability.config)
})
