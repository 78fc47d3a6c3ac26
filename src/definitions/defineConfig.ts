/**
 * `defineConfig`: the project's `foundry.config.ts`: where runs are stored, where the server
 * listens, the layers that provide what tools require, and the runtime's tunables.
 *
 * The config's shape is one Schema, `ConfigSchema`; its type is the Schema's type. `defineConfig`
 * fills in `defaultConfig` for what a project leaves out, and the router checks the result against
 * the Schema when it loads `foundry.config.ts` (a JavaScript config, or a cast, is not type-checked),
 * so a wrong value stops the build with the file and the field named.
 */
import { type Duration, type Layer, Schema } from "effect"
import {
  type AnyLayer,
  type Budget,
  BudgetSchema,
  type ClusterConfig,
  ClusterConfigSchema,
  DurationInputSchema,
  LayerSchema,
  ModelPriceSchema,
  OriginSchema,
  type PermissionRule,
  PermissionRuleSchema,
  PositiveDuration,
  RedactedConfig,
  type StoreConfig,
  StoreConfigSchema,
  Text,
  Whole,
  WholeAbove0,
  WindowShare
} from "./configFields.js"
import { brand, type Branded } from "./RouteKind.js"
import { McpServersSchema } from "../mcp/McpServerSpec.js"

/**
 * The configuration a project without `foundry.config.ts` gets, and what `defineConfig` fills in
 * for every field a project leaves out (`ShardingConfig.defaults` of `@effect/cluster` in spirit).
 * The README's "Config" section lists the same values.
 */
export const defaultConfig = {
  store: { sqlite: ".foundry/foundry.db" },
  server: {
    port: 4141,
    host: "127.0.0.1",
    /** The largest request body the HTTP server reads, in bytes: 1 MiB. */
    bodyLimit: 1_048_576,
    /** How often an idle SSE stream gets a comment, so proxies and clients keep it open. */
    sseHeartbeat: "15 seconds"
  },
  concurrency: 50,
  maxToolFailures: 3,
  modelRetry: { times: 4, base: "200 millis", max: "10 seconds", idle: "3 minutes" },
  approvalTimeout: "10 minutes",
  toolTimeout: "2 minutes",
  toolOutputLimit: 16_000,
  timers: { minInterval: "1 minute", maxPendingPerInstance: 20 },
  context: { windows: {}, soft: 0.6, hard: 0.8 },
  events: { retention: { maxAge: "30 days" }, pruneEvery: "10 minutes" },
  /** API tokens: required on loopback too when `required`; each token may send `requests` per `per`. */
  auth: { required: false, rateLimit: { requests: 600, per: "1 minute" } },
  /** How long a conversation lease lasts without renewal: a process that stops renewing loses it then. */
  leaseTtl: "3 seconds",
  /** A schedule firing later than `misfireGrace` after its time is a misfire (the process was down). */
  schedules: { misfireGrace: "1 minute" },
  /**
   * Environment scripts' worker threads, shared by every agent instance: `workers` busy at once,
   * up to `maxWorkers` so that an instance with no script running never waits behind others'
   * scripts; `maxMemoryMb` is one script's memory, heap and buffers together.
   */
  scripts: { workers: 4, maxWorkers: 8, maxMemoryMb: 256 },
  /**
   * The images one model request may carry (tool results' screenshots, `view_image`): their bytes
   * as sent (base64) and their number. Past either, the oldest are left out. OpenAI refuses a
   * request over 50 MB or over its count of images.
   */
  images: { maxBytesPerRequest: 12_000_000, maxPerRequest: 50 }
} as const

/** How far a signed webhook delivery's timestamp may be from now, for a webhook that sets no `tolerance`. */
export const defaultWebhookTolerance = "5 minutes"

/** Keeps shortening (`soft`) before summarizing (`hard`). */
const ContextSchema = Schema.Struct({
  windows: Schema.Record({ key: Schema.String, value: WholeAbove0 }),
  soft: WindowShare.annotations({ default: defaultConfig.context.soft }),
  hard: WindowShare.annotations({ default: defaultConfig.context.hard }),
  /** The model that writes summaries (e.g. a cheaper one); the agent's own models when absent, and as its fallbacks. */
  summaryModel: Schema.optional(Schema.String.pipe(
    // As an agent's model is checked: an unknown name would resolve to the offline demo model, whose
    // "summary" echoes the history it was given, with nothing said.
    Schema.filter((model) =>
      model === "demo" || /^openai:.+/.test(model) ||
      `summaryModel "${model}" is not known: use "openai:<model>" (e.g. "openai:gpt-4.1-mini") or "demo"`
    )
  ))
}).pipe(
  Schema.filter((context) =>
    context.soft <= context.hard || `soft (${context.soft}) must not be above hard (${context.hard}): old tool results are shortened before turns are summarized`
  )
)

/** Script workers: `maxWorkers` is a ceiling over `workers`. */
const ScriptsSchema = Schema.Struct({
  /** Threads busy at once before a script of an instance that already has one running waits. */
  workers: WholeAbove0.annotations({ default: defaultConfig.scripts.workers }),
  /** Threads at most: a script of an instance with none running starts one past `workers`, up to this. */
  maxWorkers: WholeAbove0.annotations({ default: defaultConfig.scripts.maxWorkers }),
  /** One script's memory in MB (heap and buffers together); past it the script fails as out of memory. */
  maxMemoryMb: Schema.Int.pipe(Schema.greaterThanOrEqualTo(16, { description: "a whole number of MB, 16 or more" })).annotations({
    default: defaultConfig.scripts.maxMemoryMb
  })
}).pipe(
  Schema.filter((scripts) =>
    scripts.maxWorkers >= scripts.workers ||
    `maxWorkers (${scripts.maxWorkers}) must not be below workers (${scripts.workers}): it is the most threads, workers the ones busy before a second script of an instance waits`
  )
)

/** The shape of a project configuration; every field is documented where `defaultConfig` sets it. */
export const ConfigSchema = Schema.Struct({
  /** Where runs, conversations and events are kept. */
  store: StoreConfigSchema.annotations({ default: defaultConfig.store }),
  /** Where the server listens, and limits of its HTTP transport. */
  server: Schema.Struct({
    port: Schema.Int.pipe(Schema.between(0, 65535, { description: "a port number from 0 to 65535" })).annotations({ default: defaultConfig.server.port }),
    host: Text.annotations({ default: defaultConfig.server.host }),
    bodyLimit: WholeAbove0.annotations({ default: defaultConfig.server.bodyLimit }),
    sseHeartbeat: PositiveDuration.annotations({ default: defaultConfig.server.sseHeartbeat }),
    /**
     * Host names the server also answers to (`name`, or `name:port` for one port), besides its own
     * address, `localhost` and IP addresses at its port: the names it is reached by through DNS or a
     * proxy. Any other `Host` is refused, so that a DNS-rebinding page cannot reach the API.
     */
    allowedHosts: Schema.optional(Schema.Array(Text)),
    /** Browser origins (`https://app.example.com`) besides the server's own that may send requests that change state. */
    allowedOrigins: Schema.optional(Schema.Array(OriginSchema)),
    /** CORS: off unless set; preflights are answered, and responses readable, for these origins only. */
    cors: Schema.optional(Schema.Struct({ origins: Schema.Array(OriginSchema) }))
  }),
  /** The layers that provide what tools require. */
  layers: Schema.Array(LayerSchema),
  /** How many runs may execute at once across all conversations. */
  concurrency: WholeAbove0.annotations({ default: defaultConfig.concurrency }),
  /** Consecutive failed tool calls after which a run fails. */
  maxToolFailures: WholeAbove0.annotations({ default: defaultConfig.maxToolFailures }),
  /** Retries of transient model failures (429, 5xx, network): exponential backoff with jitter. */
  modelRetry: Schema.Struct({
    times: Whole.annotations({ default: defaultConfig.modelRetry.times }),
    base: DurationInputSchema.annotations({ default: defaultConfig.modelRetry.base }),
    max: DurationInputSchema.annotations({ default: defaultConfig.modelRetry.max }),
    /** How long an attempt may wait for the model's next chunk (its first included): past it, the attempt failed (transient). */
    idle: DurationInputSchema.annotations({ default: defaultConfig.modelRetry.idle })
  }),
  /** How long an approval waits for a person before it expires (as denied). */
  approvalTimeout: DurationInputSchema.annotations({ default: defaultConfig.approvalTimeout }),
  /**
   * Rules checked before every tool call, in order; the first that matches decides. A call no
   * rule matches follows its tool's own `approval` policy. Default: none.
   */
  permissions: Schema.Array(PermissionRuleSchema),
  /**
   * MCP servers shared between agents, by name: an agent mounts one with `mcp: { <name>: true }`
   * and gets its tools as `<name>__<tool>`. Default: none.
   */
  mcp: McpServersSchema,
  /**
   * How long a tool call may run when its tool sets no `timeout`. A call that takes longer is
   * interrupted and the model is told it timed out; it counts as a failure for `maxToolFailures`.
   */
  toolTimeout: DurationInputSchema.annotations({ default: defaultConfig.toolTimeout }),
  /**
   * The most characters of one tool result the model is shown; a longer result is cut, with a note
   * saying how much. Events keep the whole output.
   */
  toolOutputLimit: WholeAbove0.annotations({ default: defaultConfig.toolOutputLimit }),
  /** Limits on the timers agents arm with `foundry_schedule` and `foundry_sleep`. */
  timers: Schema.Struct({
    /** The shortest time between two firings of a recurring timer (`every`, or a cron's next two). */
    minInterval: DurationInputSchema.annotations({ default: defaultConfig.timers.minInterval }),
    /** The most active timers one agent instance may have; arming one more is refused. */
    maxPendingPerInstance: Whole.annotations({ default: defaultConfig.timers.maxPendingPerInstance })
  }),
  /**
   * Keeping conversations inside their model's context window: `windows` in tokens by model name
   * (e.g. `"openai:my-model": 32000`; common models are known), and the shares of the window at
   * which old tool results are shortened (`soft`) and older turns are summarized (`hard`).
   */
  context: ContextSchema,
  /**
   * Model prices in USD per million tokens by model name as events show it, e.g.
   * `"openai:my-model": { input: 1, output: 2 }`; added to (and replacing) the known defaults.
   */
  prices: Schema.Record({ key: Schema.String, value: ModelPriceSchema }),
  /** Every agent's budget; an agent's own `budget` replaces these field by field. */
  budget: BudgetSchema,
  /** Per webhook name: the HMAC-SHA256 secret its deliveries must be signed with. */
  webhooks: Schema.Record({
    key: Schema.String,
    value: Schema.Struct({
      secret: Schema.optional(Schema.Union(RedactedConfig, Schema.String)),
      /** How far a signed delivery's `x-foundry-timestamp` may be from now; older (or later) ones are refused. */
      tolerance: Schema.optional(PositiveDuration).annotations({ default: defaultWebhookTolerance }),
      /** Also accept the old signature over the body alone (no timestamp, no event id): replayable, so off by default. */
      legacySignatures: Schema.optional(Schema.Boolean)
    })
  }),
  /** How long events are kept (by age, by count) and how often old ones are pruned. */
  events: Schema.Struct({
    retention: Schema.Struct({
      maxAge: Schema.optional(DurationInputSchema).annotations({ default: defaultConfig.events.retention.maxAge }),
      maxCount: Schema.optional(WholeAbove0)
    }),
    pruneEvery: PositiveDuration.annotations({ default: defaultConfig.events.pruneEvery })
  }),
  /**
   * API tokens (`foundry token create`). A server on an address other than loopback always needs
   * them; `required: true` asks for them on loopback too. Each token may send `rateLimit.requests`
   * requests per `rateLimit.per`; more are answered 429 with `Retry-After`.
   */
  auth: Schema.Struct({
    required: Schema.Boolean.annotations({ default: defaultConfig.auth.required }),
    rateLimit: Schema.Struct({
      requests: WholeAbove0.annotations({ default: defaultConfig.auth.rateLimit.requests }),
      per: PositiveDuration.annotations({ default: defaultConfig.auth.rateLimit.per })
    })
  }),
  /** How long a conversation lease lasts without renewal. */
  leaseTtl: PositiveDuration.annotations({ default: defaultConfig.leaseTtl }),
  /** Schedules: how late a firing may be before its `misfire` policy decides what it becomes. */
  schedules: Schema.Struct({
    misfireGrace: DurationInputSchema.annotations({ default: defaultConfig.schedules.misfireGrace })
  }),
  /**
   * Environment scripts' worker threads: `workers` busy at once, past which only a script of an
   * instance with none running starts another, up to `maxWorkers`; and one script's memory in MB.
   * Read when the server starts.
   */
  scripts: ScriptsSchema,
  /**
   * The images one model request may carry: `maxBytesPerRequest` of them as sent (base64 text),
   * and `maxPerRequest` in number. Past either, the oldest images of the conversation are left out
   * of the request (the newest kept), each place saying so.
   */
  images: Schema.Struct({
    maxBytesPerRequest: WholeAbove0.annotations({ default: defaultConfig.images.maxBytesPerRequest }),
    maxPerRequest: WholeAbove0.annotations({ default: defaultConfig.images.maxPerRequest })
  }),
  /**
   * Running as one runner of a cluster (several processes on one PostgreSQL store; see the
   * README's "Cluster"). Absent: a single process. `foundry start --cluster` turns it on too.
   */
  cluster: Schema.optional(ClusterConfigSchema)
}).annotations({ identifier: "Config", description: "a Foundry project configuration (foundry.config.ts)" })

/** The fields of a project configuration, every one set. */
export type ConfigFields = typeof ConfigSchema.Type

/**
 * A project configuration. `Provides` is the union of the services its layers provide, kept for
 * the generated requirement check.
 */
export interface ConfigDefinition<Provides = unknown> extends ConfigFields, Branded<"config"> {
  /** Type-level only: never set at run time. */
  readonly provides?: () => Provides
}

/** The services a config's layers provide. */
export type ProvidedBy<C> = C extends ConfigDefinition<infer Provides> ? Provides : never

/**
 * The services a union of layers provides, layer by layer; none for no layers. (`Layer.Success` of
 * the union would infer an intersection, a layer's output being contravariant, which two services
 * make `never`.)
 */
type ServicesOf<L extends AnyLayer> = L extends Layer.Layer<infer Out, infer _E, infer _In> ? Out : never

// Not type guards on purpose: a JavaScript config may hold anything there, and what is not a list
// or an object is passed on as it is, for the check at load to name.
const isList = (value: unknown): boolean => Array.isArray(value)
const isObject = (value: unknown): boolean => typeof value === "object" && value !== null

/** A frozen copy of a list, `[]` when there is none. */
const listOf = <A>(given: ReadonlyArray<A> | undefined): ReadonlyArray<A> =>
  given === undefined ? [] : isList(given) ? Object.freeze([...given]) : given

/** A copy of an object, `{}` when there is none. */
const copyOf = <A extends object>(given: A | undefined, empty: A): A =>
  given === undefined ? empty : isObject(given) ? { ...given } : given

/**
 * Defines the project configuration. Every field is optional: what is left out (or `undefined`)
 * gets its value from `defaultConfig`. Fields it does not know are kept, so that loading the
 * config can name them rather than ignore a misspelt one.
 */
export const defineConfig = <const Layers extends ReadonlyArray<AnyLayer>>(definition: {
  readonly store?: StoreConfig
  readonly server?: Partial<ConfigFields["server"]>
  // A tuple, so that each layer keeps its own type: a union of them would be reduced to the
  // widest (one that provides nothing takes every other in).
  readonly layers?: Layers
  readonly concurrency?: number
  readonly maxToolFailures?: number
  readonly modelRetry?: Partial<ConfigFields["modelRetry"]>
  readonly approvalTimeout?: Duration.DurationInput
  readonly permissions?: ReadonlyArray<PermissionRule>
  readonly mcp?: ConfigFields["mcp"]
  readonly toolTimeout?: Duration.DurationInput
  readonly toolOutputLimit?: number
  readonly timers?: Partial<ConfigFields["timers"]>
  readonly context?: Partial<ConfigFields["context"]>
  readonly prices?: ConfigFields["prices"]
  readonly budget?: Budget
  readonly webhooks?: ConfigFields["webhooks"]
  readonly events?: {
    readonly retention?: ConfigFields["events"]["retention"]
    readonly pruneEvery?: Duration.DurationInput
  }
  readonly auth?: {
    readonly required?: boolean
    readonly rateLimit?: Partial<ConfigFields["auth"]["rateLimit"]>
  }
  readonly leaseTtl?: Duration.DurationInput
  readonly schedules?: Partial<ConfigFields["schedules"]>
  readonly scripts?: Partial<ConfigFields["scripts"]>
  readonly images?: Partial<ConfigFields["images"]>
  readonly cluster?: ClusterConfig
}): ConfigDefinition<ServicesOf<Layers[number]>> => {
  const { context, events, images, modelRetry, schedules, scripts, server, timers } = definition
  return brand("config", {
    ...definition,
    store: definition.store ?? defaultConfig.store,
    server: {
      ...server,
      port: server?.port ?? defaultConfig.server.port,
      host: server?.host ?? defaultConfig.server.host,
      bodyLimit: server?.bodyLimit ?? defaultConfig.server.bodyLimit,
      sseHeartbeat: server?.sseHeartbeat ?? defaultConfig.server.sseHeartbeat
    },
    layers: listOf(definition.layers),
    concurrency: definition.concurrency ?? defaultConfig.concurrency,
    maxToolFailures: definition.maxToolFailures ?? defaultConfig.maxToolFailures,
    modelRetry: {
      ...modelRetry,
      times: modelRetry?.times ?? defaultConfig.modelRetry.times,
      base: modelRetry?.base ?? defaultConfig.modelRetry.base,
      max: modelRetry?.max ?? defaultConfig.modelRetry.max,
      idle: modelRetry?.idle ?? defaultConfig.modelRetry.idle
    },
    approvalTimeout: definition.approvalTimeout ?? defaultConfig.approvalTimeout,
    permissions: listOf(definition.permissions),
    mcp: copyOf(definition.mcp, {}),
    toolTimeout: definition.toolTimeout ?? defaultConfig.toolTimeout,
    toolOutputLimit: definition.toolOutputLimit ?? defaultConfig.toolOutputLimit,
    timers: {
      ...timers,
      minInterval: timers?.minInterval ?? defaultConfig.timers.minInterval,
      maxPendingPerInstance: timers?.maxPendingPerInstance ?? defaultConfig.timers.maxPendingPerInstance
    },
    context: {
      ...context,
      windows: copyOf(context?.windows, defaultConfig.context.windows),
      soft: context?.soft ?? defaultConfig.context.soft,
      hard: context?.hard ?? defaultConfig.context.hard
    },
    prices: copyOf(definition.prices, {}),
    budget: copyOf(definition.budget, {}),
    webhooks: copyOf(definition.webhooks, {}),
    events: {
      ...events,
      // Given retention fields replace the default ones; an explicit `maxAge: undefined` lifts the age limit.
      retention: { maxAge: defaultConfig.events.retention.maxAge, ...events?.retention },
      pruneEvery: events?.pruneEvery ?? defaultConfig.events.pruneEvery
    },
    auth: {
      ...definition.auth,
      required: definition.auth?.required ?? defaultConfig.auth.required,
      rateLimit: {
        ...definition.auth?.rateLimit,
        requests: definition.auth?.rateLimit?.requests ?? defaultConfig.auth.rateLimit.requests,
        per: definition.auth?.rateLimit?.per ?? defaultConfig.auth.rateLimit.per
      }
    },
    leaseTtl: definition.leaseTtl ?? defaultConfig.leaseTtl,
    schedules: {
      ...schedules,
      misfireGrace: schedules?.misfireGrace ?? defaultConfig.schedules.misfireGrace
    },
    scripts: {
      ...scripts,
      workers: scripts?.workers ?? defaultConfig.scripts.workers,
      // A project that raises `workers` alone gets a ceiling that is not below it.
      maxWorkers: scripts?.maxWorkers ?? Math.max(defaultConfig.scripts.maxWorkers, scripts?.workers ?? 0),
      maxMemoryMb: scripts?.maxMemoryMb ?? defaultConfig.scripts.maxMemoryMb
    },
    images: {
      ...images,
      maxBytesPerRequest: images?.maxBytesPerRequest ?? defaultConfig.images.maxBytesPerRequest,
      maxPerRequest: images?.maxPerRequest ?? defaultConfig.images.maxPerRequest
    }
  })
}
