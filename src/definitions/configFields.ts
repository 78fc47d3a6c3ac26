/**
 * The field schemas of `foundry.config.ts`: durations, counts, origins, the store, budgets,
 * permission rules and a cluster runner's settings, each with the description a wrong value is
 * reported with. `defineConfig` assembles them into the config's Schema.
 */
import { Config, Duration, Layer, Option, type Redacted, Schema } from "effect"

/**
 * Any layer. A layer's output is contravariant in its type, so `never` there accepts every layer
 * (`any` refused one that provides nothing, `Layer<never, never, never>`); its error and input are
 * covariant, so only `any` accepts every one.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyLayer = Layer.Layer<never, any, any>

/** Whether a duration was written negative: Effect reads those as zero, which nobody means. */
const isNegative = (input: unknown): boolean =>
  typeof input === "number"
    ? !(input >= 0)
    : typeof input === "bigint"
    ? input < 0n
    : typeof input === "string"
    ? input.startsWith("-")
    : Array.isArray(input) && input.some((part) => !(typeof part === "number" && part >= 0))

/** A duration as Effect reads it: `"30 seconds"`, `"10 minutes"`, milliseconds as a number, or a `Duration`. */
export const DurationInputSchema = Schema.declare(
  (input: unknown): input is Duration.DurationInput => !isNegative(input) && Option.isSome(Duration.decodeUnknown(input)),
  {
    identifier: "DurationInput",
    description: `a duration such as "30 seconds" or "10 minutes" (or milliseconds as a number), not negative`
  }
)

/** A duration as the user wrote it when it is text ("30 seconds"), else formatted ("1m 30s"). */
export const durationText = (duration: Duration.DurationInput): string =>
  typeof duration === "string" ? duration : Duration.format(Duration.decode(duration))

/** A duration above zero, for what must pass before something happens again (a lease, a heartbeat). */
export const PositiveDuration = DurationInputSchema.pipe(
  Schema.filter((input) => Duration.greaterThan(Duration.decode(input), Duration.zero), {
    description: `a duration above zero such as "3 seconds" or "10 minutes"`
  })
)

export const WholeAbove0 = Schema.Int.pipe(Schema.positive({ description: "a whole number above 0" }))
export const Whole = Schema.Int.pipe(Schema.nonNegative({ description: "a whole number, 0 or more" }))
const Amount = Schema.Number.pipe(Schema.finite(), Schema.nonNegative({ description: "a number, 0 or more" }))
export const Text = Schema.String.pipe(Schema.minLength(1, { description: "a non-empty string" }))

/**
 * A browser origin: scheme, host and port, as a browser sends it in `Origin`. Checked by pattern,
 * not with `URL`: route files are type-checked without the DOM's or Node's globals.
 */
export const OriginSchema = Schema.String.pipe(
  Schema.filter((input) => /^https?:\/\/[a-z0-9.-]+(:\d{1,5})?$/.test(input) || /^https?:\/\/\[[0-9a-f:.]+\](:\d{1,5})?$/.test(input), {
    description: `an origin such as "https://app.example.com" (scheme, host and port only, no trailing slash)`
  })
)

/** A layer the config's `layers` list holds. */
export const LayerSchema = Schema.declare((input: unknown): input is AnyLayer => Layer.isLayer(input), {
  identifier: "Layer",
  description: "an Effect Layer"
})

/**
 * A secret or URL read from the environment when it is needed. A `Config`'s value type cannot be
 * seen at run time: that it yields a `Redacted` is what the TypeScript signature checks.
 */
export const RedactedConfig = Schema.declare(
  (input: unknown): input is Config.Config<Redacted.Redacted> => Config.isConfig(input),
  { identifier: "Config", description: `a Config value such as Config.redacted("DATABASE_URL")` }
)

/**
 * How long a PostgreSQL store may take to connect, and a query to get a pooled connection, when
 * `store.connectTimeout` does not say: past it, the server stops with an error naming the address.
 */
export const defaultStoreConnectTimeout = "30 seconds"

/**
 * The most connections a process keeps open on a PostgreSQL store when `store.maxConnections` does
 * not say: a pool of 10 for reads and the storages (node-postgres's default), the group commit's
 * writer, and the one that listens for other processes' events.
 */
export const defaultStoreMaxConnections = 12

/**
 * The fewest a process can work with: the writer, the listener, and a pool of two, of which a
 * cluster runner's shard locks hold one for as long as it runs.
 */
export const fewestStoreConnections = 4

/** Where runs, conversations and events are kept. */
export const StoreConfigSchema = Schema.Union(
  Schema.Struct({ sqlite: Text }),
  Schema.Struct({
    postgres: Schema.Union(RedactedConfig, Text),
    /**
     * How long to wait for the database to answer a connection (at start, and for each pooled one),
     * and a statement before the server is asked whether it is still at work on it; 30 seconds when absent.
     */
    connectTimeout: Schema.optional(PositiveDuration),
    /**
     * The most connections this process keeps open on the database: its pool (this less two), the
     * group commit's writer and the listener; at least 4, 12 when absent.
     */
    maxConnections: Schema.optional(Schema.Int.pipe(Schema.greaterThanOrEqualTo(fewestStoreConnections)))
  })
).annotations({
  identifier: "StoreConfig",
  // One line for the whole union: which member the value meant is anyone's guess.
  message: () => ({
    message: `expected { sqlite: "<file>" } or { postgres: "<url>" } (or postgres: Config.redacted("DATABASE_URL")), ` +
      `with PostgreSQL's connectTimeout, if given, a duration above zero such as "30 seconds", ` +
      `and maxConnections, if given, a whole number of at least ${fewestStoreConnections} (${defaultStoreMaxConnections} when absent)`,
    override: true
  })
})

/** Where runs, conversations and events are kept. */
export type StoreConfig = typeof StoreConfigSchema.Type

/** USD per million tokens: input, output, and (optional) input served from the provider's prompt cache. */
export const ModelPriceSchema = Schema.Struct({ input: Amount, output: Amount, cached: Schema.optional(Amount) })

/**
 * Spending limits. Per run (`maxTokensPerRun`, `maxCostPerRun`) and per agent instance per UTC day
 * (`maxTokensPerInstancePerDay`, `maxCostPerInstancePerDay`, summed over the instance's runs
 * started that day). Tokens are input plus output; costs are USD from the price table. A run that
 * goes over one fails, with a message naming the budget and the file to raise it in.
 */
export const BudgetSchema = Schema.Struct({
  maxTokensPerRun: Schema.optional(Whole),
  maxCostPerRun: Schema.optional(Amount),
  maxTokensPerInstancePerDay: Schema.optional(Whole),
  maxCostPerInstancePerDay: Schema.optional(Amount),
  /**
   * What going over a budget does: `"fail"` (the default) fails the run; `"ask"` suspends it on an
   * approval (tool `budget:<name>`), and a person lets it go on over that budget or ends it.
   */
  onExceeded: Schema.optional(Schema.Literal("fail", "ask"))
}).annotations({ identifier: "Budget" })

/** Spending limits, per run and per agent instance per UTC day. */
export type Budget = typeof BudgetSchema.Type

/**
 * One permission rule: what happens to calls of the tools whose model-facing name matches `tool`,
 * made by the agents whose id matches `agent` (every agent when absent). Both are globs: `*`
 * matches any run of characters, `/` included. `allow` runs the call without asking, even when
 * the tool's `approval` says to; `ask` asks a person first, even when the tool says `"never"`;
 * `deny` never runs it and tells the model `denied by the project's permission rules: <reason>`.
 */
export const PermissionRuleSchema = Schema.Struct({
  agent: Schema.optional(Text),
  tool: Text,
  action: Schema.Literal("allow", "ask", "deny"),
  reason: Schema.optional(Schema.String)
}).annotations({ identifier: "PermissionRule" })

/** One permission rule. */
export type PermissionRule = typeof PermissionRuleSchema.Type

/** A share of a model's context window. */
export const WindowShare = Schema.Number.pipe(
  Schema.greaterThan(0),
  Schema.lessThanOrEqualTo(1, { description: "a share of the context window, above 0 and at most 1 (e.g. 0.6)" })
)


/**
 * A cluster runner's settings: the address other runners reach it at (`host`, `port`), the number
 * of shards conversations are spread over (the same on every runner), and how long a runner that
 * stopped renewing its registration keeps its shards (the failover delay).
 */
export const ClusterConfigSchema = Schema.Struct({
  host: Schema.optional(Text),
  port: Schema.optional(Schema.Int.pipe(Schema.between(1, 65535, { description: "a port number from 1 to 65535" }))),
  shardsPerGroup: Schema.optional(WholeAbove0),
  runnerTimeout: Schema.optional(PositiveDuration),
  /**
   * Runners talk to each other without authentication: a runner listens beyond loopback only when
   * this says the network between them is private.
   */
  trustedNetwork: Schema.optional(Schema.Boolean)
}).annotations({ identifier: "ClusterConfig" })

/** A cluster runner's settings, as written. */
export type ClusterConfig = typeof ClusterConfigSchema.Type
