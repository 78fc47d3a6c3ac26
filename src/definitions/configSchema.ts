/**
 * The shape of a project configuration as one Schema, `ConfigSchema`, its type the configuration's
 * fields: what the router checks a loaded `foundry.config.ts` against (a JavaScript config, or a
 * cast, is not type-checked), so a wrong value stops the build with the file and the field named.
 */
import { Schema } from "effect"
import { McpServersSchema } from "../mcp/McpServerSpec.js"
import {
  BudgetSchema,
  ClusterConfigSchema,
  DurationInputSchema,
  LayerSchema,
  ModelPriceSchema,
  OriginSchema,
  PermissionRuleSchema,
  PositiveDuration,
  RedactedConfig,
  StoreConfigSchema,
  Text,
  Whole,
  WholeAbove0,
  WindowShare
} from "./configFields.js"
import { defaultConfig, defaultWebhookTolerance } from "./configDefaults.js"

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
