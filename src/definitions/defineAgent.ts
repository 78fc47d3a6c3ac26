/**
 * `defineAgent`: an agent is a model, instructions and the tools it may call. Identity comes from
 * the file's path (`agents/<path>/agent.ts`), never from a field.
 */
import type { EnvironmentDefinition } from "./defineEnvironment.js"
import type { AnyTool } from "./defineTool.js"
import type { LanguageModel } from "../models/Model.js"
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

/** An agent definition; `Tool` keeps its tools' types so generated route types can see them. */
export interface AgentDefinition<Tool extends AnyTool = AnyTool>
  extends Branded<"agent">
{
  readonly description: string
  readonly model: ModelSpec
  readonly instructions: Instructions
  readonly tools: ReadonlyArray<Tool>
  readonly environment: EnvironmentDefinition | undefined
  /** The most model turns one run may take before it fails. */
  readonly maxTurns: number
  /** Agents this one may delegate to: each becomes a tool that runs it and waits for its answer. */
  readonly subagents: ReadonlyArray<AgentDefinition>
}

/** Defines an agent. */
export const defineAgent = <Tool extends AnyTool = never>(definition: {
  readonly description: string
  readonly model?: ModelSpec
  readonly instructions?: Instructions
  readonly tools?: ReadonlyArray<Tool>
  readonly environment?: EnvironmentDefinition
  readonly maxTurns?: number
  readonly subagents?: ReadonlyArray<AgentDefinition>
}): AgentDefinition<Tool> =>
  brand("agent", {
    description: definition.description,
    model: definition.model ?? "demo",
    instructions: definition.instructions ?? "",
    tools: Object.freeze([...(definition.tools ?? [])]),
    environment: definition.environment,
    maxTurns: definition.maxTurns ?? 12,
    subagents: Object.freeze([...(definition.subagents ?? [])])
  })

