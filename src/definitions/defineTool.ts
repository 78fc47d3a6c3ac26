/**
 * `defineTool`: a typed capability an agent can call. Its input and output are `effect/Schema`
 * values; its `run` is an Effect whose requirements are the services listed in `requires`.
 */
import { type Context as Tag, Data, type Duration, type Effect, type Schema } from "effect"
import type { AgentDefinition, AnyContext, AnySchema, InstanceInfo } from "./defineAgent.js"
import { brand, type Branded } from "./RouteKind.js"

/**
 * Any service tag. `Context.Tag` is invariant in both parameters, so only `any` accepts every
 * tag; this alias is the one place that says so.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTag = Tag.Tag<any, any>

/**
 * What a tool's `run` receives besides its input: where it is running, the instance's context (typed
 * by the tool's `context` schema when it declares one) and, for an installed tool, the config the
 * instance installed it with.
 */
export interface ToolRunContext<Config = undefined, Context = AnyContext> {
  readonly runId: string
  readonly conversationId: string
  readonly instanceId: string
  readonly agent: string
  readonly toolCallId: string
  readonly instance: InstanceInfo<Context>
  /** The installation's config, decoded by `installable.config` (secrets as `Redacted`); `undefined` for a tool that is not installable. */
  readonly config: Config
  /**
   * Stable across re-executions of this call after a crash: the tool's `idempotencyKey(input)`
   * when it declares one, else `<runId>:<toolCallId>`. Use it to make a side effect happen once.
   */
  readonly idempotencyKey: string
  /**
   * The most characters of this call's result the model is shown (a quarter of its context
   * window, at most the config's `toolOutputLimit`): a longer result is cut to its start, with a
   * note. A tool with more to say can fit its answer, and its own note on how to get the rest, in it.
   */
  readonly resultLimit: number
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

/**
 * What makes a capability installable per instance: the schema of the config an installation
 * carries. Fields declared `Schema.Redacted(...)` are secrets: stored encrypted, never shown by
 * the API or written to events.
 */
export interface Installable {
  readonly config: AnySchema
}

/** A tool definition. `R` is the union of the services its `run` requires. */
export interface ToolDefinition<
  I = unknown,
  IE = unknown,
  O = unknown,
  OE = unknown,
  E = unknown,
  R = unknown,
  Config = undefined,
  Context = AnyContext
> extends Branded<"tool"> {
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
  /**
   * Set for a shared tool (`tools/*.tool.ts`) that instances install one by one: it is in an
   * instance's tool list only while installed there, and runs with that installation's config.
   */
  readonly installable: Installable | undefined
  /** The schema of the instance context the tool reads; decoded before each call when set. */
  readonly context: AnySchema | undefined
  readonly run: (input: I, context: ToolRunContext<Config, Context>) => Effect.Effect<O, E, R>
}

/** Any tool, whatever its types. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyTool = ToolDefinition<any, any, any, any, any, any, any, any>

/** The services a tool requires. */
export type ToolRequirements<T> = T extends ToolDefinition<infer _I, infer _IE, infer _O, infer _OE, infer _E, infer R, infer _C, infer _X> ? R
  : never

/** Defines a tool. List every service `run` uses in `requires`; the types hold you to it. */
export const defineTool = <
  I,
  IE,
  O,
  OE,
  E = never,
  const Requires extends ReadonlyArray<AnyTag> = readonly [],
  Config = undefined,
  ConfigEncoded = unknown,
  Context = AnyContext,
  ContextEncoded = unknown
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
  /** Makes a shared tool installable per instance, with a config of this schema. */
  readonly installable?: { readonly config: Schema.Schema<Config, ConfigEncoded> }
  /** The schema of the instance context `run` reads (usually the agent's `context`). */
  readonly context?: Schema.Schema<Context, ContextEncoded>
  readonly run: (
    input: I,
    context: ToolRunContext<Config, Context>
  ) => Effect.Effect<O, E, Tag.Tag.Identifier<Requires[number]>>
}): ToolDefinition<I, IE, O, OE, E, Tag.Tag.Identifier<Requires[number]>, Config, Context> =>
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
    installable: definition.installable,
    context: definition.context,
    run: definition.run
  }, definition)
