/**
 * An installable capability as clients read it: the JSON Schema of its config (so a form or a
 * client can be made from it) and the paths of its secret fields, found in the schema itself.
 */
import { Either, JSONSchema } from "effect"
import type { Capability } from "../../../compiler/CompiledApp.js"
import type { AnySchema } from "../../../definitions/defineAgent.js"
import { secretFields } from "../../../definitions/secretFields.js"
import type { CapabilityView } from "../api/CapabilitiesGroup.js"

/** The config's JSON Schema; `{}` (anything) when the schema has parts JSON Schema cannot express. */
export const configJsonSchema = (schema: AnySchema): unknown =>
  Either.getOrElse(Either.try(() => JSONSchema.make(schema)), () => ({}))

/** A capability as `GET /api/capabilities` shows it. */
export const capabilityView = (capability: Capability): CapabilityView => ({
  kind: capability.kind,
  id: capability.id,
  description: capability.description,
  file: capability.file,
  config: configJsonSchema(capability.config),
  secrets: secretFields(capability.config)
})
