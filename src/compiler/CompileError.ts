/**
 * Why a route table could not become a running application.
 */
import { Schema } from "effect"
import { BuildProblem } from "./BuildStatus.js"

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
  /** One problem per missing service, at the file of the tool that requires it. */
  get problems(): ReadonlyArray<typeof BuildProblem.Type> {
    return this.missing.map((m) => ({ file: m.file, problem: `tool "${m.tool}" ${this.requires(m)}`, fix: this.fix(m) }))
  }

  override get message(): string {
    return this.missing.map((m) => `tool "${m.tool}" (${m.file}) ${this.requires(m)}\n  fix: ${this.fix(m)}`).join("\n")
  }

  private requires(m: MissingService): string {
    return `requires the service ${m.service}, which no layer in ${this.configFile} provides`
  }

  private fix(m: MissingService): string {
    return `add a layer that provides ${m.service} to \`layers\` in ${this.configFile}`
  }
}

/** A layer in the config failed to build. */
export class LayerBuildError extends Schema.TaggedError<LayerBuildError>()("LayerBuildError", {
  configFile: Schema.String,
  cause: Schema.String
}) {
  /** The problem, at the config file. */
  get problems(): ReadonlyArray<typeof BuildProblem.Type> {
    return [{ file: this.configFile, problem: `a layer failed to build: ${this.cause}`, fix: layerFix }]
  }

  override get message(): string {
    return `a layer in ${this.configFile} failed to build: ${this.cause}\n  fix: ${layerFix}`
  }
}

const layerFix = "make the layer's construction succeed, or provide what it needs"
