/**
 * `defineConfig`: the project's `foundry.config.ts`: where runs are stored, where the server
 * listens, the layers that provide what tools require, and the runtime's tunables.
 *
 * The config's shape is one Schema, `ConfigSchema` (configSchema.ts); its type is the Schema's
 * type. `defineConfig` fills in `defaultConfig` (configDefaults.ts) for what a project leaves out,
 * and the router checks the result against
 * the Schema when it loads `foundry.config.ts` (a JavaScript config, or a cast, is not type-checked),
 * so a wrong value stops the build with the file and the field named.
 */
import type { Duration, Layer } from "effect"
import { defaultConfig } from "./configDefaults.js"
import type { AnyLayer, Budget, ClusterConfig, PermissionRule, StoreConfig } from "./configFields.js"
import type { ConfigFields } from "./configSchema.js"
import { brand, type Branded } from "./RouteKind.js"

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
