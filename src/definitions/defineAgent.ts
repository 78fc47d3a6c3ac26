/**
 * `defineAgent`: an agent is a model, instructions and the tools it may call. Identity comes from
 * the file's path (`agents/<path>/agent.ts`), never from a field.
 */
import type { Schema } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import type { Budget } from "./configFields.js"
import type { EnvironmentDefinition } from "./defineEnvironment.js"
import type { AnyTool } from "./defineTool.js"
import type { LanguageModel } from "../models/Model.js"
import type { AgentMcp } from "../mcp/McpServerSpec.js"
import { brand, type Branded } from "./RouteKind.js"

/** An instance's context when its agent declares no `context` schema: whatever JSON it was given. */
export type AnyContext = Readonly<Record<string, unknown>>

/** Whether a value can be an instance's context: a JSON object. */
export const isContext = (value: unknown): value is AnyContext => typeof value === "object" && value !== null && !Array.isArray(value)

/** The instance an agent runs for: data, not code. `context` is typed by the agent's `context` schema. */
export interface InstanceInfo<Context = AnyContext> {
  readonly id: string
  readonly context: Context
}

/**
 * Static text, or text computed from the instance the agent runs for. Written as a method so that
 * an agent with a typed context is still an `AgentDefinition` wherever any agent is accepted.
 */
export type Instructions<Context = AnyContext> =
  | string
  | { bivariant(input: { readonly instance: InstanceInfo<Context> }): string }["bivariant"]

/**
 * Any schema, whatever its types: `Schema.Schema` is invariant, so a stored schema is erased here
 * and its type kept beside it (see `AgentDefinition.contextType`).
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnySchema = Schema.Schema<any, any, never>

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
export interface AgentDefinition<Tool extends AnyTool = AnyTool, Context = AnyContext>
  extends Branded<"agent">
{
  readonly description: string
  readonly model: AgentModel
  readonly instructions: Instructions<Context>
  /**
   * What every instance's context holds, when declared: checked when an instance is created or
   * its context changed (an invalid one is refused naming the field), decoded before a run uses it.
   */
  readonly context: AnySchema | undefined
  /** The type `context` decodes to; never set, only read by types (covariant, unlike a schema). */
  readonly contextType?: Context
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
export const defineAgent = <Tool extends AnyTool = never, Context = AnyContext, ContextEncoded = AnyContext>(definition: {
  readonly description: string
  readonly model?: AgentModel
  /** The schema of an instance's context; `instructions`, tools and playbooks then read it typed. */
  readonly context?: Schema.Schema<Context, ContextEncoded>
  readonly instructions?: Instructions<Context>
  readonly tools?: ReadonlyArray<Tool>
  readonly environment?: EnvironmentDefinition
  readonly maxTurns?: number
  readonly subagents?: ReadonlyArray<AgentDefinition>
  readonly timers?: boolean | ReadonlyArray<TimerToolName>
  readonly contextWindow?: number
  readonly budget?: Budget
  readonly mcp?: AgentMcp
}): AgentDefinition<Tool, Context> =>
  brand("agent", {
    description: definition.description,
    model: definition.model ?? "demo",
    instructions: definition.instructions ?? "",
    context: definition.context,
    tools: Object.freeze([...(definition.tools ?? [])]),
    environment: definition.environment,
    maxTurns: definition.maxTurns ?? 12,
    subagents: Object.freeze([...(definition.subagents ?? [])]),
    timers: definition.timers ?? false,
    contextWindow: definition.contextWindow,
    budget: { ...definition.budget },
    mcp: definition.mcp ?? {}
  }, definition)

/** The tool through which an agent delegates to the subagent routed at `id`: `ask-` and the id's last segment. */
export const subagentToolName = (id: string): string => `ask-${id.split("/").pop() ?? id}`

const isModelList = (model: AgentModel): model is NonEmptyReadonlyArray<ModelSpec> => Array.isArray(model)

/** The models an agent runs on, in fallback order. */
export const modelsOf = (agent: AgentDefinition): NonEmptyReadonlyArray<ModelSpec> =>
  isModelList(agent.model) ? agent.model : [agent.model]

/** A model spec's name as people see it: the string itself, or the model value's `name`. */
export const modelNameOf = (spec: ModelSpec): string => typeof spec === "string" ? spec : spec.name

/** The timer tools an agent opted into. */
export const timerToolsOf = (agent: AgentDefinition): ReadonlyArray<TimerToolName> =>
  agent.timers === true ? timerToolNames : agent.timers === false ? [] : agent.timers
