/**
 * Deploying and rolling back: a release uploaded (or one the server keeps) is loaded beside the
 * current one, checked, kept in the store, and made current for new runs at once; schedules
 * follow it (one it removes is cancelled), playbooks and webhooks follow the current app. Runs in
 * flight finish on the release they started on. One switch at a time.
 */
import { join } from "node:path"
import { FileSystem } from "@effect/platform"
import { Clock, Context, DateTime, Duration, Effect, Layer, Option, Schedule, Schema } from "effect"
import { BuildStatus } from "../compiler/BuildStatus.js"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { changedSettings, startSettings } from "../compiler/startSettings.js"
import type { StoreError } from "../durable/StoreError.js"
import { Schedules } from "../triggers/Schedules.js"
import { checkedCachedRelease } from "./cacheCheck.js"
import { forget, materialise } from "./releaseCache.js"
import { CurrentMoved, type ReleaseInvalid, ReleaseNotFound, ReleasesNotDeployable } from "./releaseErrors.js"
import { Releases } from "./Releases.js"
import { type Activation, type DeploymentView, ReleaseStorage } from "./ReleaseStorage.js"
import { ReleaseSummary, routeDigests, routesOfTable, sourcesOf, summarize } from "./releaseSummary.js"
import { type ReleaseUpload, verifyUpload } from "./ReleaseUpload.js"

/** The answer to a deploy or a rollback: the release, what it changes, and whether new runs now start on it. */
export const ReleaseSwitch = Schema.Struct({
  id: Schema.String,
  /** Against the release that was current. */
  summary: ReleaseSummary,
  /** `false` for a dry run, or when it was current already. */
  switched: Schema.Boolean,
  /** The release new runs start on now. */
  current: Schema.String,
  /** The release new runs started on before, when it switched. */
  previous: Schema.optional(Schema.String),
  /**
   * The settings its config changes that this server read at start (`auth`, `server.bodyLimit`, the
   * store, ...), and where it read them: the config of the folder it was started on, which every
   * start reads again. The switch does not apply them, nor does a restart alone.
   */
  restartNeeded: Schema.optional(Schema.String)
})
export type ReleaseSwitch = typeof ReleaseSwitch.Type

/** A release the server keeps, as `GET /api/releases` lists it. */
export const ReleaseView = Schema.Struct({
  id: Schema.String,
  createdAt: Schema.Number,
  deployedAt: Schema.Number,
  deployedBy: Schema.NullOr(Schema.String),
  summary: ReleaseSummary,
  current: Schema.Boolean,
  /** Runs that started on it. */
  runs: Schema.Number
})
export type ReleaseView = typeof ReleaseView.Type

/** Deploys and rollbacks. */
export class Deployments extends Context.Tag("foundry/Deployments")<Deployments, {
  /** Takes an uploaded release and, unless `dryRun`, makes it current; `by` is the token that sent it. */
  readonly deploy: (
    upload: ReleaseUpload,
    by: string | null
  ) => Effect.Effect<ReleaseSwitch, ReleaseInvalid | ReleasesNotDeployable | StoreError>
  /** Makes a release the server keeps current again. */
  readonly activate: (
    id: string,
    by: string | null
  ) => Effect.Effect<ReleaseSwitch, ReleaseNotFound | ReleaseInvalid | ReleasesNotDeployable | StoreError>
  /** The releases the server keeps, the one deployed last first. */
  readonly list: Effect.Effect<ReadonlyArray<ReleaseView>, StoreError>
  /** The deployment log: the latest `limit` times a release was made current, newest first. */
  readonly history: (limit: number) => Effect.Effect<ReadonlyArray<DeploymentView>, StoreError>
}>() {}

const notDeployable = new ReleasesNotDeployable({
  message: "this server serves a project's sources (foundry dev), which it reloads on every change: " +
    "deploy to a server started with `foundry start`"
})

/** The longest a runner waits before it tries again a current release it could not load. */
const maxFollowWait = 60_000

/** A loaded app's routes with the digests of their code. */
const digestsOf = (app: CompiledApp) =>
  Effect.map(sourcesOf(app.table), (sources) => routeDigests(app.table.root, routesOfTable(app.table), app.table.configFile, sources))

/** How a server takes deploys. */
export interface DeploymentsOptions {
  /**
   * The build of the folder the server was started on: its config gave the server its store,
   * address, auth and limits (`startSettings`), whichever release it serves.
   */
  readonly startedFrom: CompiledApp
  /**
   * For a cluster runner: how often to look at the store's current release, which a deploy to
   * another runner changes; the runner then starts new runs on it too.
   */
  readonly followEvery?: Duration.DurationInput | undefined
}

/** Deploys over the server's releases, schedules and build status. */
export const layer = (options: DeploymentsOptions) => Layer.scoped(
  Deployments,
  Effect.gen(function*() {
    const releases = yield* Releases
    const storage = yield* ReleaseStorage
    const current = yield* CurrentApp
    const schedules = yield* Schedules
    const status = yield* BuildStatus
    const fs = yield* FileSystem.FileSystem
    const switching = yield* Effect.makeSemaphore(1)
    // What the server read from its config as it started: a release that changes it says so, and
    // where those settings come from, since a restart reads them from there again, not from the
    // release it serves.
    const started = options.startedFrom.table
    const startedWith = startSettings(started.config)
    const startConfig = `${join(started.root, started.configFile ?? "foundry.config.ts")}${started.configFile === undefined ? " (there is none: the defaults)" : ""}`
    const restartNeededBy = (app: CompiledApp) => {
      const changed = changedSettings(startedWith, startSettings(app.table.config))
      return changed === undefined ? {} : {
        restartNeeded: `its config changes ${changed}, which this server read as it started, from ${startConfig} (the folder it was started on), ` +
          "not from a release deployed to it: a restart reads them from there again. To apply the change, make it there, or start the server " +
          "on this release's folder with `foundry start --release <folder>`"
      }
    }

    /**
     * The store's current release (none before the first) with its routes' digests: what a change
     * is decided and summarised against. A runner may not serve it yet (a deploy to another runner
     * a moment ago): it is loaded then, and the serving one stands in if it cannot be.
     */
    const storedBefore = Effect.gen(function*() {
      const serving = yield* current.get
      const stored = yield* storage.current
      const app = Option.isNone(stored) || stored.value === serving.release
        ? serving
        : yield* releases.load(stored.value).pipe(Effect.orElseSucceed(() => serving))
      return { stored, release: Option.getOrElse(stored, () => serving.release), digests: yield* digestsOf(app) }
    })

    /**
     * Makes `app` current as `activation` says, unless it is already: the answer of a deploy and of
     * a rollback. Decided against the store's current release; when another runner's deploy makes
     * another current meanwhile, decided again against that one.
     */
    const change = (app: CompiledApp, activation: Pick<Activation, "action" | "deployedBy" | "content">, dryRun = false) =>
      Effect.gen(function*() {
        const id = app.release
        const before = yield* storedBefore
        const summary = summarize(before.digests, yield* digestsOf(app))
        if (dryRun) return { id, summary, switched: false, current: before.release, ...restartNeededBy(app) }
        // Current already: a deploy of it that stopped after its switch (the store failed its
        // schedules' sync, its server died) is finished by deploying it again.
        if (Option.contains(before.stored, id)) {
          yield* (yield* current.get).release === id ? schedules.sync(app) : switchTo(app)
          return { id, summary, switched: false, current: before.release, ...restartNeededBy(app) }
        }
        const made = yield* storage.activate({ ...activation, id, summary, expected: before.stored, deployedAt: yield* Clock.currentTimeMillis })
        if (!made) return yield* new CurrentMoved()
        yield* switchTo(app)
        return { id, summary, switched: true, current: id, previous: before.release, ...restartNeededBy(app) }
      }).pipe(
        Effect.retry({ while: (error) => error._tag === "CurrentMoved", times: 5 }),
        // Five deploys in a row, each between this one's decision and its commit: not a rate anyone deploys at.
        Effect.catchTag("CurrentMoved", (moved) => Effect.die(moved))
      )

    /** New runs start on `app` (loaded, and held by the caller); the build status follows it. */
    const serve = (app: CompiledApp) =>
      Effect.gen(function*() {
        yield* releases.makeCurrent(app.release).pipe(Effect.catchTag("ReleaseNotFound", (missing) => Effect.die(missing)))
        const builtAt = yield* Clock.currentTimeMillis
        yield* status.update((report) => ({ ...report, generation: report.generation + 1, builtAt, problems: [] }))
        yield* Effect.logInfo(`release ${app.release} is current: new runs start on it`)
      })

    /** Serves `app`, kept in the store as the current release, and its schedules. */
    const switchTo = (app: CompiledApp) => Effect.zipRight(serve(app), schedules.sync(app))

    // A runner of a cluster serves what another runner was deployed, and syncs its schedules too:
    // the deploying runner may have died between the switch and its sync, and a sync that finds them
    // as the release has them writes nothing.
    if (options.followEvery !== undefined) {
      const every = Duration.toMillis(Duration.decode(options.followEvery))
      // A release this runner cannot load (a package it lacks, a layer that fails here) is tried
      // again less and less often, up to once a minute, until the store's current release changes.
      let failing: { readonly release: string; readonly tries: number; readonly retryAt: number } | undefined
      const follow = Effect.gen(function*() {
        const stored = yield* storage.current
        const serving = (yield* current.get).release
        if (Option.isNone(stored) || stored.value === serving) return
        const release = stored.value
        const now = yield* Clock.currentTimeMillis
        if (failing !== undefined && failing.release === release && now < failing.retryAt) return
        yield* Effect.scoped(Effect.flatMap(releases.load(release), switchTo)).pipe(
          Effect.tap(() => Effect.sync(() => failing = undefined)),
          Effect.catchAllCause((cause) => {
            const tries = failing?.release === release ? failing.tries + 1 : 1
            const wait = Math.min(maxFollowWait, every * 2 ** tries)
            failing = { release, tries, retryAt: now + wait }
            return Effect.logWarning(
              `could not serve release ${release}, the store's current (tried ${tries} ${tries === 1 ? "time" : "times"}); ` +
                `new runs on this runner start on ${serving} meanwhile. Tries again in ${Duration.format(Duration.millis(wait))}`,
              cause
            )
          })
        )
      })
      yield* follow.pipe(
        switching.withPermits(1),
        Effect.catchAllCause((cause) => Effect.logWarning("could not read the store's current release", cause)),
        Effect.repeat(Schedule.spaced(options.followEvery)),
        Effect.forkScoped
      )
    }

    const deploy = Effect.fn("Deployments.deploy")(function*(upload: ReleaseUpload, by: string | null) {
      if (!releases.deployable) return yield* notDeployable
      const release = yield* verifyUpload(upload)
      const id = release.manifest.id
      // A cached copy that is not the release (changed, or not whole) is removed first, and written from the upload.
      const cachedBefore = yield* checkedCachedRelease(releases.root, id).pipe(Effect.provideService(FileSystem.FileSystem, fs))
      yield* materialise(releases.root, id, release.manifestText, release.files).pipe(
        Effect.provideService(FileSystem.FileSystem, fs),
        Effect.orDie
      )
      // A release the store does not keep after all (a dry run, one that does not load) leaves the
      // cache as it found it: the cache holds what the server runs or may run again.
      const leaveNoTrace = cachedBefore !== undefined ? Effect.void : Effect.gen(function*() {
        if (yield* storage.has(id)) return
        yield* forget(releases.root, id).pipe(Effect.provideService(FileSystem.FileSystem, fs))
      }).pipe(Effect.catchAllCause((cause) => Effect.logWarning(`could not remove ${id}, which was not deployed, from the release cache`, cause)))
      return yield* Effect.ensuring(Effect.scoped(Effect.gen(function*() {
        const app = yield* releases.load(id).pipe(
          // Written to the cache just now: it cannot be missing.
          Effect.catchTag("ReleaseNotFound", (missing) => Effect.die(missing))
        )
        return yield* change(app, {
          action: "deploy",
          deployedBy: by,
          content: { createdAt: DateTime.toEpochMillis(release.manifest.createdAt), manifest: release.manifestText, files: upload.files }
        }, upload.dryRun === true)
      })), leaveNoTrace)
    }, switching.withPermits(1))

    const activate = Effect.fn("Deployments.activate")(function*(id: string, by: string | null) {
      if (!releases.deployable) return yield* notDeployable
      // Only a release the store keeps: the current one must be there for the next start to serve it.
      if (!(yield* storage.has(id))) {
        return yield* new ReleaseNotFound({ release: id, message: `there is no release ${id} on this server; GET /api/releases lists them` })
      }
      return yield* Effect.scoped(Effect.gen(function*() {
        return yield* change(yield* releases.load(id), { action: "rollback", deployedBy: by })
      }))
    }, switching.withPermits(1))

    const list = Effect.gen(function*() {
      const entries = yield* storage.list
      const serving = (yield* current.get).release
      return entries.map(({ createdAt, deployedAt, deployedBy, id, runs, summary }): ReleaseView => ({
        id,
        createdAt,
        deployedAt,
        deployedBy,
        summary,
        current: id === serving,
        runs
      }))
    })

    return Deployments.of({
      deploy,
      activate,
      list,
      history: storage.history
    })
  })
)
