/**
 * The runtime of one project: store, event log, models, dispatcher, and optionally the HTTP
 * server, composed as layers around a compiled app. `foundry dev`, `foundry start`, `foundry run`
 * and the end-to-end tests all start a project through here.
 */
import { isAbsolute, join } from "node:path"
import * as NodeContext from "@effect/platform-node/NodeContext"
import type { FileSystem, Path } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import * as Auth from "../auth/Auth.js"
import * as TokenRevocations from "../auth/TokenRevocations.js"
import * as TokenStorage from "../auth/TokenStorage.js"
import { type ConfigError, Context, type Duration, Effect, Layer, type Redacted } from "effect"
import { type ClusterConfig, defaultStoreConnectTimeout } from "../definitions/configFields.js"
import * as BuildStatus from "../compiler/BuildStatus.js"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import * as CurrentApp from "../compiler/CurrentApp.js"
import { ClusterError, type ClusterSettings } from "../dispatch/ClusterSettings.js"
import * as ClusterStatus from "../dispatch/ClusterStatus.js"
import { Dispatcher } from "../dispatch/Dispatcher.js"
import * as LocalDispatcher from "../dispatch/LocalDispatcher.js"
import * as Singletons from "../dispatch/Singletons.js"
import type { SqlClient } from "@effect/sql"
import type { Database } from "../durable/Database.js"
import { publicUrl } from "../durable/publicUrl.js"
import { storeAddress, waitingSaid } from "./storeWait.js"
import * as SqliteDatabase from "../durable/SqliteDatabase.js"
import * as ActivationStorage from "../durable/ActivationStorage.js"
import * as ApprovalStorage from "../durable/ApprovalStorage.js"
import * as DeliveryStorage from "../durable/DeliveryStorage.js"
import { SqlEnvironmentStorage } from "../durable/EnvironmentStorage.js"
import * as InstanceStorage from "../durable/InstanceStorage.js"
import * as SqlStore from "../durable/SqlStore.js"
import { StoreError } from "../durable/StoreError.js"
import * as EventLog from "../events/EventLog.js"
import * as EventStorage from "../events/EventStorage.js"
import * as RunJournal from "../journal/RunJournal.js"
import * as McpClients from "../mcp/McpClients.js"
import * as Deployments from "../release/Deployments.js"
import * as Releases from "../release/Releases.js"
import * as ReleaseStorage from "../release/ReleaseStorage.js"
import * as Instances from "../instances/Instances.js"
import * as Environments from "../environments/Environments.js"
import * as ScriptRunner from "../environments/script/ScriptRunner.js"
import * as SecretBox from "../instances/SecretBox.js"
import { secretKeyCheck } from "../instances/secretKeyCheck.js"
import { OtlpExportLive } from "../events/OtlpExport.js"
import type { ModelResolver } from "../models/Model.js"
import { ModelResolverLive } from "../models/ModelResolverLive.js"
import * as HttpServerLive from "../transports/http/HttpServerLive.js"
import { SchedulesLive } from "../triggers/Schedules.js"
import { WebhooksLive } from "../triggers/Webhooks.js"

/**
 * Where the project's store lives, fit to print: the config's SQLite path (relative to the project
 * folder), or the PostgreSQL URL without its password.
 */
export const storeFileOf = (app: CompiledApp): string => {
  const store = app.table.config.store
  if (!("sqlite" in store)) return typeof store.postgres === "string" ? publicUrl(store.postgres) : "postgres (URL from config)"
  return store.sqlite === ":memory:" || isAbsolute(store.sqlite) ? store.sqlite : join(app.table.root, store.sqlite)
}

/**
 * PostgreSQL at `url`, waiting at most `connectTimeout` for it to answer (and saying so while it
 * waits), with at most `maxConnections` open; its client is loaded only by a process whose store
 * is PostgreSQL.
 */
const postgresLayer = (url: Redacted.Redacted | string, connectTimeout: Duration.DurationInput, maxConnections: number | undefined, configFile: string) =>
  waitingSaid(
    Layer.unwrapEffect(Effect.map(Effect.promise(() => import("../durable/PgDatabase.js")), (pg) => pg.layer(url, connectTimeout, maxConnections))),
    storeAddress(url),
    connectTimeout,
    configFile
  )

/**
 * The database the config asks for: SQLite on its file, or PostgreSQL at its URL (a `Config` is
 * read when the layer is built; when it cannot be, the error names the config file and the key).
 * A `storeFile` override always means SQLite on that file.
 */
export const databaseLayer = (
  app: CompiledApp,
  storeFile: string | undefined
): Layer.Layer<Database | SqlClient.SqlClient, StoreError | ConfigError.ConfigError | PlatformError, FileSystem.FileSystem | Path.Path> => {
  const store = app.table.config.store
  if (storeFile !== undefined || "sqlite" in store) return SqliteDatabase.layer(storeFile ?? storeFileOf(app))
  const url = store.postgres
  const configFile = app.table.configFile ?? "foundry.config.ts"
  const connectTimeout = store.connectTimeout ?? defaultStoreConnectTimeout
  if (typeof url === "string") return postgresLayer(url, connectTimeout, store.maxConnections, configFile)
  return Layer.unwrapEffect(
    url.pipe(
      Effect.map((read) => postgresLayer(read, connectTimeout, store.maxConnections, configFile)),
      // A redacted Config's own message is "<redacted>"; its string form names the missing key.
      Effect.mapError((error) =>
        new StoreError({
          operation: "config",
          message: `${app.table.configFile ?? "foundry.config.ts"}: store: { postgres }: cannot read the URL: ${String(error)}`
        })
      )
    )
  )
}

/** Options for a project runtime. */
export interface RuntimeOptions {
  /** Runs as a cluster runner with these settings over the config's `cluster` (`foundry start --cluster`). */
  readonly cluster?: ClusterConfig | undefined
  /**
   * A one-shot command (`foundry run`): never a cluster runner, whatever the config's `cluster`.
   * As one it would take the runner's port (refused beside a runner on the machine) and shards of
   * the cluster's conversations for the moment it lives; its own run is fenced by its lease alone.
   */
  readonly oneShot?: boolean
  /** Overrides the config's store file (tests use a temporary one). */
  readonly storeFile?: string
  /** Replaces the default model resolver (tests run every agent on a scripted model). */
  readonly models?: Layer.Layer<ModelResolver>
  /** Overrides how MCP connections are kept (tests close idle ones sooner). */
  readonly mcp?: Partial<McpClients.McpClientsOptions>
  /**
   * How releases are served: `foundry start` pins each run to its release and takes deploys;
   * without it every run goes on the current app.
   */
  readonly releases?: Releases.ReleasesOptions
  /** How long an idle environment keeps its tree in memory and its script worker (tests and benchmarks shorten them). */
  readonly environments?: { readonly sessionIdle?: Duration.DurationInput; readonly workerIdleMs?: number }
}

/** The cluster settings when this process is a cluster runner: the config's, under the command line's. */
export const clusterSettingsOf = (app: CompiledApp, options: RuntimeOptions): ClusterSettings | undefined => {
  const given = app.table.config.cluster
  if (options.oneShot === true || (given === undefined && options.cluster === undefined)) return undefined
  const merged = { ...given, ...options.cluster }
  return {
    host: merged.host ?? "127.0.0.1",
    port: merged.port ?? 34431,
    shardsPerGroup: merged.shardsPerGroup ?? 300,
    runnerTimeout: merged.runnerTimeout ?? "6 seconds",
    trustedNetwork: merged.trustedNetwork ?? false
  }
}

/**
 * Who executes runs: this process alone, or, as a cluster runner, the runner that owns the run's
 * conversation. A cluster needs PostgreSQL: the runners share its tables and its locks.
 */
const dispatchLayer = (
  app: CompiledApp,
  options: RuntimeOptions
): Layer.Layer<
  Dispatcher | ClusterStatus.ClusterStatus | Singletons.Singletons,
  ClusterError,
  Layer.Layer.Context<ReturnType<typeof LocalDispatcher.layer>> | Database | SqlClient.SqlClient
> => {
  const executor = { concurrency: app.table.config.concurrency, leaseTtl: app.table.config.leaseTtl }
  const cluster = clusterSettingsOf(app, options)
  if (cluster === undefined) return Layer.mergeAll(LocalDispatcher.layer(executor), ClusterStatus.layerLocal, Singletons.layerLocal)
  if (options.storeFile !== undefined || "sqlite" in app.table.config.store) {
    return Layer.fail(new ClusterError({
      message: `a cluster needs a PostgreSQL store shared by its runners: set store: { postgres: "<url>" } in ${app.table.configFile ?? "foundry.config.ts"}`
    }))
  }
  // Loaded only by a runner: a process on its own never needs `@effect/cluster` and its sockets.
  return Layer.unwrapEffect(Effect.map(
    Effect.promise(() => import("../dispatch/ClusterDispatcher.js")),
    (dispatcher) => dispatcher.layer({ ...executor, cluster }).pipe(Layer.provide(dispatcher.shardingLayer(cluster)))
  ))
}

/** Everything but the HTTP server. */
export const runtimeLayer = (app: CompiledApp, options: RuntimeOptions = {}) =>
  WebhooksLive.pipe(
    Layer.provideMerge(dispatchLayer(app, options)),
    Layer.provideMerge(Releases.layer(options.releases)),
    Layer.provideMerge(RunJournal.layer),
    Layer.provideMerge(Instances.layer),
    Layer.provideMerge(Environments.layer({ idleTimeToLive: options.environments?.sessionIdle }).pipe(
      Layer.provideMerge(ScriptRunner.ScriptRunnerLive({ ...app.table.config.scripts, idleMs: options.environments?.workerIdleMs })),
      // Scripts reach the agent's MCP servers through the same connections its runs use.
      Layer.provideMerge(McpClients.layer(options.mcp))
    )),
    Layer.provideMerge(secretKeyCheck),
    Layer.provideMerge(SecretBox.layer(app.table.root, { shared: options.storeFile === undefined && !("sqlite" in app.table.config.store) })),
    // Events carry the release of the run they belong to, else of the build serving when they happen.
    Layer.provideMerge(Layer.unwrapEffect(Effect.map(CurrentApp.CurrentApp, (current) =>
      EventLog.layer({
        ...app.table.config.events,
        release: Releases.releaseOfWork(current),
        // Other processes on the store (another server, `foundry run`, a cluster's runners) write
        // events for the followers here; a cluster's runners share every conversation's, so more often.
        crossProcess: { pollEvery: clusterSettingsOf(app, options) === undefined ? "250 millis" : "100 millis" }
      })))),
    Layer.provideMerge(EventStorage.layer),
    Layer.provideMerge(SqlStore.layer),
    // Storage by concept, each over the database.
    Layer.provideMerge(Layer.mergeAll(
      ActivationStorage.layer,
      ApprovalStorage.layer,
      InstanceStorage.layer,
      DeliveryStorage.layer,
      SqlEnvironmentStorage,
      TokenStorage.layer,
      ReleaseStorage.layer
    )),
    Layer.provideMerge(databaseLayer(app, options.storeFile)),
    Layer.provideMerge(CurrentApp.layer(app)),
    Layer.provideMerge(BuildStatus.layer),
    Layer.provideMerge(options.models ?? ModelResolverLive),
    Layer.provideMerge(NodeContext.layer)
  )

/** How many unfinished runs the server resumed as it started. */
export class Recovered extends Context.Tag("foundry/Recovered")<Recovered, number>() {}

/**
 * The store's unfinished runs resumed before schedules fire or a request is taken: a resumed run
 * keeps its place ahead of anything its conversation is sent after the restart.
 */
const recovery = Layer.effect(Recovered, Effect.flatMap(Dispatcher, (dispatcher) => dispatcher.recover))

/** The runtime, its schedules, and the HTTP server on `host:port`. */
export const serverLayer = (
  app: CompiledApp,
  server: { readonly port: number; readonly host: string },
  options: RuntimeOptions = {}
) =>
  HttpServerLive.layer({ ...server, bodyLimit: app.table.config.server.bodyLimit, allowedHosts: app.table.config.server.allowedHosts ?? [] }).pipe(
    Layer.provideMerge(Auth.layer({ host: server.host, allowedHosts: app.table.config.server.allowedHosts ?? [], ...app.table.config.auth })),
    // Another process's revocation ends this one's streams on the token within this.
    Layer.provideMerge(TokenRevocations.layer("2 seconds")),
    Layer.provideMerge(OtlpExportLive),
    // Runners of a cluster serve the release deployed to any of them.
    Layer.provideMerge(Deployments.layer({ startedFrom: app, followEvery: clusterSettingsOf(app, options) === undefined ? undefined : "1 second" })),
    Layer.provideMerge(SchedulesLive),
    Layer.provideMerge(recovery),
    Layer.provideMerge(runtimeLayer(app, options))
  )
