/**
 * `foundry dev` after its first build: each burst of saves rebuilds the project, and a build that
 * succeeds serves in place of the last good one.
 */
import { createHash } from "node:crypto"
import { readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { Cause, Chunk, Clock, Context, Effect, Exit, Fiber, Queue, Scope } from "effect"
import { type BuildReport, BuildStatus } from "../compiler/BuildStatus.js"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { changedSettings, startSettings } from "../compiler/startSettings.js"
import { loadConfig, type ProjectConfig } from "../router/loadConfig.js"
import type { RouteTable } from "../router/RouteTable.js"
import { Schedules } from "../triggers/Schedules.js"
import { build, type Built, partMessage, problemsOf } from "./projectBuild.js"
import { storeFileOf } from "./ProjectRuntime.js"
import { routeSummary } from "./routeSummary.js"
import type { ServedBuild } from "./servedBuild.js"
import { noticeWhileSlow } from "./slowBuildNotice.js"
import { reportError, say, style, warn } from "./terminal.js"

/** What a file holds now, as a digest (a folder or a missing file has a digest of its own). */
const contentDigest = (file: string): string => {
  try {
    return statSync(file).isDirectory() ? "folder" : createHash("sha1").update(readFileSync(file)).digest("hex")
  } catch {
    return "missing"
  }
}

/** What a reload needs of the server it reloads. */
export interface Served {
  /** The project's folder. */
  readonly root: string
  /** Where the server listens as the command line set it (`startSettings`). */
  readonly listen: { readonly port?: number | undefined; readonly host?: string | undefined }
  /** The config's settings the server started with (`startSettings`): a change needs a restart. */
  readonly settings: ReadonlyMap<string, string>
  readonly address: string
  readonly context: Context.Context<CurrentApp | Schedules | BuildStatus>
  /** Starts the type check of a build, interrupting the one running. */
  readonly checkTypes: (configFile: string | undefined, table?: RouteTable) => Effect.Effect<void>
}

/** The files of the next burst of saves and of those queued behind it, once each, sorted. */
export const takeBurst = (changes: Queue.Dequeue<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    const burst = yield* Queue.take(changes)
    const more = yield* Queue.takeAll(changes)
    return [...new Set([...burst, ...Chunk.toReadonlyArray(more).flat()])].sort()
  })

/** Changed files as a line says them: the first three, and how many more. */
export const changedList = (changed: ReadonlyArray<string>): string =>
  changed.length > 3 ? `${changed.slice(0, 3).join(", ")} and ${changed.length - 3} more` : changed.join(", ") || "(folders)"

/** What one reload came to: a broken config, or a build (whole, part or failed) of the config it loaded. */
type Attempt =
  | { readonly _tag: "ConfigBroken"; readonly error: Effect.Effect.Error<ReturnType<typeof loadConfig>> }
  | { readonly _tag: "Built"; readonly config: ProjectConfig; readonly restartNeeded: string | null; readonly next: Built }

/**
 * `foundry dev` after its first build (`first`): each burst of saved files rebuilds the project
 * and, when the build succeeds, serves it in place of the last good one, whose scope is then
 * closed; a broken config or build leaves the last good one serving and says why. While no whole
 * build serves, the part of the newest that builds serves instead. A newer save gives up a build
 * still going (a layer that never finishes holds up nothing), and a build that takes long says
 * what it waits for.
 */
export const reloadOnChanges = (
  changes: Queue.Dequeue<ReadonlyArray<string>>,
  served: Served,
  first: {
    readonly app: CompiledApp
    /** The scope of the build serving, handed over to each build that serves after it. */
    readonly build: ServedBuild
    readonly generation: number
    /** Whether `app` is the whole project (not the part that builds, nor nothing). */
    readonly whole: boolean
  }
) =>
  Effect.gen(function*() {
    const { address, checkTypes, listen, root, settings } = served
    const current = Context.get(served.context, CurrentApp)
    const schedules = Context.get(served.context, Schedules)
    const status = Context.get(served.context, BuildStatus)
    let { app, whole } = first
    // Each reload builds under a number of its own; only the newest started may serve or report.
    let newest = first.generation
    // One reload's outcome is applied at a time: one still applying (its schedules synced, say)
    // when a newer one is built finishes first.
    const applying = yield* Effect.makeSemaphore(1)
    // What each saved file held when its burst came: a file system may report one save in two
    // bursts, and a file whose content a reload already read is no change. Forgotten when that
    // reload fails, leaves files out or takes long, so that saving again, even unchanged, builds
    // again (a file left out for a package not installed yet builds once it is).
    const contents = new Map<string, string>()
    const forgetContents = Effect.sync(() => contents.clear())

    /** Loads the config and builds the project as build `generation`, its layers held by `scope`. */
    const attempt = (generation: number, scope: Scope.Scope) =>
      Effect.gen(function*() {
        const nextConfig = yield* loadConfig(root, generation).pipe(Effect.either)
        if (nextConfig._tag === "Left") return { _tag: "ConfigBroken", error: nextConfig.left } satisfies Attempt
        const unapplied = changedSettings(settings, startSettings(nextConfig.right.config, listen))
        const restartNeeded = unapplied === undefined
          ? null
          : `${nextConfig.right.configFile ?? "foundry.config.ts"} changed ${unapplied}: ` +
            `restart foundry dev to apply it (still serving on ${address} with ${storeFileOf(app)})`
        if (restartNeeded !== null) yield* warn(style.yellow(restartNeeded))
        // A whole build keeps serving until the next whole one; a part gives way to the newest part.
        const next = yield* build(root, generation, nextConfig.right, !whole, scope)
        return { _tag: "Built", config: nextConfig.right, restartNeeded, next } satisfies Attempt
      })

    /**
     * Serves what build `generation` gave, or says why it cannot; a build a newer one replaces is
     * only released. Runs uninterruptible, but for the type check: a check forked uninterruptible
     * would hold up the server's shutdown until tsc ends.
     */
    const apply = (generation: number, outcome: Attempt, scope: Scope.CloseableScope) =>
      Effect.gen(function*() {
        if (generation !== newest) return yield* Scope.close(scope, Exit.void)
        if (outcome._tag === "ConfigBroken" || outcome.next._tag === "Failed") yield* Scope.close(scope, Exit.void)
        if (outcome._tag === "ConfigBroken") {
          yield* forgetContents
          yield* reportError("Reload failed: the config is broken; still serving the last good build.", outcome.error)
          return yield* status.update((report) => ({ ...report, problems: problemsOf(outcome.error) }))
        }
        const { config, next, restartNeeded } = outcome
        if (next._tag === "Failed") {
          yield* forgetContents
          yield* reportError("Reload failed; still serving the last good build.", next.failure)
          yield* status.update((report) => ({ ...report, problems: problemsOf(next.failure), restartNeeded }))
          return yield* Effect.interruptible(checkTypes(config.configFile))
        }
        app = next.app
        whole = next._tag === "Whole"
        yield* current.set(app)
        yield* first.build.replace(scope)
        if (next._tag === "Part") yield* forgetContents
        // Served already: a store that fails the sync leaves the schedules of the build before.
        const unsynced = yield* schedules.sync(app).pipe(
          Effect.as(null),
          Effect.catchAll((error) => Effect.zipRight(forgetContents, Effect.succeed(error.message)))
        )
        if (unsynced !== null) {
          yield* warn(style.yellow(
            `build ${generation} serves, but its schedules could not be synced: ${unsynced}; ` +
              "they are synced at the next reload (save a file to try again)"
          ))
        }
        const problems = next._tag === "Part" ? problemsOf(next.problems) : []
        yield* status.update((report) => ({ ...report, generation, builtAt: Date.now(), problems, partial: !whole, restartNeeded }))
        if (next._tag === "Part") yield* reportError(partMessage, next.problems)
        const files = next._tag === "Part" ? new Set(next.problems.errors.map((error) => error.file)).size : 0
        const leftOut = next._tag === "Part" ? `, ${files} file${files === 1 ? "" : "s"} left out` : ""
        yield* say(style.cyan(`reloaded (build ${generation}${leftOut}): ${routeSummary(app.table)}`))
        yield* Effect.interruptible(checkTypes(app.table.configFile, app.table))
      })

    const slowNotice = (generation: number) => (elapsed: string, waitingFor: string) =>
      Effect.zipRight(
        forgetContents,
        warn(style.yellow(
          `still building build ${generation} (${elapsed}): waiting for ${waitingFor}; ` +
            "what served before keeps serving, and a save starts the build over"
        ))
      )

    /** The build status of build `generation` while it is the one going, `f` of what it says; else unchanged. */
    const whileGoing = (generation: number, f: (going: NonNullable<BuildReport["inProgress"]>) => Partial<BuildReport>) =>
      status.update((report) =>
        report.inProgress === null || report.inProgress.generation !== generation ? report : { ...report, ...f(report.inProgress) }
      )

    // Interruptible while it builds (a newer save gives it up); once built, it is served or released whole.
    const reload = (changed: ReadonlyArray<string>) =>
      Effect.suspend(() => {
        const generation = ++newest
        return Effect.uninterruptibleMask((restore) =>
          Effect.gen(function*() {
            yield* say(style.dim(`changed: ${changedList(changed)}`))
            const since = yield* Clock.currentTimeMillis
            yield* status.update((report) => ({ ...report, building: true, inProgress: { generation, since, waitingFor: null } }))
            const scope = yield* Scope.make()
            const told = (waitingFor: string) => whileGoing(generation, (going) => ({ inProgress: { ...going, waitingFor } }))
            const outcome = yield* restore(noticeWhileSlow(attempt(generation, scope), "the build to start", slowNotice(generation), told)).pipe(
              Effect.onError(() => Scope.close(scope, Exit.void))
            )
            yield* applying.withPermits(1)(apply(generation, outcome, scope))
          })
        ).pipe(
          // Only while it is the build going: one given up leaves the newer one's status alone.
          Effect.ensuring(whileGoing(generation, () => ({ building: false, inProgress: null })))
        )
      }).pipe(
        Effect.catchAllCause((cause) =>
          Cause.isInterruptedOnly(cause) ? Effect.void : Effect.zipRight(forgetContents, warn(`reload crashed: ${String(cause)}`))
        )
      )

    const changedContent = (files: ReadonlyArray<string>) =>
      files.filter((file) => {
        const digest = contentDigest(join(root, file))
        if (contents.get(file) === digest) return false
        contents.set(file, digest)
        return true
      })
    // The newest save wins: the reload still going is given up without waiting for it, since a
    // layer's acquisition (uninterruptible) may never end; it releases what it built once it does.
    let running: Fiber.RuntimeFiber<void> | undefined
    yield* Effect.addFinalizer(() => running === undefined ? Effect.void : Fiber.interruptFork(running))
    yield* Effect.gen(function*() {
      const changed = changedContent(yield* takeBurst(changes))
      if (changed.length === 0) return
      if (running !== undefined) yield* Fiber.interruptFork(running)
      running = yield* Effect.forkDaemon(reload(changed))
    }).pipe(Effect.forever, Effect.forkScoped)
  })
