/**
 * `defineAgent`: an agent is a model, instructions and the tools it may call. Identity comes from
 * the file's path (`agents/<path>/agent.ts`), never from a field.
 */
import type { NonEmptyReadonlyArray } from "effect/Array"
import type { Budget } from "./defineConfig.js"
import type { EnvironmentDefinition } from "./defineEnvironment.js"
import type { AnyTool } from "./defineTool.js"
import type { LanguageModel } from "../models/Model.js"
import type { AgentMcp } from "../mcp/McpServerSpec.js"
import { brand, type Branded } from "./RouteKind.js"

/** The instance an agent runs for: data, not code. */
export interface InstanceInfo {
  readonly id: string
  readonly context: Readonly<Record<string, unknown>>
}

/** Static text, or text computed from the instance the agent runs for. */
export type Instructions = string | ((input: { readonly instance: InstanceInfo }) => string)

/**
 * Which model an agent runs on: `"demo"` (offline), `"openai:<model>"`, or a `LanguageModel`
 * value (for example a scripted model in tests).
 */
export type ModelSpec = "demo" | `openai:${string}` | LanguageModel

/**
 * An agent's `model` field: one model, or a list to fall back through in order. A turn goes to the
 * next model only when the current one still fails transiently (429, 5xx, network) after its
 * retries; a permanent failure (400, 401, ...) fails the run without trying the others.
 */
export type AgentModel = ModelSpec | NonEmptyReadonlyArray<ModelSpec>

/** The built-in tools for an agent's own time: `foundry_schedule`, `foundry_schedules`, `foundry_sleep`. */
export type TimerToolName = "schedule" | "schedules" | "sleep"

/** Every timer tool, in the order they are offered. */
export const timerToolNames: NonEmptyReadonlyArray<TimerToolName> = ["schedule", "schedules", "sleep"]

/** An agent definition; `Tool` keeps its tools' types so generated route types can see them. */
export interface AgentDefinition<Tool extends AnyTool = AnyTool>
  extends Branded<"agent">
{
  readonly description: string
  readonly model: AgentModel
  readonly instructions: Instructions
  readonly tools: ReadonlyArray<Tool>
  readonly environment: EnvironmentDefinition | undefined
  /** The most model turns one run may take before it fails. */
  readonly maxTurns: number
  /** Agents this one may delegate to: each becomes a tool that runs it and waits for its answer. */
  readonly subagents: ReadonlyArray<AgentDefinition>
  /** Which built-in timer tools the agent gets: `true` for all three, a list for some, `false` for none. */
  readonly timers: boolean | ReadonlyArray<TimerToolName>
  /** The model's context window in tokens, when the config's or the known default is not right. */
  readonly contextWindow: number | undefined
  /** The agent's spending limits; each field set here replaces the config's `budget` field. */
  readonly budget: Budget
  /**
   * MCP servers whose tools the agent gets as `<server>__<tool>`: declared here (`{ command, args }`
   * or `{ url, headers }`), or `true` for the config's server of that name.
   */
  readonly mcp: AgentMcp
}

/** Defines an agent. */
export const defineAgent = <Tool extends AnyTool = never>(definition: {
  readonly description: string
  readonly model?: AgentModel
  readonly instructions?: Instructions
  readonly tools?: ReadonlyArray<Tool>
  readonly environment?: EnvironmentDefinition
  readonly maxTurns?: number
  readonly subagents?: ReadonlyArray<AgentDefinition>
  readonly timers?: boolean | ReadonlyArray<TimerToolName>
  readonly contextWindow?: number
  readonly budget?: Budget
  readonly mcp?: AgentMcp
}): AgentDefinition<Tool> =>
  brand("agent", {
    description: definition.description,
    model: definition.model ?? "demo",
    instructions: definition.instructions ?? "",
    tools: Object.freeze([...(definition.tools ?? [])]),
    environment: definition.environment,
    maxTurns: definition.maxTurns ?? 12,
    subagents: Object.freeze([...(definition.subagents ?? [])]),
    timers: definition.timers ?? false,
    contextWindow: definition.contextWindow,
    budget: { ...definition.budget },
    mcp: definition.mcp ?? {}
  })

const isModelList = (model: AgentModel): model is NonEmptyReadonlyArray<ModelSpec> => Array.isArray(model)

/** The models an agent runs on, in fallback order. */
export const modelsOf = (agent: AgentDefinition): NonEmptyReadonlyArray<ModelSpec> =>
  isModelList(agent.model) ? agent.model : [agent.model]

/** A model spec's name as people see it: the string itself, or the model value's `name`. */
export const modelNameOf = (spec: ModelSpec): string => typeof spec === "string" ? spec : spec.name

/** The timer tools an agent opted into. */
export const timerToolsOf = (agent: AgentDefinition): ReadonlyArray<TimerToolName> =>
  agent.timers === true ? timerToolNames : agent.timers === false ? [] : agent.timers
