/**
 * `/api/capabilities`: what instances can install (shared tools and catalogue MCP servers that
 * declare `installable`), each with the JSON Schema of its config and which fields are secrets.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { CapabilityKind } from "../../../durable/records.js"

/** An installable capability as the API shows it. */
export const CapabilityView = Schema.Struct({
  kind: CapabilityKind,
  id: Schema.String,
  description: Schema.String,
  file: Schema.String,
  /** The JSON Schema of the config an installation carries (`{}` when its schema has no JSON Schema form). */
  config: Schema.Unknown,
  /** The config's secret fields (declared `Schema.Redacted`), as dotted paths: stored sealed, shown as `"<redacted>"`. */
  secrets: Schema.Array(Schema.String)
})
export type CapabilityView = typeof CapabilityView.Type

/** The capabilities group. */
export class CapabilitiesGroup extends HttpApiGroup.make("capabilities").add(
  HttpApiEndpoint.get("list", "/api/capabilities").addSuccess(Schema.Array(CapabilityView))
) {}
