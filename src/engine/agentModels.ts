/**
 * The models an agent runs on and the context window it is held to: the submission of a client's
 * history cuts its tool results to the same window the engine's turns are held to.
 */
import { Array as Arr } from "effect"
import type { CompiledAgent, CompiledApp } from "../compiler/CompiledApp.js"
import { modelsOf } from "../definitions/defineAgent.js"
import type { LanguageModel, ModelResolver, ResolvedModel } from "../models/Model.js"
import { type ContextWindow, contextWindowOf } from "./compaction.js"

/** The agent's models in fallback order, as `resolver` resolves the names (the demo model for one not available here). */
export const resolveModels = (resolver: ModelResolver["Type"], agent: CompiledAgent): Arr.NonEmptyReadonlyArray<ResolvedModel> =>
  Arr.map(modelsOf(agent.definition), (spec): ResolvedModel => typeof spec === "string" ? resolver.resolve(spec) : { model: spec })

/** The context window of `first`, the agent's first model: the agent's `contextWindow`, the config's, or a known default. */
export const agentWindow = (app: CompiledApp, agent: CompiledAgent, first: LanguageModel): ContextWindow | undefined =>
  contextWindowOf(first.name, app.table.config.context.windows, agent.definition.contextWindow)
