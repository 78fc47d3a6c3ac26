/**
 * The values a project's configuration takes for what it leaves out: the whole configuration of a
 * project without `foundry.config.ts`, and the defaults `defineConfig` and the config's Schema fill in.
 */

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
