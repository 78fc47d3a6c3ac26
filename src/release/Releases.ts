/**
 * The apps of the releases a server runs, by release id. New runs start on the current release;
 * a run executes on the release it started on until it ends, resumed after a restart too. An app
 * is loaded (its files from the project's release cache, else from the store) while it is current
 * or a run executes on it, each in a scope of its own that holds its config's layers, and let go
 * when neither holds any more.
 */
import { FileSystem } from "@effect/platform"
import { Cause, Context, Effect, Either, Encoding, Exit, FiberRef, Layer, Option, RcMap, Schedule, Schema, Scope } from "effect"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { loadProject } from "../compiler/loadProject.js"
import type { RunRecord } from "../durable/records.js"
import type { StoreError } from "../durable/StoreError.js"
import { eventRelease } from "../journal/eventRelease.js"
import { RunJournal } from "../journal/RunJournal.js"
import { cacheProblem, checkedCachedRelease } from "./cacheCheck.js"
import { cachedRelease, forget, materialise } from "./releaseCache.js"
import { ReleaseBroken, ReleaseInvalid, ReleaseNotFound } from "./releaseErrors.js"
import { readReleaseFolder } from "./releaseFolder.js"
import { ReleaseId, releaseIdAt } from "./ReleaseManifest.js"
import { ReleaseStorage } from "./ReleaseStorage.js"
import { startRelease } from "./startRelease.js"

/** The app of the run this fiber executes, while it executes one. */
const runningApp = FiberRef.unsafeMake<CompiledApp | undefined>(undefined)

/** The app the work of this fiber belongs to: a run's own while it executes, else the current one. */
const workingApp = (current: CurrentApp["Type"]): Effect.Effect<CompiledApp> =>
  Effect.flatMap(FiberRef.get(runningApp), (app) => app === undefined ? current.get : Effect.succeed(app))

/** The release an event is stamped with: the release of the run it belongs to, else the current one. */
export const releaseOfWork = (current: CurrentApp["Type"]): Effect.Effect<string> =>
  Effect.flatMap(FiberRef.get(eventRelease), (release) =>
    release === undefined ? Effect.map(current.get, (app) => app.release) : Effect.succeed(release))

/** The releases of the server. */
export class Releases extends Context.Tag("foundry/Releases")<Releases, {
  /**
   * Runs `use` on the app `run` executes on, held while `use` runs: the release it started on (the
   * current one for a run stored before releases were recorded). A release that cannot be had (a
   * build of sources that changed since, a release this store does not keep) gives the current
   * app, with a warning saying why, and the run's record names that release from then on. Events
   * emitted by `use` carry the app's release, and runs started in it start on that release (a
   * child run stays on its parent's code).
   */
  readonly forRun: <A, E, R>(run: RunRecord, use: (app: CompiledApp) => Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  /** The app a run started now starts on: the executing run's when a run starts it, else the current one. */
  readonly starting: Effect.Effect<CompiledApp>
  /** Whether this server takes deploys: `foundry start` does; `foundry dev` serves the sources. */
  readonly deployable: boolean
  /** Where the server's project is: the release cache is in its `.foundry/`. */
  readonly root: string
  /** Loads release `id` (written to the cache already, or kept in the store), held until the scope closes. */
  readonly load: (id: string) => Effect.Effect<CompiledApp, ReleaseNotFound | ReleaseInvalid | StoreError, Scope.Scope>
  /**
   * Makes release `id` current and holds it while it is; the release current before is let go
   * once no run executes on it. Returns its app.
   */
  readonly makeCurrent: (id: string) => Effect.Effect<CompiledApp, ReleaseNotFound | ReleaseInvalid | StoreError>
}>() {}

/** How a server serves releases. */
export interface ReleasesOptions {
  /**
   * `foundry start`: the first build (the current app when the layer is made) and the scope that
   * holds its layers. `given` when it was named with `--release`: it then becomes the current
   * release; else the store's current release, if it has one, is served instead of it.
   * Without this (`foundry dev`, `foundry run`), every run executes on the current app.
   */
  readonly serving?: { readonly scope: Scope.CloseableScope; readonly given: boolean } | undefined
}

const isReleaseId = Schema.is(ReleaseId)

/** How a release a run needs is loaded again after a failure, before the run is moved off it: for about three seconds. */
const loadAgain = Schedule.exponential("200 millis").pipe(Schedule.intersect(Schedule.recurs(4)))

/** A loaded release's failure, as the reason it does not run. */
const notLoadable = (id: string) => (error: { readonly message: string }) =>
  new ReleaseInvalid({ message: `${id} does not load:\n${error.message}` })

/** The release folder `folder`, refused unless it is exactly its release. */
const checkedFolder = (folder: string) =>
  readReleaseFolder(folder).pipe(
    Effect.mapError((error) => error instanceof ReleaseInvalid ? error : new ReleaseInvalid({ message: `${folder} is no release it can serve: ${error.message}` }))
  )

/** The releases, over the store's and the project's release cache. */
export const layer = (options: ReleasesOptions = {}) =>
  Layer.scoped(
    Releases,
    Effect.gen(function*() {
      const current = yield* CurrentApp
      const storage = yield* ReleaseStorage
      const journal = yield* RunJournal
      const fs = yield* FileSystem.FileSystem
      const first = yield* current.get
      const root = first.table.root
      const serving = options.serving
      // A release's files never change, and Node never lets go of a module it imported: each
      // release is imported under one generation, so that a load after the last was let go (a run
      // resuming on it, a dry run, a cluster runner trying again) reuses its modules and builds
      // only its layers anew, instead of holding one more copy of its code each time.
      const generations = new Map<string, number>()
      const generationOf = (id: string) => {
        const known = generations.get(id)
        if (known !== undefined) return known
        const next = generations.size + 1
        generations.set(id, next)
        return next
      }
      let firstTaken = serving === undefined

      // The releases whose cached folder this process checked against their id: each is hashed
      // once, when it is first used (its files are written once and never change after).
      const checked = new Set<string>()

      /**
       * The folder of a release: in the cache (checked against its id the first time), else written
       * there from the store, else the release folder the server was started on. A copy that is not
       * its release is broken for good: the store's copy is what a cached one is written from again.
       * A disk that fails us is a defect.
       */
      const folderOf = (id: string) =>
        Effect.gen(function*() {
          const known = checked.has(id) ? yield* Effect.orDie(cachedRelease(root, id)) : undefined
          if (known !== undefined) return known
          const cached = yield* checkedCachedRelease(root, id)
          if (cached !== undefined) {
            checked.add(id)
            return cached
          }
          const stored = yield* storage.content(id)
          if (Option.isNone(stored)) {
            // Checked again: what is loaded from it now is served under its id.
            if (id === first.release && releaseIdAt(root) === id) {
              return yield* Effect.as(Effect.provideService(checkedFolder(root), FileSystem.FileSystem, fs), root).pipe(
                Effect.mapError((invalid) => new ReleaseBroken({ release: id, message: `release ${id} cannot be served: ${invalid.message}` }))
              )
            }
            return yield* new ReleaseNotFound({
              release: id,
              message: isReleaseId(id)
                ? `there is no release ${id} on this server`
                : `${id} is a build of a project's sources, which no store keeps, and the sources this server started from build ${first.release}`
            })
          }
          const broken = (why: string) =>
            new ReleaseBroken({
              release: id,
              message: `release ${id} cannot be served: the store's copy of it ${why}\n` +
                "  fix: deploy the release again from its folder (`foundry deploy`), or roll back to another release"
            })
          const files = yield* Effect.forEach(Object.entries(stored.value.files), ([file, base64]) =>
            Either.match(Encoding.decodeBase64(base64), {
              onLeft: () => Effect.fail(broken(`holds ${file} in a form that is not base64`)),
              onRight: (content) => Effect.succeed({ file, content })
            }))
          const folder = yield* Effect.orDie(materialise(root, id, stored.value.manifest, files))
          // Written from the store: the same check, so that a copy the store holds wrong is not served either.
          const problem = yield* cacheProblem(folder, id)
          if (problem !== undefined) {
            yield* Effect.orDie(forget(root, id))
            return yield* broken(`does not match its id: ${problem}`)
          }
          checked.add(id)
          return folder
        }).pipe(Effect.provideService(FileSystem.FileSystem, fs))

      const lookup = (id: string) =>
        Effect.gen(function*() {
          if (serving !== undefined && !firstTaken && id === first.release) {
            firstTaken = true
            yield* Effect.addFinalizer(() => Scope.close(serving.scope, Exit.void))
            return first
          }
          const folder = yield* folderOf(id)
          return yield* loadProject(folder, generationOf(id)).pipe(Effect.mapError(notLoadable(id)))
        })
      const apps = yield* RcMap.make({ lookup })

      const held = (id: string) =>
        RcMap.get(apps, id).pipe(
          // A failed load is not kept: the next one tries again.
          Effect.tapError(() => RcMap.invalidate(apps, id))
        )
      // To a deploy or a rollback, a broken release is one that does not load: it is refused the same way.
      const load = (id: string) =>
        Effect.catchTag(held(id), "ReleaseBroken", (broken) => Effect.fail(new ReleaseInvalid({ message: broken.message })))

      const switching = yield* Effect.makeSemaphore(1)
      let holding: Scope.CloseableScope | undefined
      const makeCurrent = (id: string) =>
        switching.withPermits(1)(Effect.gen(function*() {
          const scope = yield* Scope.make()
          const app = yield* load(id).pipe(Scope.extend(scope), Effect.onError(() => Scope.close(scope, Exit.void)))
          yield* current.set(app)
          const previous = holding
          holding = scope
          if (previous !== undefined) yield* Scope.close(previous, Exit.void)
          return app
        }))
      yield* Effect.addFinalizer(() => holding === undefined ? Effect.void : Scope.close(holding, Exit.void))

      /**
       * `use` as work for a run on `app`: the fiber refs set and put back after, without a scope
       * (this is every run execution's path; `Effect.locally` twice costs three times as much).
       */
      const onApp = <A, E, R>(app: CompiledApp, use: (app: CompiledApp) => Effect.Effect<A, E, R>) =>
        Effect.uninterruptibleMask((restore) =>
          Effect.flatMap(
            Effect.zip(FiberRef.getAndSet(runningApp, app), FiberRef.getAndSet(eventRelease, app.release)),
            ([previousApp, previousRelease]) =>
              Effect.ensuring(restore(use(app)), Effect.zipRight(FiberRef.set(runningApp, previousApp), FiberRef.set(eventRelease, previousRelease)))
          )
        )

      const forRun = <A, E, R>(run: RunRecord, use: (app: CompiledApp) => Effect.Effect<A, E, R>) =>
        Effect.flatMap(current.get, (now) => {
          // Serving sources, every run executes on the current app.
          if (serving === undefined) return onApp(now, use)
          const wanted = run.release ?? now.release
          return held(wanted).pipe(
            // Moved to another release only when this one cannot be had: a load that failed for a
            // moment (the store, a dependency of its layers) is tried again first, a few times over;
            // one that is not there or broken for good is not waited on.
            Effect.retry({ schedule: loadAgain, while: (error) => error._tag !== "ReleaseNotFound" && error._tag !== "ReleaseBroken" }),
            Effect.catchAllCause((cause) =>
              Cause.isInterruptedOnly(cause) ? Effect.interrupt : Effect.gen(function*() {
                const app = yield* load(now.release).pipe(Effect.orElseSucceed(() => now))
                // Said in the line itself, not only in the cause after it: what is wrong with which release.
                const why = Option.match(Cause.failureOption(cause), { onNone: () => "", onSome: (error) => `: ${error.message}` })
                yield* Effect.logWarning(
                  `run ${run.id} started on release ${wanted}, which this server cannot load; it goes on the current release ${app.release}, ` +
                    `which its record names from now on${why}`,
                  cause
                )
                // So that the run says which code it runs: its record is what `GET /api/runs/:id` shows.
                if (run.release !== null) yield* Effect.orDie(journal.moveToRelease(run.id, app.release))
                return app
              })
            ),
            Effect.flatMap((app) => onApp(app, use)),
            Effect.scoped
          )
        })

      if (serving !== undefined) {
        yield* startRelease({ storage, first, given: serving.given, folderOf, makeCurrent })
        // Built from sources, which neither the store nor the release cache keeps (and which may
        // change on disk): held while the server lives when it is current, or when runs of an
        // earlier process on the same sources have not ended, so that runs still waiting (on a
        // person, a child, a timer) resume on it after a deploy or a restart, as their record says.
        const fromSources = releaseIdAt(root) === undefined
        if (fromSources && (firstTaken || (yield* storage.hasRunsGoingOn(first.release)))) {
          yield* RcMap.get(apps, first.release)
        } else if (!firstTaken) {
          // A first build that is not current (the store's release is) would hold its layers for nobody.
          firstTaken = true
          yield* Scope.close(serving.scope, Exit.void)
        }
      }

      return Releases.of({
        forRun,
        starting: workingApp(current),
        deployable: serving !== undefined,
        root,
        load,
        makeCurrent
      })
    })
  )
