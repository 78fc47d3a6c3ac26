/**
 * `defineTool`: a typed capability an agent can call. Its input and output are `effect/Schema`
 * values; its `run` is an Effect whose requirements are the services listed in `requires`.
 */
import { type Context, Data, type Duration, type Effect, type Schema } from "effect"
import type { AgentDefinition } from "./defineAgent.js"
import { brand, type Branded } from "./RouteKind.js"

/**
 * Any service tag. `Context.Tag` is invariant in both parameters, so only `any` accepts every
 * tag; this alias is the one place that says so.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTag = Context.Tag<any, any>

/** What a tool's `run` receives besides its input: where it is running. */
export interface ToolRunContext {
  readonly runId: string
  readonly conversationId: string
  readonly instanceId: string
  readonly agent: string
  readonly toolCallId: string
  /**
   * Stable across re-executions of this call after a crash: the tool's `idempotencyKey(input)`
   * when it declares one, else `<runId>:<toolCallId>`. Use it to make a side effect happen once.
   */
  readonly idempotencyKey: string
  /** Starts a run of another agent without waiting for it; the new run records this one as its parent. */
  readonly spawn: (
    agent: AgentDefinition,
    message: string,
    options?: { readonly instance?: string }
  ) => Effect.Effect<{ readonly runId: string }, SpawnFailed>
  /**
   * Emits an internal event: every playbook listening with `event("<name>", schema)` that accepts
   * it starts its run (recording this run as the parent). Returns the runs it started.
   */
  readonly emit: (name: string, payload: unknown) => Effect.Effect<{ readonly runs: ReadonlyArray<string> }, SpawnFailed>
}

/** A spawn could not start its run (the agent is not a route, or the store failed). */
export class SpawnFailed extends Data.TaggedError("SpawnFailed")<{ readonly message: string }> {}

/** Whether a call needs a person's approval before it runs. */
export type ApprovalPolicy<I> = "never" | "always" | ((input: I) => boolean)

/** A tool definition. `R` is the union of the services its `run` requires. */
export interface ToolDefinition<I = unknown, IE = unknown, O = unknown, OE = unknown, E = unknown, R = unknown>
  extends Branded<"tool">
{
  /** What the tool does, shown to the model. */
  readonly description: string
  /** The name the model calls it by; defaults to the last segment of the tool's route id. */
  readonly name: string | undefined
  readonly input: Schema.Schema<I, IE>
  readonly output: Schema.Schema<O, OE>
  readonly approval: ApprovalPolicy<I>
  /** The services `run` uses; the compiler checks that the config's layers provide each one. */
  readonly requires: ReadonlyArray<AnyTag>
  /** A key for the call's side effect, handed to `run` as `context.idempotencyKey`. */
  readonly idempotencyKey: ((input: I) => string) | undefined
  /** Fields of the input or output (at any depth) that never appear in events. */
  readonly redact: ReadonlyArray<string>
  /**
   * How long one call may run before it is interrupted and the model is told that it timed out
   * (a failed call, counted for `maxToolFailures`); `undefined`: the config's `toolTimeout`.
   */
  readonly timeout: Duration.DurationInput | undefined
  readonly run: (input: I, context: ToolRunContext) => Effect.Effect<O, E, R>
}

/** Any tool, whatever its types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = ToolDefinition<any, any, any, any, any, any>

/** The services a tool requires. */
export type ToolRequirements<T> = T extends ToolDefinition<infer _I, infer _IE, infer _O, infer _OE, infer _E, infer R> ? R
  : never

/** Defines a tool. List every service `run` uses in `requires`; the types hold you to it. */
export const defineTool = <
  I,
  IE,
  O,
  OE,
  E = never,
  const Requires extends ReadonlyArray<AnyTag> = readonly []
>(definition: {
  readonly description: string
  readonly name?: string
  readonly input: Schema.Schema<I, IE>
  readonly output: Schema.Schema<O, OE>
  readonly approval?: ApprovalPolicy<I>
  readonly requires?: Requires
  readonly idempotencyKey?: (input: I) => string
  readonly redact?: ReadonlyArray<string>
  readonly timeout?: Duration.DurationInput
  readonly run: (
    input: I,
    context: ToolRunContext
  ) => Effect.Effect<O, E, Context.Tag.Identifier<Requires[number]>>
}): ToolDefinition<I, IE, O, OE, E, Context.Tag.Identifier<Requires[number]>> =>
  brand("tool", {
    description: definition.description,
    name: definition.name,
    input: definition.input,
    output: definition.output,
    approval: definition.approval ?? "never",
    requires: definition.requires ?? [],
    idempotencyKey: definition.idempotencyKey,
    redact: definition.redact ?? [],
    timeout: definition.timeout,
    run: definition.run
  })
