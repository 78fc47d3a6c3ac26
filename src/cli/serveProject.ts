/**
 * Serving a project: its config first (where to listen, where runs are stored), then its routes,
 * the server, recovery of unfinished runs, and (for `foundry dev`) rebuilding on every change
 * while the last good build keeps serving, with a type check in the background after each build.
 */
import { FileSystem, HttpServer } from "@effect/platform"
import { Cause, Context, Effect, Exit, Fiber, Layer, Queue, Scope, Stream } from "effect"
import { Auth } from "../auth/Auth.js"
import { BuildStatus } from "../compiler/BuildStatus.js"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { emptyApp } from "../compiler/loadProject.js"
import { startSettings } from "../compiler/startSettings.js"
import { resolveModels } from "../engine/agentModels.js"
import { ModelResolver } from "../models/Model.js"
import { loadConfig, type ProjectConfig } from "../router/loadConfig.js"
import type { ClusterConfig } from "../definitions/configFields.js"
import { routeFolders } from "../router/RoutePath.js"
import { releaseFile, releaseIdAt } from "../release/ReleaseManifest.js"
import { watchProjectChanges } from "../router/watch.js"
import { unreadableSecrets } from "../triggers/webhookSecrets.js"
import { CliError } from "./CliError.js"
import { notAProjectOrRelease } from "./projectFolder.js"
import { addressOf, recordServing, urlOf } from "./servingAddress.js"
import { clusterSettingsOf, Recovered, serverLayer, storeFileOf } from "./ProjectRuntime.js"
import { routeSummary } from "./routeSummary.js"
import { servedBuild } from "./servedBuild.js"
import { noticeWhileSlow } from "./slowBuildNotice.js"
import { build, type Built, partMessage, problemsOf } from "./projectBuild.js"
import { changedList, reloadOnChanges, takeBurst } from "./reloadOnChanges.js"
import { reportError, say, style, warn } from "./terminal.js"
import { typeChecker } from "./typeChecker.js"

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
    // Said for the agents it concerns, if any: a project on the demo model has nothing to be told.
    const fellBack = [...served.agents.values()].filter((agent) => resolveModels(models, agent).some((resolved) => resolved.fallbackFrom !== undefined))
    if (models.notice !== undefined && fellBack.length > 0) {
      yield* say(style.yellow(`  note:    ${models.notice} (here: ${fellBack.map((agent) => agent.id).join(", ")})`))
    }
    // Said before the first delivery is refused for it: the log says it again at that delivery.
    for (const problem of yield* unreadableSecrets(served.table.config)) yield* warn(style.yellow(`  warning: ${problem}`))
    yield* say(style.green(`listening on ${address}`))
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

  // Made before the server, so that the build serving when it stops is released after it.
  const served = options.watch ? yield* servedBuild(buildScope) : undefined
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
  // As bound: 0.0.0.0 says every interface.
  const address = server.address._tag === "TcpAddress" ? urlOf(host, server.address.port) : String(server.address)
  if (generation !== 1) yield* status.update((report) => ({ ...report, generation }))
  if (first._tag !== "Whole") {
    const problems = problemsOf(first._tag === "Part" ? first.problems : first.failure)
    yield* status.update((report) => ({ ...report, problems, partial: true }))
  }
  yield* sayListening(options, app, context, address)
  if (server.address._tag === "TcpAddress") yield* recordServing(options.root, addressOf(host, server.address.port))

  const recovered = Context.get(context, Recovered)
  if (recovered > 0) yield* say(`resumed ${recovered} unfinished run${recovered === 1 ? "" : "s"}`)
  // `foundry start`: no watching, and so no build held for reloads.
  if (served === undefined) return yield* Effect.never

  const checkTypes = yield* typeChecker(options.root, status)
  yield* checkTypes(app.table.configFile, app.table)

  yield* reloadOnChanges(changes, { root: options.root, listen: options, settings, address, context, checkTypes }, { app, build: served, generation, whole: first._tag === "Whole" })
  return yield* Effect.never
})
