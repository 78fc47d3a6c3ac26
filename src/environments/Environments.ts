/**
 * The runtime of working environments: one session per scope (an instance's or a conversation's
 * tree), opened from the store on first use and dropped when idle; the verbs run against it, one
 * at a time per scope. Every change is written as a new version before the verb answers, with the
 * run and tool call that made it, so a run resumed after a crash sees the tree as of its last
 * recorded step, and a verb that was recorded answers what it answered then instead of applying
 * itself twice.
 */
import { Context, Data, Duration, Effect, Either, Encoding, Equal, Hash, Layer, Option, RcMap } from "effect"
import { McpClients } from "../mcp/McpClients.js"
import type { ImageContent } from "../models/Model.js"
import { maxImageBytes, viewableImageNames, viewableImageTypes } from "../models/viewableImages.js"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { EnvironmentRoute } from "../compiler/CompiledApp.js"
import type { ToolRunContext } from "../definitions/defineTool.js"
import { type EnvironmentScope, EnvironmentStorage, type EnvironmentVersion, type VersionConflict, type VersionKind } from "../durable/EnvironmentStorage.js"
import type { StoreError } from "../durable/StoreError.js"
import * as files from "./fileVerbs.js"
import type { ResolvedModules } from "./scriptModules.js"
import { openModules, type SessionModules } from "./sessionModules.js"
import { runScript, runTests, type ScriptFailed, shownLimit } from "./scriptVerbs.js"
import { ScriptRunner } from "./script/ScriptRunner.js"
import { redoTarget, undoState, undoTarget } from "./undoStack.js"
import { historyLimit, type VerbInput, type VerbName } from "./verbInputs.js"
import { seedTree, versionTree } from "./seedTree.js"
import { type EnvironmentFs, environmentFs, type FsError } from "./vfs/EnvironmentFs.js"
import { validateScript } from "./script/validateScript.js"
import { generatedDocs } from "./vfs/generatedDocs.js"
import type { InvalidPattern } from "./vfs/grep.js"
import { mediaTypeOf } from "./vfs/mediaType.js"
import { normalizePath } from "./vfs/paths.js"
import type { Tree } from "./vfs/Tree.js"
import { memoryVfs } from "./vfs/Vfs.js"

/** Whose tree: the environment of a build, and the run's agent, instance and conversation. */
export interface SessionScope extends EnvironmentRoute {
  readonly context: Pick<ToolRunContext<unknown>, "agent" | "instanceId" | "conversationId">
}

/** Which environment a verb works in, and the tool call it is. */
export interface VerbScope extends SessionScope {
  readonly context: Omit<ToolRunContext<unknown>, "idempotencyKey">
}

/** The environment could not be opened (its modules, or its directory). */
export class EnvironmentUnavailable extends Data.TaggedError("EnvironmentUnavailable")<{ readonly message: string }> {}

/** The scope's key in the store: per instance of the agent, or per conversation. */
export const scopeOf = (scope: {
  readonly environmentId: string
  readonly environment: Pick<EnvironmentDefinition, "persistence">
  readonly context: Pick<ToolRunContext<unknown>, "agent" | "instanceId" | "conversationId">
}): EnvironmentScope => ({
  environment: scope.environmentId,
  key: scope.environment.persistence === "conversation"
    ? `conversation:${scope.context.conversationId}`
    : `instance:${scope.context.agent}/${scope.context.instanceId}`
})

/** The working environments. */
export class Environments extends Context.Tag("foundry/Environments")<Environments, {
  /** Runs a verb; the answer is what the model is shown. */
  readonly verb: <K extends VerbName>(scope: VerbScope, verb: K, input: VerbInput<K>) => Effect.Effect<string, VerbError>
  /** `view_image`: the image at a path, for the model to see. */
  readonly viewImage: (scope: SessionScope, path: string) => Effect.Effect<{ readonly content: string; readonly image: ImageContent }, VerbError>
  /** Sessions open now (each holds a tree in memory). */
  readonly openSessions: Effect.Effect<number>
}>() {}

interface SessionState {
  tree: Tree
  head: number
  /** The generated files (`/README.md`, `/std`, `/skills` docs) of the modules as they were last: shown, never stored. */
  docs: { readonly of: ResolvedModules; readonly tree: Tree }
}

interface Session {
  readonly scope: EnvironmentScope
  /** Its modules: those of an MCP server not reached yet are connected by the scripts that import them. */
  readonly modules: SessionModules
  readonly readOnly: ReadonlyArray<string>
  readonly lock: Effect.Semaphore
  readonly state: SessionState
}

/** A session's key: equal by scope and build; it carries what opening the session needs. */
class SessionKey implements Equal.Equal {
  readonly id: string
  constructor(readonly scope: SessionScope) {
    const { environment, key } = scopeOf(scope)
    this.id = `${scope.release}\u0000${environment}\u0000${key}`
  }
  [Equal.symbol](that: Equal.Equal): boolean {
    return that instanceof SessionKey && that.id === this.id
  }
  [Hash.symbol](): number {
    return Hash.string(this.id)
  }
}

const generatedReadOnly = ["/std", "/README.md", "/skills/README.md", "/skills/imports.md"]

/** The tree a scope has before its first version: the definition's files, or its folder's. */
const initialTree = (scope: SessionScope) =>
  Either.match(seedTree(scope.environment, scope.root), {
    onLeft: (message) => Effect.fail(new EnvironmentUnavailable({ message })),
    onRight: Effect.succeed
  })

const docsFor = (environment: EnvironmentDefinition, modules: ResolvedModules): SessionState["docs"] => ({
  of: modules,
  tree: generatedDocs(modules.docs, environment.limits, { description: environment.description, readOnly: [...generatedReadOnly, ...environment.readOnlyPaths] })
})

/** The generated files of the session's modules as they are now (an MCP server's module changes once it is reached). */
const docsOf = (session: Session, environment: EnvironmentDefinition): Tree => {
  const modules = session.modules.current()
  if (session.state.docs.of !== modules) session.state.docs = docsFor(environment, modules)
  return session.state.docs.tree
}

// Opening does not wait on the MCP servers of tools modules: only the scripts that import them need them.
const openSession = (storage: EnvironmentStorage["Type"], clients: McpClients["Type"]) => Effect.fnUntraced(function*(key: SessionKey) {
  const { environment, root } = key.scope
  const scope = scopeOf(key.scope)
  const modules = yield* openModules(environment, root, key.scope.mounts).pipe(
    Effect.provideService(McpClients, clients),
    Effect.mapError((error) => new EnvironmentUnavailable({ message: `environment ${key.scope.environmentId}: ${error.message}` }))
  )
  const head = yield* storage.head(scope)
  const docs = docsFor(environment, modules.current())
  const state: SessionState = Option.isSome(head)
    ? { tree: head.value.tree, head: head.value.version.version, docs }
    : { tree: yield* initialTree(key.scope), head: 0, docs }
  const session: Session = {
    scope,
    modules,
    readOnly: [...generatedReadOnly, ...environment.readOnlyPaths],
    lock: yield* Effect.makeSemaphore(1),
    state
  }
  return session
})

/** The gateway over a copy of the session's tree (with the generated files in place). */
const workingFs = (session: Session, environment: EnvironmentDefinition, tree: Tree): EnvironmentFs =>
  environmentFs(memoryVfs(new Map([...tree, ...docsOf(session, environment)])), { readOnly: session.readOnly, limits: environment.limits })

/** The tree to store: the working copy without the generated files. */
const storedTree = (session: Session, environment: EnvironmentDefinition, fs: EnvironmentFs): Tree => {
  const tree = new Map(fs.vfs.files())
  for (const path of docsOf(session, environment).keys()) tree.delete(path)
  return tree
}

/** What a recorded call is keyed by: tool call ids are only unique within their run. */
const callKey = (context: VerbScope["context"]): string => `${context.runId}:${context.toolCallId}`

const describeVersion = (version: EnvironmentVersion, current: number): string =>
  `v${version.version}${version.version === current ? " (current)" : ""}  ${version.kind}  ${version.label}  ` +
  `${version.files} files, ${version.bytes} bytes  ${new Date(version.createdAt).toISOString()}${version.runId === null ? "" : `  run ${version.runId}`}`

const make = Effect.fnUntraced(function*(options: { readonly idleTimeToLive: Duration.DurationInput }) {
  const storage = yield* EnvironmentStorage
  const runner = yield* ScriptRunner
  const clients = yield* McpClients
  /** What scripts run with: the worker pool, and the MCP servers a tools module exposes. */
  const scriptServices = <A, E>(effect: Effect.Effect<A, E, ScriptRunner | McpClients>) =>
    effect.pipe(Effect.provideService(ScriptRunner, runner), Effect.provideService(McpClients, clients))
  const sessions = yield* RcMap.make({ lookup: openSession(storage, clients), idleTimeToLive: options.idleTimeToLive })

  /** Brings a session up to the store's head (another process, or a replayed call, wrote since). */
  const refresh = Effect.fnUntraced(function*(session: Session, scope: VerbScope) {
    const head = yield* storage.head(session.scope)
    if (Option.isSome(head)) {
      session.state.tree = head.value.tree
      session.state.head = head.value.version.version
    } else {
      session.state.tree = yield* initialTree(scope)
      session.state.head = 0
    }
  })

  /** Writes `tree` as the scope's next version, answering `answer`; refreshes and retries a lost race once. */
  const commit = Effect.fnUntraced(function*(session: Session, scope: VerbScope, kind: VersionKind, label: string, tree: Tree, answer: string) {
    const version = yield* storage.append({
      scope: session.scope,
      kind,
      label,
      tree,
      runId: scope.context.runId,
      toolCallId: callKey(scope.context),
      outcome: answer,
      expectedHead: session.state.head,
      // Before the first version the session holds the tree the scope starts with: kept as version 0.
      ...(session.state.head === 0 ? { start: session.state.tree } : {})
    })
    session.state.tree = tree
    session.state.head = version.version
    return answer
  })

  /**
   * A call that may change the tree, unless it already ran: then it answers what it answered, from
   * the version it wrote (the session is already at the head: `verb` reads it before each call).
   */
  const once = <E, R>(session: Session, scope: VerbScope, fresh: Effect.Effect<string, E, R>) =>
    Effect.flatMap(storage.recorded(session.scope, callKey(scope.context)), Option.match({
      onNone: () => fresh,
      onSome: (recorded) => Effect.succeed(recorded.outcome ?? "done")
    }))

  /** A verb applied to a working copy, which becomes the next version when something changed. */
  const mutate = (session: Session, scope: VerbScope, label: string, apply: (fs: EnvironmentFs) => Effect.Effect<string, VerbError | VersionConflict, ScriptRunner | McpClients> | Either.Either<string, VerbError>) =>
    once(session, scope, Effect.gen(function*() {
      const fs = workingFs(session, scope.environment, session.state.tree)
      const applied = apply(fs)
      const answer = yield* (Either.isEither(applied) ? applied : scriptServices(applied))
      return fs.changed() ? yield* commit(session, scope, "change", label, storedTree(session, scope.environment, fs), answer) : answer
    }))

  /** undo, redo, or restoring a chosen version: the tree of `target` as the next version. */
  const restore = Effect.fnUntraced(function*(session: Session, scope: VerbScope, kind: "undo" | "redo" | "change", target: number, label: string) {
    const stored = yield* versionTree(storage, session.scope, scope.environment, scope.root, target).pipe(
      Effect.catchTag("StartingFilesUnreadable", ({ message }) => new EnvironmentUnavailable({ message }))
    )
    if (Option.isNone(stored)) return yield* new files.VerbRefused({ message: `there is no version ${target}; history lists them` })
    const tree = stored.value
    return yield* commit(session, scope, kind, label, tree, `${label}: the files are as at version ${target}`)
  })

  // A replayed call answers what it answered then: the log has moved on since, so it is not read first.
  const undoOrRedo = (session: Session, scope: VerbScope, verb: "undo" | "redo", version: number | undefined) =>
    once(session, scope, undoOrRedoNow(session, scope, verb, version))

  const undoOrRedoNow = Effect.fnUntraced(function*(session: Session, scope: VerbScope, verb: "undo" | "redo", version: number | undefined) {
    if (version !== undefined) return yield* restore(session, scope, "change", version, `restore version ${version}`)
    const log = yield* storage.history(session.scope, { limit: Number.MAX_SAFE_INTEGER })
    const state = undoState([...log].reverse())
    const target = verb === "undo" ? undoTarget(state) : redoTarget(state)
    if (target === undefined) {
      return yield* new files.VerbRefused({ message: verb === "undo" ? "there is nothing to undo" : "there is nothing to redo: redo follows an undo, before any new change" })
    }
    return yield* restore(session, scope, verb, target, `${verb} to version ${target}`)
  })

  const present = Effect.fnUntraced(function*(session: Session, scope: VerbScope, input: VerbInput<"present">) {
    const path = yield* normalizePath(input.path)
    if (!path.startsWith("/out/")) {
      return yield* new files.VerbRefused({
        message: path === "/out" ? "present hands over one file: give its path, e.g. /out/report.xlsx" : `present hands over files from /out only: cp ${path} /out/<name> first, then present that`
      })
    }
    const caption = input.caption.trim()
    if (caption === "") {
      return yield* new files.VerbRefused({ message: `a caption is required, saying what the file is: present({ path: "${path}", caption: "Revenue by region, Q3 2026" })` })
    }
    const bytes = yield* workingFs(session, scope.environment, session.state.tree).readFile(path)
    const { context } = scope
    // A replayed call finds the artifact it made; presenting the same file again makes a new one.
    const existing = (yield* storage.artifacts(context.runId)).find((artifact) => artifact.toolCallId === callKey(context))
    const artifact = existing ?? (yield* storage.addArtifact({
      runId: context.runId,
      agent: context.agent,
      instanceId: context.instanceId,
      conversationId: context.conversationId,
      toolCallId: callKey(context),
      path,
      caption,
      mediaType: mediaTypeOf(path, bytes)
    }, bytes))
    return `presented ${path} (${artifact.mediaType}, ${artifact.size} bytes) as artifact ${artifact.id}`
  })

  const current = (session: Session, scope: SessionScope) => workingFs(session, scope.environment, session.state.tree)
  const scriptScope = (session: Session, scope: VerbScope, fs: EnvironmentFs) =>
    ({
      pool: new SessionKey(scope).id,
      fs,
      modules: session.modules.current(),
      connect: session.modules.connect,
      limits: scope.environment.limits,
      shown: shownLimit(scope.environment.limits.maxOutputBytes, scope.context.resultLimit),
      context: scope.context,
      permissions: scope.permissions,
      toolNames: scope.toolNames
    })

  const handlers: VerbHandlers = {
    read_file: (session, scope, input) => files.readFile(current(session, scope), input.path, input, scope.context.resultLimit),
    ls: (session, scope, input) => files.list(current(session, scope), input.path, input.recursive === true, scope.context.resultLimit),
    grep: (session, scope, input) => files.search(current(session, scope), input, scope.context.resultLimit),
    describe: (session, scope, input) => files.describe(current(session, scope), input.path),
    history: (session, _scope, input) =>
      Effect.map(storage.history(session.scope, { limit: input.limit ?? historyLimit }), (log) =>
        log.length === 0
          ? "no versions yet: the files are as the environment starts them"
          : log.map((entry) => describeVersion(entry, session.state.head)).join("\n")),
    write_file: (session, scope, input) =>
      mutate(session, scope, `write_file ${files.held(input.path)}`, (fs) => checkedWrite(session, fs, files.writeFile(fs, input.path, input.content), input.path)),
    edit_file: (session, scope, input) =>
      mutate(session, scope, `edit_file ${files.held(input.path)}`, (fs) => checkedWrite(session, fs, files.editFile(fs, input), input.path)),
    rm: (session, scope, input) => mutate(session, scope, `rm ${files.held(input.path)}`, (fs) => files.remove(fs, input.path)),
    mv: (session, scope, input) => mutate(session, scope, `mv ${files.held(input.from)} ${files.held(input.to)}`, (fs) => files.move(fs, input.from, input.to)),
    cp: (session, scope, input) => mutate(session, scope, `cp ${files.held(input.from)} ${files.held(input.to)}`, (fs) => files.copy(fs, input.from, input.to)),
    run_script: (session, scope, input) => mutate(session, scope, `run_script ${files.held(input.path)}`, (fs) => runScript(scriptScope(session, scope, fs), input)),
    // Tests check scripts; what they write is not kept.
    run_tests: (session, scope, input) => scriptServices(runTests(scriptScope(session, scope, current(session, scope)), input)),
    checkpoint: (session, scope, input) =>
      once(session, scope, Effect.suspend(() => {
        const label = input.label.trim()
        return commit(session, scope, "checkpoint", label, session.state.tree, `checkpoint "${label}" at version ${session.state.head + 1}`)
      })),
    undo: (session, scope, input) => undoOrRedo(session, scope, "undo", input.version),
    redo: (session, scope) => undoOrRedo(session, scope, "redo", undefined),
    present
  }

  const verb = <K extends VerbName>(scope: VerbScope, name: K, input: VerbInput<K>) =>
    Effect.scoped(Effect.gen(function*() {
      const session = yield* RcMap.get(sessions, new SessionKey(scope))
      const handler: VerbHandler<K> = handlers[name]
      const run = Effect.suspend(() => handler(session, scope, input))
      // Another process (or a session of another build) may have written since this session read the tree.
      const upToDate = Effect.flatMap(storage.headVersion(session.scope), (latest) => latest === session.state.head ? Effect.void : refresh(session, scope))
      // A write raced by another process: read the head again and apply the verb to it; a script is
      // not run twice behind the model's back (its tools may have effects), the model is told instead.
      const again = name === "run_script"
        ? Effect.zipRight(refresh(session, scope), new files.VerbRefused({ message: "another process changed these files while the script ran, so nothing it did was kept: look at them again (ls, history) and run it again" }))
        : Effect.zipRight(refresh(session, scope), run).pipe(
          Effect.catchTag("VersionConflict", () => new files.VerbRefused({ message: "another process changed these files at the same moment; look at them again (ls, history) and retry" }))
        )
      return yield* session.lock.withPermits(1)(Effect.zipRight(upToDate, run).pipe(Effect.catchTag("VersionConflict", () => again)))
    }))

  const viewImage = (scope: SessionScope, path: string) =>
    Effect.scoped(Effect.gen(function*() {
      const session = yield* RcMap.get(sessions, new SessionKey(scope))
      const bytes = yield* current(session, scope).readFile(path)
      const mediaType = mediaTypeOf(path, bytes)
      if (!viewableImageTypes.has(mediaType)) {
        return yield* new files.VerbRefused({ message: `${path} is ${mediaType}, not an image a model can see (${viewableImageNames}); describe tells what it holds` })
      }
      if (bytes.length > maxImageBytes) {
        return yield* new files.VerbRefused({ message: `${path} is ${bytes.length} bytes; images up to ${maxImageBytes} bytes can be shown: make a smaller copy in a script first` })
      }
      return { content: `showing ${path} (${mediaType}, ${bytes.length} bytes)`, image: { mediaType, data: Encoding.encodeBase64(bytes) } }
    }))

  return Environments.of({ verb, viewImage, openSessions: Effect.map(RcMap.keys(sessions), (keys) => keys.length) })
})

/** Whatever a verb can fail with; each message says what was wrong and what to do. */
export type VerbError = FsError | InvalidPattern | files.VerbRefused | ScriptFailed | EnvironmentUnavailable | StoreError

/** How one verb runs, in a session, answering the model's text. */
type VerbHandler<K extends VerbName> = (session: Session, scope: VerbScope, input: VerbInput<K>) => Effect.Effect<string, VerbError | VersionConflict> | Either.Either<string, VerbError>

type VerbHandlers = { readonly [K in VerbName]: VerbHandler<K> }

/** A script written by `write_file`/`edit_file` must parse and import what exists; refused otherwise. */
const checkedWrite = (session: Session, fs: EnvironmentFs, written: files.VerbAnswer, path: string) =>
  Effect.flatMap(written, (answer) => {
    if (!files.isScript(path)) return Effect.succeed(answer)
    const modules = session.modules.current().exports
    return Effect.flatMap(fs.readText(path), (source) =>
      Effect.flatMap(validateScript(path, source, modules, { test: files.isTestFile(path) }), (check) => {
        if (check._tag !== "Valid") return new files.VerbRefused({ message: `${path} was not saved: ${check.message}` })
        const unchecked = modules.filter((module) => module.exportsUnknown === true && check.imports.includes(module.name))
        return Effect.succeed(unchecked.length === 0
          ? `${answer}; the script checks out`
          : `${answer}; the script checks out, but for what it imports from ${unchecked.map((module) => `env:${module.name}`).join(", ")}, ` +
            `whose MCP server is not reached yet (see /std/${unchecked[0]?.name}/index.d.ts): that is checked when the script runs`)
      }))
  })

/** The service: sessions dropped after `idleTimeToLive` without a verb (default a minute). */
export const layer = (options?: { readonly idleTimeToLive?: Duration.DurationInput | undefined }): Layer.Layer<Environments, never, EnvironmentStorage | ScriptRunner | McpClients> =>
  Layer.scoped(Environments, make({ idleTimeToLive: options?.idleTimeToLive ?? Duration.minutes(1) }))
