/**
 * Why a route table could not become a running application.
 */
import { Schema } from "effect"

/** A service a tool requires that no layer in the config provides. */
export class MissingService extends Schema.Class<MissingService>("MissingService")({
  tool: Schema.String,
  file: Schema.String,
  service: Schema.String
}) {}

/** Tools require services that no layer provides. */
export class MissingServices extends Schema.TaggedError<MissingServices>()("MissingServices", {
  configFile: Schema.String,
  missing: Schema.Array(MissingService)
}) {
  override get message(): string {
    return this.missing
      .map((m) =>
        `tool "${m.tool}" (${m.file}) requires the service ${m.service}, which no layer in ${this.configFile} provides\n` +
        `  fix: add a layer that provides ${m.service} to \`layers\` in ${this.configFile}`
      )
      .join("\n")
  }
}

/** A layer in the config failed to build. */
export class LayerBuildError extends Schema.TaggedError<LayerBuildError>()("LayerBuildError", {
  configFile: Schema.String,
  cause: Schema.String
}) {
  override get message(): string {
    return `a layer in ${this.configFile} failed to build: ${this.cause}\n  fix: make the layer's construction succeed, or provide what it needs`
  }
}
