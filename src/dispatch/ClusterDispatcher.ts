/**
 * The cluster dispatcher: several Foundry processes (runners) on one PostgreSQL database. Each
 * conversation is an `@effect/cluster` entity sharded over the runners; its runs execute on the
 * runner that owns its shard, one at a time, in the order the store accepted them, whichever
 * process accepted the message. Runner registration, shard locks and health are `@effect/cluster`'s
 * (`SqlRunnerStorage` on the same database, sockets between runners, pings for liveness).
 *
 * The cluster carries placement, not steps: one message per accepted run (and per cancel), while
 * every step is written by the run journal and fenced by the conversation's lease. When a runner
 * dies its shards move; a singleton sweep wakes the conversations whose runs nobody executes, and
 * their new owner resumes them from the journal.
 */
import { EntityId, MessageStorage, RunnerAddress, RunnerHealth, Runners, ShardId, Sharding, ShardingConfig, SocketRunner, SqlRunnerStorage } from "@effect/cluster"
import * as NodeClusterSocket from "@effect/platform-node/NodeClusterSocket"
import { RpcSerialization } from "@effect/rpc"
import { Clock, Context, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import { isLoopback } from "../auth/accessMode.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { camelCaseKeys, Database, startupContention } from "../durable/Database.js"
import { RunRecord } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import { messageOf, StoreError } from "../durable/StoreError.js"
import { RunJournal } from "../journal/RunJournal.js"
import { runStatus } from "../journal/journalStatements.js"
import * as statements from "./clusterStatements.js"
import { notWaitingForBuild } from "./buildWaits.js"
import { ClusterError, type ClusterSettings } from "./ClusterSettings.js"
import { ClusterStatus, ClusterView, ConversationPlacement, RunnerView } from "./ClusterStatus.js"
import { ConversationEntity } from "./ConversationEntity.js"
import { Dispatcher } from "./Dispatcher.js"
import { Singletons } from "./Singletons.js"
import { makeRunExecutor, type RunExecutorOptions } from "./RunExecutor.js"

/** Settings of the cluster dispatcher. */
export type ClusterDispatcherOptions = Omit<RunExecutorOptions, "wake"> & { readonly cluster: ClusterSettings }

/** How often the sweep looks for conversations nobody executes. */
const sweepEvery = Duration.seconds(1)
/** How often a runner reports its shards. */
const reportEvery = Duration.seconds(2)
/** Stranded conversations a sweep wakes at most. */
const strandedPage = 1000

/**
 * `@effect/cluster` on this process: a runner at `host:port` on the store's PostgreSQL database.
 * Messages are volatile (the store holds the work); a runner is dropped once it has not renewed
 * its registration for `runnerTimeout`, or sooner when pings to it fail.
 */
export const shardingLayer = (settings: ClusterSettings) => {
  if (!isLoopback(settings.host) && !settings.trustedNetwork) {
    return Layer.fail(new ClusterError({
      message: `refusing to listen for other runners on ${settings.host}: runners talk to each other without authentication. ` +
        `On a private network between the runners, set cluster: { trustedNetwork: true } in foundry.config.ts; otherwise use --runner-host 127.0.0.1`
    }))
  }
  const timeout = Duration.decode(settings.runnerTimeout)
  const config = ShardingConfig.layer({
    runnerAddress: Option.some(RunnerAddress.make(settings.host, settings.port)),
    shardsPerGroup: settings.shardsPerGroup,
    shardLockExpiration: timeout,
    shardLockRefreshInterval: Duration.divide(timeout, 3).pipe(Option.getOrElse(() => Duration.seconds(1))),
    refreshAssignmentsInterval: Duration.seconds(1),
    runnerHealthCheckInterval: Duration.seconds(2),
    entityMaxIdleTime: Duration.minutes(5),
    entityTerminationTimeout: Duration.seconds(5),
    // A message to a conversation this runner owns is handed over as it is, not encoded and decoded.
    simulateRemoteSerialization: false
  })
  const listen = NodeClusterSocket.layerSocketServer.pipe(
    Layer.mapError((error) => {
      // The error's own message is its reason's tag ("Open"); its cause says what happened.
      const cause: unknown = error.cause
      const taken = typeof cause === "object" && cause !== null && "code" in cause && cause.code === "EADDRINUSE"
      const reason = taken ? "the port is taken: another process listens there" : cause instanceof Error ? cause.message : error.message
      return new ClusterError({
        message: `cannot listen for other runners on ${settings.host}:${settings.port} (${reason}); ` +
          `choose a free port with --runner-port or cluster: { port } in foundry.config.ts`
      })
    })
  )
  return SocketRunner.layer.pipe(
    Layer.provide([listen, NodeClusterSocket.layerClientProtocol]),
    Layer.provide(RunnerHealth.layerPing.pipe(Layer.provide(Runners.layerRpc), Layer.provide(NodeClusterSocket.layerClientProtocol))),
    Layer.provide(MessageStorage.layerNoop),
    // Runners starting together on a fresh database race to create the cluster's tables: the loser retries.
    Layer.provide(Layer.orDie(SqlRunnerStorage.layer.pipe(Layer.retry(startupContention)))),
    Layer.provide(config),
    Layer.provide(RpcSerialization.layerMsgPack)
  )
}

/** A number as either dialect returns it (PostgreSQL may return a BIGINT as text). */
const Count = Schema.Union(Schema.Number, Schema.NumberFromString)

const RunnerRow = Schema.Struct({
  address: Schema.String,
  executor: Schema.String,
  shards: Schema.parseJson(Schema.Array(Schema.Number)),
  executing: Count,
  startedAt: Count,
  updatedAt: Count
})

const decodeRunners = Schema.decodeUnknown(Schema.Array(RunnerRow))
const decodeRuns = Schema.decodeUnknown(Schema.Array(RunRecord))

const storeFailure = (operation: string) => (cause: unknown) => new StoreError({ operation, message: messageOf(cause) })

/** The cluster dispatcher, with the cluster's status; needs `@effect/cluster`'s `Sharding` (see `shardingLayer`). */
export const layer = (options: ClusterDispatcherOptions) =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const sharding = yield* Sharding.Sharding
      const database = yield* Database
      const store = yield* Store
      const current = yield* CurrentApp
      const conversation = yield* ConversationEntity.client
      const self = `${options.cluster.host}:${options.cluster.port}`

      /** Tells the conversation's runner that it has work (`runId` to resume); the sweep catches a wake that is lost. */
      const wake = (conversationId: string, runId: string) =>
        conversation(conversationId).Wake({ runId }, { discard: true }).pipe(
          Effect.catchAllCause((cause) => Effect.logWarning("could not wake a conversation; the sweep will", cause))
        )

      const executor = yield* makeRunExecutor({
        concurrency: options.concurrency,
        leaseTtl: options.leaseTtl,
        wake: (run) => wake(run.conversationId, run.id)
      })

      /**
       * On the conversation's runner: its queued and running runs go into this process's lane in
       * acceptance order (those already there stay), then the run to resume if it is suspended: one
       * whose execution here is still ending (its suspension stored, the news come meanwhile) once
       * it has ended, not left to the sweep.
       */
      const drain = (conversationId: string, runId: string) =>
        Effect.gen(function*() {
          const rows = yield* database.read(statements.backlog(conversationId))
          const runs = yield* decodeRuns(rows.map(camelCaseKeys)).pipe(Effect.mapError(storeFailure("backlog")))
          for (const run of runs) if (!executor.isHere(run.id)) yield* executor.schedule(run)
          if (runs.some((run) => run.id === runId)) return
          const named = yield* store.getRun(runId)
          if (Option.isSome(named) && named.value.status === "suspended") yield* executor.resume(named.value)
        })

      yield* sharding.registerEntity(ConversationEntity, Effect.succeed(ConversationEntity.of({
        Wake: (envelope) =>
          drain(envelope.address.entityId, envelope.payload.runId).pipe(
            Effect.catchAllCause((cause) => Effect.logWarning("could not drain a conversation", cause))
          ),
        Cancel: (envelope) => executor.cancel(envelope.payload.runId, envelope.payload.reason),
        Where: () => Effect.succeed(self)
      })), { concurrency: 1 })

      /** Wakes every conversation whose runs nobody executes, and every suspended run that waits on nothing. */
      let sweptTo = ""
      // Leases as the journal judges them (on PostgreSQL by the database's clock, which every runner shares).
      const { leaseTime } = yield* RunJournal
      const sweep = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* database.read(statements.stranded(leaseTime, now, strandedPage, sweptTo))
        // The next sweep goes on after this page, or from the start once this one reached the end.
        sweptTo = rows.length < strandedPage ? "" : String(rows[rows.length - 1]?.conversation_id ?? "")
        const waking = notWaitingForBuild(yield* current.get, yield* store.suspendedReadyToResume)
        const targets = [
          ...rows.map((row) => ({ conversationId: String(row.conversation_id), runId: String(row.run_id) })),
          ...waking.map((run) => ({ conversationId: run.conversationId, runId: run.id }))
        ]
        yield* Effect.forEach(targets, ({ conversationId, runId }) => wake(conversationId, runId), { concurrency: 16, discard: true })
        return targets.length
      })
      yield* sharding.registerSingleton(
        "foundry/sweep",
        sweep.pipe(
          Effect.catchAllCause((cause) => Effect.logWarning("the sweep for stranded runs failed", cause)),
          Effect.repeat(Schedule.spaced(sweepEvery)),
          Effect.asVoid
        )
      )

      // Every runner reports which shards it holds, for `GET /api/cluster` and the inspector.
      const startedAt = yield* Clock.currentTimeMillis
      const shardNumbers = Array.from({ length: options.cluster.shardsPerGroup }, (_, i) => i + 1)
      const held = () => shardNumbers.filter((n) => sharding.hasShardId(ShardId.make("default", n)))
      const report = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        yield* database.write({
          statements: [statements.reportRunner({ address: self, executor: executor.owner, shards: held(), executing: executor.executing() }, startedAt, now)]
        })
      })
      yield* report.pipe(
        Effect.catchAllCause((cause) => Effect.logWarning("could not report this runner", cause)),
        Effect.repeat(Schedule.spaced(reportEvery)),
        Effect.forkScoped
      )
      yield* Effect.addFinalizer(() => Effect.ignore(database.write({ statements: [statements.forgetRunner(self)] })))

      /** Waits for a run that may execute on another runner: here by its signal, elsewhere by its status. */
      const awaitRun = (runId: string) =>
        executor.isHere(runId)
          ? executor.awaitHere(runId)
          : database.read(runStatus(runId)).pipe(
            Effect.map((rows) => String(rows[0]?.status ?? "missing")),
            Effect.repeat({ schedule: Schedule.spaced("50 millis"), while: (status) => status === "queued" || status === "running" }),
            Effect.catchAll(() => Effect.void),
            Effect.asVoid
          )

      const cancelWith = (runId: string, reason: string) =>
        Effect.gen(function*() {
          const run = yield* executor.findRun(runId)
          return yield* conversation(run.conversationId).Cancel({ runId, reason }).pipe(
            Effect.catchTags({
              MailboxFull: (error) => Effect.fail(storeFailure("cancel")(error)),
              AlreadyProcessingMessage: (error) => Effect.fail(storeFailure("cancel")(error)),
              PersistenceError: (error) => Effect.fail(storeFailure("cancel")(error))
            })
          )
        })

      const dispatcher = Dispatcher.of({
        submit: executor.submit,
        recover: sweep,
        await: awaitRun,
        cancel: (runId) => cancelWith(runId, "cancelled: a person cancelled the run before this call finished"),
        steer: executor.steer(cancelWith),
        decide: executor.decide
      })

      const view = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const rows = yield* database.read(statements.runners)
        const reports = yield* decodeRunners(rows.map(camelCaseKeys)).pipe(Effect.mapError(storeFailure("runners")))
        const timeout = Duration.toMillis(Duration.decode(options.cluster.runnerTimeout))
        return new ClusterView({
          mode: "cluster",
          self,
          shardsPerGroup: options.cluster.shardsPerGroup,
          runners: reports.map((runner) =>
            new RunnerView({
              address: runner.address,
              executor: runner.executor,
              shards: runner.shards.length,
              executing: runner.executing,
              startedAt: runner.startedAt,
              updatedAt: runner.updatedAt,
              healthy: now - runner.updatedAt < timeout
            })
          )
        })
      })

      const locate = (conversationId: string) =>
        Effect.gen(function*() {
          const shard = yield* ConversationEntity.getShardId(EntityId.make(conversationId)).pipe(Effect.provideService(Sharding.Sharding, sharding))
          const runner = yield* conversation(conversationId).Where().pipe(
            Effect.timeout("5 seconds"),
            Effect.catchAllCause(() => Effect.succeed(null))
          )
          return new ConversationPlacement({ conversationId, shard: shard.id, runner })
        })

      const singletons = Singletons.of({
        run: (name, work) => sharding.registerSingleton(name, work),
        lookEvery: Option.some(Duration.seconds(1))
      })
      return Context.make(Dispatcher, dispatcher).pipe(
        Context.add(ClusterStatus, ClusterStatus.of({ view, locate })),
        Context.add(Singletons, singletons)
      )
    })
  )
