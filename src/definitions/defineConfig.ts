/**
 * `defineConfig`: the project's `foundry.config.ts`: where runs are stored, where the server
 * listens, and the layers that provide what tools require.
 */
import type { Config, Duration, Layer, Redacted } from "effect"
import type { ModelPrice } from "../models/prices.js"
import { brand, type Branded } from "./RouteKind.js"

/** Any layer. `Layer` is contravariant in its input, so only `any` accepts every layer. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type AnyLayer = Layer.Layer<any, any, any>

/** Where runs, conversations and events are kept. */
export type StoreConfig =
  | { readonly sqlite: string }
  | { readonly postgres: Config.Config<Redacted.Redacted> | string }

/**
 * Spending limits. Per run (`maxTokensPerRun`, `maxCostPerRun`) and per agent instance per UTC day
 * (`maxTokensPerInstancePerDay`, `maxCostPerInstancePerDay`, summed over the instance's runs
 * started that day). Tokens are input plus output; costs are USD from the price table. A run that
 * goes over one fails, with a message naming the budget and the file to raise it in.
 */
export interface Budget {
  readonly maxTokensPerRun?: number | undefined
  readonly maxCostPerRun?: number | undefined
  readonly maxTokensPerInstancePerDay?: number | undefined
  readonly maxCostPerInstancePerDay?: number | undefined
}

/**
 * One permission rule: what happens to calls of the tools whose model-facing name matches `tool`,
 * made by the agents whose id matches `agent` (every agent when absent). Both are globs: `*`
 * matches any run of characters, `/` included. `allow` runs the call without asking, even when
 * the tool's `approval` says to; `ask` asks a person first, even when the tool says `"never"`;
 * `deny` never runs it and tells the model `denied by the project's permission rules: <reason>`.
 */
export interface PermissionRule {
  readonly agent?: string | undefined
  readonly tool: string
  readonly action: "allow" | "ask" | "deny"
  readonly reason?: string | undefined
}

/**
 * A project configuration. `Provides` is the union of the services its layers provide, kept for
 * the generated requirement check.
 */
export interface ConfigDefinition<Provides = unknown> extends Branded<"config"> {
  readonly store: StoreConfig
  readonly server: { readonly port: number; readonly host: string }
  readonly layers: ReadonlyArray<AnyLayer>
  /** Type-level only: never set at run time. */
  readonly provides?: () => Provides
  /** How many runs may execute at once across all conversations. */
  readonly concurrency: number
  /** Consecutive failed tool calls after which a run fails. */
  readonly maxToolFailures: number
  /** Retries of transient model failures (429, 5xx, network): exponential backoff with jitter. */
  readonly modelRetry: { readonly times: number; readonly base: Duration.DurationInput; readonly max: Duration.DurationInput }
  /** How long an approval waits for a person before it expires (as denied). */
  readonly approvalTimeout: Duration.DurationInput
  /**
   * Rules checked before every tool call, in order; the first that matches decides. A call no
   * rule matches follows its tool's own `approval` policy. Default: none.
   */
  readonly permissions: ReadonlyArray<PermissionRule>
  /**
   * How long a tool call may run when its tool sets no `timeout`. A call that takes longer is
   * interrupted and the model is told it timed out; it counts as a failure for `maxToolFailures`.
   */
  readonly toolTimeout: Duration.DurationInput
  /**
   * The most characters of one tool result the model is shown; a longer result is cut, with a note
   * saying how much. Events keep the whole output.
   */
  readonly toolOutputLimit: number
  /** Limits on the timers agents arm with `foundry_schedule` and `foundry_sleep`. */
  readonly timers: {
    /** The shortest time between two firings of a recurring timer (`every`, or a cron's next two). */
    readonly minInterval: Duration.DurationInput
    /** The most active timers one agent instance may have; arming one more is refused. */
    readonly maxPendingPerInstance: number
  }
  /**
   * Keeping conversations inside their model's context window: `windows` in tokens by model name
   * (e.g. `"openai:my-model": 32000`; common models are known), and the shares of the window at
   * which old tool results are shortened (`soft`) and older turns are summarized (`hard`).
   */
  readonly context: {
    readonly windows: Readonly<Record<string, number>>
    readonly soft: number
    readonly hard: number
  }
  /**
   * Model prices in USD per million tokens by model name as events show it, e.g.
   * `"openai:my-model": { input: 1, output: 2 }`; added to (and replacing) the known defaults.
   */
  readonly prices: Readonly<Record<string, ModelPrice>>
  /** Every agent's budget; an agent's own `budget` replaces these field by field. */
  readonly budget: Budget
  /** Per webhook name: the HMAC-SHA256 secret its deliveries must be signed with. */
  readonly webhooks: Readonly<Record<string, { readonly secret?: Config.Config<Redacted.Redacted> | string }>>
  /** How long events are kept (by age, by count) and how often old ones are pruned. */
  readonly events: {
    readonly retention: { readonly maxAge?: Duration.DurationInput; readonly maxCount?: number }
    readonly pruneEvery: Duration.DurationInput
  }
}

/** The services a config's layers provide. */
export type ProvidedBy<C> = C extends ConfigDefinition<infer Provides> ? Provides : never

/** The services a union of layers provides; none for no layers. */
type ServicesOf<L extends AnyLayer> = [L] extends [never] ? never : Layer.Layer.Success<L>

/** The configuration a project without `foundry.config.ts` gets. */
export const defaultConfig = {
  store: { sqlite: ".foundry/foundry.db" },
  server: { port: 4141, host: "127.0.0.1" },
  concurrency: 50,
  maxToolFailures: 3,
  modelRetry: { times: 4, base: "200 millis", max: "10 seconds" },
  approvalTimeout: "10 minutes",
  toolTimeout: "2 minutes",
  toolOutputLimit: 16_000,
  timers: { minInterval: "1 minute", maxPendingPerInstance: 20 },
  context: { windows: {}, soft: 0.6, hard: 0.8 },
  events: { retention: { maxAge: "30 days" }, pruneEvery: "10 minutes" }
} as const

/** Defines the project configuration. */
export const defineConfig = <L extends AnyLayer = never>(definition: {
  readonly store?: StoreConfig
  readonly server?: { readonly port?: number; readonly host?: string }
  readonly layers?: ReadonlyArray<L>
  readonly concurrency?: number
  readonly maxToolFailures?: number
  readonly modelRetry?: Partial<ConfigDefinition["modelRetry"]>
  readonly approvalTimeout?: Duration.DurationInput
  readonly permissions?: ReadonlyArray<PermissionRule>
  readonly toolTimeout?: Duration.DurationInput
  readonly toolOutputLimit?: number
  readonly timers?: Partial<ConfigDefinition["timers"]>
  readonly context?: Partial<ConfigDefinition["context"]>
  readonly prices?: ConfigDefinition["prices"]
  readonly budget?: Budget
  readonly webhooks?: ConfigDefinition["webhooks"]
  readonly events?: {
    readonly retention?: { readonly maxAge?: Duration.DurationInput; readonly maxCount?: number }
    readonly pruneEvery?: Duration.DurationInput
  }
}): ConfigDefinition<ServicesOf<L>> =>
  brand("config", {
    store: definition.store ?? defaultConfig.store,
    server: {
      port: definition.server?.port ?? defaultConfig.server.port,
      host: definition.server?.host ?? defaultConfig.server.host
    },
    layers: Object.freeze([...(definition.layers ?? [])]),
    concurrency: definition.concurrency ?? defaultConfig.concurrency,
    maxToolFailures: definition.maxToolFailures ?? defaultConfig.maxToolFailures,
    modelRetry: { ...defaultConfig.modelRetry, ...definition.modelRetry },
    approvalTimeout: definition.approvalTimeout ?? defaultConfig.approvalTimeout,
    permissions: Object.freeze([...(definition.permissions ?? [])]),
    toolTimeout: definition.toolTimeout ?? defaultConfig.toolTimeout,
    toolOutputLimit: definition.toolOutputLimit ?? defaultConfig.toolOutputLimit,
    timers: { ...defaultConfig.timers, ...definition.timers },
    context: { ...defaultConfig.context, ...definition.context },
    prices: { ...definition.prices },
    budget: { ...definition.budget },
    webhooks: { ...definition.webhooks },
    events: {
      retention: { maxAge: defaultConfig.events.retention.maxAge, ...definition.events?.retention },
      pruneEvery: definition.events?.pruneEvery ?? defaultConfig.events.pruneEvery
    }
  })
