/**
 * Serving a project: its config first (where to listen, where runs are stored), then its routes,
 * the server, recovery of unfinished runs, and (for `foundry dev`) rebuilding on every change
 * while the last good build keeps serving, with a type check in the background after each build.
 */
import { createHash } from "node:crypto"
import { readFileSync, statSync } from "node:fs"
import { join } from "node:path"
import { FileSystem, HttpServer } from "@effect/platform"
import { Cause, Chunk, Clock, Context, Effect, ExecutionStrategy, Exit, Fiber, Layer, Queue, Scope, Stream } from "effect"
import { Auth } from "../auth/Auth.js"
import { type BuildReport, BuildStatus } from "../compiler/BuildStatus.js"
import { LayerBuildError, MissingServices } from "../compiler/CompileError.js"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { emptyApp, loadProject } from "../compiler/loadProject.js"
import { loadSoundRoutes } from "../compiler/soundRoutes.js"
import { pureModuleProblems } from "../compiler/pureModuleCheck.js"
import { changedSettings, startSettings } from "../compiler/startSettings.js"
import { typeCheck } from "../compiler/typeCheck.js"
import { formatDiagnostic } from "../compiler/TypeDiagnostic.js"
import { ModelResolver } from "../models/Model.js"
import { loadConfig, type ProjectConfig } from "../router/loadConfig.js"
import type { ClusterConfig } from "../definitions/configFields.js"
import { RouteError, RouteErrors } from "../router/RouteError.js"
import type { RouteTable } from "../router/RouteTable.js"
import { routeFolders } from "../router/RoutePath.js"
import { releaseFile, releaseIdAt } from "../release/ReleaseManifest.js"
import { watchProjectChanges } from "../router/watch.js"
import { Schedules } from "../triggers/Schedules.js"
import { CliError } from "./CliError.js"
import { notAProjectOrRelease } from "./projectFolder.js"
import { addressOf, recordServing } from "./servingAddress.js"
import { clusterSettingsOf, Recovered, serverLayer, storeFileOf } from "./ProjectRuntime.js"
import { routeSummary } from "./routeSummary.js"
import { noticeWhileSlow } from "./slowBuildNotice.js"
import { reportError, say, style, warn } from "./terminal.js"

/** How to serve. */
export interface ServeOptions {
  readonly root: string
  readonly port: number | undefined
  readonly host: string | undefined
  readonly watch: boolean
  /** `root` is a release folder (`foundry start --release`): one without `release.json` is refused. */
  readonly release?: boolean
  /** Runs as a cluster runner with these settings over the config's `cluster`. */
  readonly cluster?: ClusterConfig | undefined
}

/** The broken files behind a failed build, as the build status lists them: each with its file, problem and fix. */
const problemsOf = (error: { readonly message: string }) => {
  if (error instanceof RouteErrors) return error.errors.map(({ file, fix, problem }) => ({ file, problem, fix }))
  if (error instanceof RouteError) return [{ file: error.file, problem: error.problem, fix: error.fix }]
  if (error instanceof MissingServices || error instanceof LayerBuildError) return error.problems
  const [problem = error.message, ...rest] = error.message.split("\n")
  return [{ file: "(build)", problem, fix: rest.join("\n").replace(/^\s*fix:\s*/, "") || "see the terminal of foundry dev" }]
}

/** What a file holds now, as a digest (a folder or a missing file has a digest of its own). */
const contentDigest = (file: string): string => {
  try {
    return statSync(file).isDirectory() ? "folder" : createHash("sha1").update(readFileSync(file)).digest("hex")
  } catch {
    return "missing"
  }
}

/** One build in a scope of its own inside `parent`: closed at once when the build fails, else as long as the build serves. */
const inScope = <A, E, R>(parent: Scope.Scope, load: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(parent, ExecutionStrategy.sequential)
    const result = yield* load.pipe(Scope.extend(scope), Effect.either)
    if (result._tag === "Left") yield* Scope.close(scope, Exit.void)
    return result
  })

/**
 * What a build gave to serve: the whole project; only the routes that build (`Part`, for `foundry
 * dev`, while it has no whole build to keep serving), the others as `problems`; or nothing.
 */
type Built =
  | { readonly _tag: "Whole"; readonly app: CompiledApp }
  | { readonly _tag: "Part"; readonly app: CompiledApp; readonly problems: RouteErrors }
  | { readonly _tag: "Failed"; readonly failure: Effect.Effect.Error<ReturnType<typeof loadProject>> }

/**
 * Builds the project as build `generation`, its layers held by `scope` (closing it releases them,
 * and an interrupted build's); when route files break it and `partAllowed`, the routes that build.
 */
const build = (root: string, generation: number, config: ProjectConfig, partAllowed: boolean, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const whole = yield* inScope(scope, loadProject(root, generation, config))
    if (whole._tag === "Right") return { _tag: "Whole", app: whole.right } satisfies Built
    const failure = whole.left
    if (!partAllowed || !(failure instanceof RouteErrors)) return { _tag: "Failed", failure } satisfies Built
    const part = yield* inScope(scope, loadSoundRoutes(root, generation, config))
    const built: Built = part._tag === "Right"
      ? { _tag: "Part", app: part.right.app, problems: part.right.problems }
      : { _tag: "Failed", failure }
    return built
  })

const partMessage = "Some route files do not build; serving the routes that do until they are fixed."

/** A Node system error's code (`EADDRINUSE`), if it is one. */
const codeOf = (cause: unknown): unknown => typeof cause === "object" && cause !== null && "code" in cause ? cause.code : undefined

/** Says so when the folder has none of the route folders: probably not a Foundry project (yet). */
const warnIfNotAProject = Effect.fn("cli.warnIfNotAProject")(function*(root: string, config: ProjectConfig) {
  const fs = yield* FileSystem.FileSystem
  const present = yield* Effect.forEach(routeFolders, (folder) => fs.exists(`${root}/${folder}`))
  if (config.configFile !== undefined || present.some((exists) => exists)) return
  yield* warn(style.yellow(
    `${root} has no ${routeFolders.map((f) => `${f}/`).join(", ")} and no foundry.config.ts: there is nothing to serve yet.\n` +
      `  fix: create a project with \`foundry init <dir>\`, or add an agent at agents/<name>/agent.ts`
  ))
})

/**
 * What is served where, said once the server listens: the routes of the build it serves (the
 * store's current release under `foundry start`, when it is not `app`), its store, cluster, API and
 * access, and what the models resolved to.
 */
const sayListening = (options: ServeOptions, app: CompiledApp, context: Context.Context<CurrentApp | Auth | ModelResolver>, address: string) =>
  Effect.gen(function*() {
    const served = yield* Context.get(context, CurrentApp).get
    const models = Context.get(context, ModelResolver)
    yield* say(style.bold(`Foundry ${options.watch ? "dev" : "server"}`) + style.dim(` (project ${options.root})`))
    yield* say(`  routes:  ${routeSummary(served.table)}`)
    yield* say(`  release: ${served.release}${served === app ? "" : " (deployed: the store's current release)"}`)
    yield* say(`  store:   ${storeFileOf(app)}`)
    const cluster = clusterSettingsOf(app, { cluster: options.cluster })
    if (cluster !== undefined) yield* say(`  cluster: runner ${cluster.host}:${cluster.port} (${cluster.shardsPerGroup} shards)`)
    yield* say(`  API:     ${address}/api  (OpenAPI: ${address}/api/openapi.json)`)
    yield* say(`  access:  ${Context.get(context, Auth).mode === "open" ? "open (loopback)" : "API tokens required (foundry token create)"}`)
    if (models.notice !== undefined) yield* say(style.yellow(`  note:    ${models.notice}`))
    yield* say(style.green(`listening on ${address}`))
  })

/**
 * The type check of the project at `root` in the background, its result in the build status and
 * the terminal, then the pure modules of the build that serves; checking a newer build interrupts
 * the check still running.
 */
const typeChecker = (root: string, status: BuildStatus["Type"]) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    let checking: Fiber.RuntimeFiber<void> | undefined
    // Whether the last check that finished found errors: the status says "checking" by now.
    let hadErrors = false
    const check = Effect.fnUntraced(function*(configFile: string | undefined, table: RouteTable | undefined) {
      const result = yield* typeCheck(root, configFile)
      const checkedAt = yield* Clock.currentTimeMillis
      yield* status.update((report) => ({
        ...report,
        types: { state: result.ok ? "ok" : "errors", diagnostics: result.diagnostics, checkedAt }
      }))
      if (!result.ok) {
        const lines = result.diagnostics.length > 0 ? result.diagnostics.map(formatDiagnostic) : [result.output]
        yield* reportError(`Type errors (${result.diagnostics.length || 1}); the build still serves, but fix them:`, {
          message: lines.join("\n")
        })
      } else if (hadErrors) {
        yield* say(style.green("types: no errors"))
      }
      hadErrors = !result.ok
      // A build that serves: its pure modules made as scripts will get them (too slow for the build itself).
      if (table === undefined) return
      const modules = yield* pureModuleProblems(table)
      if (modules.length > 0) {
        yield* reportError("Pure modules that scripts cannot import; the build still serves, but fix them:", new RouteErrors({ errors: modules }))
      }
    })
    return (configFile: string | undefined, table?: RouteTable) =>
      Effect.gen(function*() {
        if (checking !== undefined) yield* Fiber.interrupt(checking)
        yield* status.update((report) => ({ ...report, types: { ...report.types, state: "checking" } }))
        checking = yield* check(configFile, table).pipe(
          Effect.catchAllCause((cause) => warn(`type check crashed: ${String(cause)}`)),
          Effect.forkIn(scope)
        )
      })
  })

/** What a reload needs of the server it reloads. */
interface Served {
  readonly options: ServeOptions
  /** The config's settings the server started with (`startSettings`): a change needs a restart. */
  readonly settings: ReadonlyMap<string, string>
  readonly address: string
  readonly context: Context.Context<CurrentApp | Schedules | BuildStatus>
  /** Starts the type check of a build, interrupting the one running. */
  readonly checkTypes: (configFile: string | undefined, table?: RouteTable) => Effect.Effect<void>
}

/** The files of the next burst of saves and of those queued behind it, once each, sorted. */
const takeBurst = (changes: Queue.Dequeue<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    const burst = yield* Queue.take(changes)
    const more = yield* Queue.takeAll(changes)
    return [...new Set([...burst, ...Chunk.toReadonlyArray(more).flat()])].sort()
  })

/** Changed files as a line says them: the first three, and how many more. */
const changedList = (changed: ReadonlyArray<string>): string =>
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
const reloadOnChanges = (
  changes: Queue.Dequeue<ReadonlyArray<string>>,
  served: Served,
  first: {
    readonly app: CompiledApp
    readonly scope: Scope.CloseableScope | undefined
    readonly generation: number
    /** Whether `app` is the whole project (not the part that builds, nor nothing). */
    readonly whole: boolean
  }
) =>
  Effect.gen(function*() {
    const { address, checkTypes, options, settings } = served
    const current = Context.get(served.context, CurrentApp)
    const schedules = Context.get(served.context, Schedules)
    const status = Context.get(served.context, BuildStatus)
    let { app, scope: buildScope, whole } = first
    // Each reload builds under a number of its own; only the newest started may serve or report.
    let newest = first.generation
    // One reload's outcome is applied at a time: one still applying (its schedules synced, say)
    // when a newer one is built finishes first.
    const applying = yield* Effect.makeSemaphore(1)
    // What each saved file held when its burst came: a file system may report one save in two
    // bursts, and a file whose content a reload already read is no change. Forgotten when that
    // reload fails or takes long, so that saving again, even unchanged, builds again.
    const contents = new Map<string, string>()
    const forgetContents = Effect.sync(() => contents.clear())

    /** Loads the config and builds the project as build `generation`, its layers held by `scope`. */
    const attempt = (generation: number, scope: Scope.Scope) =>
      Effect.gen(function*() {
        const nextConfig = yield* loadConfig(options.root, generation).pipe(Effect.either)
        if (nextConfig._tag === "Left") return { _tag: "ConfigBroken", error: nextConfig.left } satisfies Attempt
        const unapplied = changedSettings(settings, startSettings(nextConfig.right.config, options))
        const restartNeeded = unapplied === undefined
          ? null
          : `${nextConfig.right.configFile ?? "foundry.config.ts"} changed ${unapplied}: ` +
            `restart foundry dev to apply it (still serving on ${address} with ${storeFileOf(app)})`
        if (restartNeeded !== null) yield* warn(style.yellow(restartNeeded))
        // A whole build keeps serving until the next whole one; a part gives way to the newest part.
        const next = yield* build(options.root, generation, nextConfig.right, !whole, scope)
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
        const previous = buildScope
        buildScope = scope
        app = next.app
        whole = next._tag === "Whole"
        yield* current.set(app)
        yield* schedules.sync(app)
        if (previous !== undefined) yield* Scope.close(previous, Exit.void)
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
        const digest = contentDigest(join(options.root, file))
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

/** What a start that takes long says: how long, and what it waits for (under `foundry dev`, that a save starts over). */
const startupNotice = (watch: boolean) => (elapsed: string, waitingFor: string) =>
  warn(style.yellow(`still building (${elapsed}): waiting for ${waitingFor}${watch ? "; a save starts the build over" : ""}`))

/** The config and the first build of a start, as build `generation`; the build's layers are held by `scope`. */
interface Started {
  readonly generation: number
  readonly config: ProjectConfig
  readonly first: Built
  readonly scope: Scope.CloseableScope
}

/**
 * Loads the config and builds the project as build `generation`. A broken config stops the start,
 * unless a save gave up an earlier try (`foundry dev`): then it is said, and the next save tries again.
 */
const startOnce = (options: ServeOptions, generation: number) =>
  Effect.uninterruptibleMask((restore) =>
    Effect.gen(function*() {
      const notice = startupNotice(options.watch)
      const config = yield* restore(noticeWhileSlow(loadConfig(options.root, generation), "the config to load", notice).pipe(
        Effect.catchTag("RouteError", (error) =>
          generation === 1
            ? Effect.fail(new CliError({ message: `the project's config is broken, so Foundry cannot start:\n${error.message}` }))
            : Effect.zipRight(reportError("The config is broken; save it again once it is fixed.", error), Effect.never))
      ))
      yield* warnIfNotAProject(options.root, config)
      const scope = yield* Scope.make()
      const first = yield* restore(noticeWhileSlow(build(options.root, generation, config, options.watch, scope), "the build to start", notice)).pipe(
        Effect.onError(() => Scope.close(scope, Exit.void))
      )
      return { generation, config, first, scope } satisfies Started
    })
  )

/**
 * `foundry dev`'s start: a save while the first build goes gives it up and starts over on the saved
 * files (a route module or layer that never finishes would otherwise hold up the server for good,
 * the fix saved in vain). The build given up is left to end in the background (a layer's
 * acquisition may never end), and whatever it built then is released.
 */
const startOnSaves = (options: ServeOptions, changes: Queue.Dequeue<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    let generation = 1
    while (true) {
      const attempt = yield* Effect.forkDaemon(startOnce(options, generation))
      const winner = yield* Effect.raceFirst(
        Effect.map(Fiber.join(attempt), (started) => ({ _tag: "Started", started }) as const),
        Effect.map(takeBurst(changes), (changed) => ({ _tag: "Saved", changed }) as const)
      ).pipe(Effect.onInterrupt(() => Fiber.interruptFork(attempt)))
      if (winner._tag === "Started") return winner.started
      // Given up: released once it ends, whether it was interrupted (it closes its scope) or had just built.
      yield* Effect.forkDaemon(Effect.flatMap(Fiber.interrupt(attempt), (exit) => Exit.isSuccess(exit) ? Scope.close(exit.value.scope, Exit.void) : Effect.void))
      generation++
      yield* say(style.dim(`changed: ${changedList(winner.changed)}; building again (build ${generation})`))
    }
  })

/** Serves the project at `root` until interrupted. */
export const serveProject = Effect.fn("cli.serveProject")(function*(options: ServeOptions) {
  if (options.release === true && releaseIdAt(options.root) === undefined) {
    return yield* new CliError({
      message: `${options.root} is not a release: it has no ${releaseFile} with a release id.\n` +
        "  fix: build one with `foundry build <project>` and start the folder it prints (<project>/.foundry/releases/rel_...)"
    })
  }
  const refusal = options.release === true ? undefined : notAProjectOrRelease(options.root)
  if (refusal !== undefined) return yield* new CliError({ message: refusal })

  // Watching starts before the config loads, so a save made while the server starts is not lost.
  const changes = yield* Queue.unbounded<ReadonlyArray<string>>()
  if (options.watch) {
    // A watcher that dies would leave the old build serving with no sign of it: say so, loudly.
    // Editors finish a save (even write, rename and chmod) within a few milliseconds.
    yield* watchProjectChanges(options.root, "50 millis").pipe(
      Stream.runForEach((changed) => Queue.offer(changes, changed)),
      Effect.catchAllCause((cause) =>
        reportError("The file watcher stopped; changes are no longer reloaded. Restart foundry dev.", { message: Cause.pretty(cause) })),
      Effect.forkScoped
    )
  }

  const { config, first, generation, scope: firstScope } = yield* options.watch ? startOnSaves(options, changes) : startOnce(options, 1)
  const host = options.host ?? config.config.server.host
  const port = options.port ?? config.config.server.port
  const settings = startSettings(config.config, options)

  let app: CompiledApp
  let buildScope: Scope.CloseableScope | undefined
  if (first._tag === "Failed") {
    yield* Scope.close(firstScope, Exit.void)
    // `foundry start` does not serve a project in parts: main's error report says why it stops.
    if (!options.watch) return yield* Effect.fail(first.failure)
    yield* reportError("The project's routes do not build; serving no routes until they do.", first.failure)
    app = emptyApp(options.root, config)
  } else {
    if (first._tag === "Part") yield* reportError(partMessage, first.problems)
    app = first.app
    buildScope = firstScope
  }

  // Whether the server may listen on `host` is decided while it starts (see auth/accessMode.ts): it needs the store's tokens.
  // `foundry start` serves releases: the store's current one, unless a release folder is named.
  const releases = options.watch || buildScope === undefined ? {} : { serving: { scope: buildScope, given: options.release === true } }
  const context = yield* Layer.build(serverLayer(app, { port, host }, { cluster: options.cluster, releases })).pipe(
    Effect.catchTag("ServeError", (error) =>
      Effect.fail(
        codeOf(error.cause) === "EADDRINUSE"
          ? new CliError({ message: `port ${port} on ${host} is taken: another server listens there. Stop it, or pass --port <another port>` })
          : new CliError({ message: `cannot listen on ${host}:${port}: ${error.cause instanceof Error ? error.cause.message : String(error.cause)}` })
      ))
  )
  const server = Context.get(context, HttpServer.HttpServer)
  const status = Context.get(context, BuildStatus)
  const address = server.address._tag === "TcpAddress" ? `http://${host}:${server.address.port}` : String(server.address)
  if (generation !== 1) yield* status.update((report) => ({ ...report, generation }))
  if (first._tag !== "Whole") {
    const problems = problemsOf(first._tag === "Part" ? first.problems : first.failure)
    yield* status.update((report) => ({ ...report, problems, partial: true }))
  }
  yield* sayListening(options, app, context, address)
  if (server.address._tag === "TcpAddress") yield* recordServing(options.root, addressOf(host, server.address.port))

  const recovered = Context.get(context, Recovered)
  if (recovered > 0) yield* say(`resumed ${recovered} unfinished run${recovered === 1 ? "" : "s"}`)
  if (!options.watch) return yield* Effect.never

  const checkTypes = yield* typeChecker(options.root, status)
  yield* checkTypes(app.table.configFile, app.table)

  yield* reloadOnChanges(changes, { options, settings, address, context, checkTypes }, { app, scope: buildScope, generation, whole: first._tag === "Whole" })
  return yield* Effect.never
})
