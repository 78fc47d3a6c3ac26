/**
 * `run_script` and `run_tests`: a script read from the tree, checked, and run on the scope's
 * worker with the environment's modules; its calls to host modules (`env:fs`, adapters, tools)
 * answered here, every change going through the same gateway as the verbs. What the model is
 * shown is cut to the output limit, the rest written to a file in /tmp.
 */
import { Context, Data, Effect, Either, Runtime } from "effect"
import type { EnvironmentLimits } from "../definitions/defineEnvironment.js"
import type { AdapterFunctions } from "../definitions/environmentModules.js"
import type { PermissionRule } from "../definitions/configFields.js"
import type { AnyTool, ToolRunContext } from "../definitions/defineTool.js"
import { deniedByRule, matchingRule } from "../engine/permissions.js"
import { mcpToolName } from "../mcp/offerable.js"
import { approvalPolicy, decodeCall, failedOutcome, runTool } from "../engine/executeTool.js"
import { McpClients } from "../mcp/McpClients.js"
import { isScript, isTestFile, VerbRefused } from "./fileVerbs.js"
import { adapterFs, nestedToolContext, type ResolvedModules, type ToolsModuleUnavailable } from "./scriptModules.js"
import { ScriptRunner } from "./script/ScriptRunner.js"
import type { ScriptHost, ScriptResult } from "./script/scriptRun.js"
import { validateScript } from "./script/validateScript.js"
import type { EnvironmentFs } from "./vfs/EnvironmentFs.js"
import { fsCall } from "./vfs/fsModule.js"
import { normalizePath } from "./vfs/paths.js"

/** A script failed, ran out of time or broke a limit; its changes were not kept. */
export class ScriptFailed extends Data.TaggedError("ScriptFailed")<{ readonly message: string }> {}

/** Where a script runs: the scope's worker pool, the tree it changes, the modules it imports. */
export interface ScriptScope {
  readonly pool: string
  readonly fs: EnvironmentFs
  /** The modules as the session knows them now. */
  readonly modules: ResolvedModules
  /** The modules with those `imports` names connected (an MCP server not reached yet is tried again); or why not. */
  readonly connect: (imports: ReadonlyArray<string>) => Effect.Effect<ResolvedModules, ToolsModuleUnavailable>
  readonly limits: EnvironmentLimits
  /** How much of a run's value, and of its output, its answer shows (`shownLimit`). */
  readonly shown: ShownLimit
  readonly context: Omit<ToolRunContext<unknown>, "idempotencyKey">
  readonly permissions: ReadonlyArray<PermissionRule>
  readonly toolNames: ReadonlyMap<AnyTool, string>
}

/** How many bytes of a script's value, and of its output, an answer shows, and what set that. */
export interface ShownLimit {
  readonly bytes: number
  readonly why: string
}

/** Room kept in what the model is shown of a result for an answer's notes and its path. */
const noteRoom = 1000

/**
 * `maxOutputBytes`, unless what the model is shown of a result (`resultLimit` characters) cannot
 * hold a value and an output that long with their notes: then half of it each, so that the notes
 * saying where the rest is are never what gets cut.
 */
export const shownLimit = (maxOutputBytes: number, resultLimit: number): ShownLimit => {
  const half = Math.max(200, Math.floor((resultLimit - noteRoom) / 2))
  return half < maxOutputBytes
    ? { bytes: half, why: "as much as the model's context window lets a result show" }
    : { bytes: maxOutputBytes, why: "maxOutputBytes" }
}

/** What a call that needs a person's approval is answered from a script: it cannot wait for one. */
const cannotWait = "a script cannot wait for one. Call the tool directly (not from a script) if you have it, or say what you would do and let the person decide."

/** Why a call a permission rule asks a person about does not run from a script. */
const askedByRule = (name: string): string => `not run: the project's permission rules ask a person to approve calls to ${name}, and ${cannotWait}`

/** Answers a script's calls to host modules. */
const hostFor = (scope: ScriptScope, runtime: Runtime.Runtime<never>, services: Context.Context<unknown>, mcp: McpClients["Type"]): ScriptHost => {
  const adapters = new Map<string, AdapterFunctions>()
  let toolCalls = 0
  const { context } = scope
  const adapterContext = { runId: context.runId, agent: context.agent, instanceId: context.instanceId, conversationId: context.conversationId }
  return {
    call: async (module, fn, args) => {
      if (module === "fs") {
        const result = fsCall(scope.fs, fn, args)
        if (Either.isLeft(result)) throw new Error(result.left.message)
        return result.right
      }
      const adapter = scope.modules.adapters.get(module)
      if (adapter !== undefined) {
        const functions = adapters.get(module) ?? adapter.create(adapterFs(scope.fs), adapterContext)
        adapters.set(module, functions)
        const call = Object.hasOwn(functions, fn) ? functions[fn] : undefined
        if (call === undefined) throw new Error(`env:${module} has no function ${fn}`)
        return await call(...args)
      }
      const tool = scope.modules.tools.get(module)?.get(fn)
      if (tool === undefined) throw new Error(`env:${module} has no function ${fn}`)
      toolCalls += 1
      const index = toolCalls
      // The project's permission rules hold for a call from a script as for the model's own: by the name the model would call it.
      const name = tool._tag === "Mcp" ? mcpToolName(tool.mount.name, tool.tool) ?? fn : scope.toolNames.get(tool.tool) ?? fn
      const rule = matchingRule(scope.permissions, context.agent, name)
      if (rule?.action === "deny") throw new Error(deniedByRule(rule))
      if (rule?.action === "ask") throw new Error(askedByRule(name))
      if (tool._tag === "Mcp") {
        const input = args[0] ?? {}
        if (typeof input !== "object" || input === null || Array.isArray(input)) throw new Error(`${fn} takes one object of arguments`)
        const answered = await Runtime.runPromise(runtime)(Effect.either(mcp.call(tool.mount, tool.tool, Object.fromEntries(Object.entries(input)))))
        if (Either.isLeft(answered)) throw new Error(answered.left.message)
        return answered.right.text
      }
      const callId = `${context.toolCallId}/${index}`
      const outcome = await Runtime.runPromise(runtime)(Effect.gen(function*() {
        const compiled = { id: `${module}/${fn}`, name: fn, file: undefined, definition: tool.tool, spec: { name: fn, description: tool.tool.description, parameters: {} } }
        const decoded = yield* decodeCall(compiled, { id: callId, name: fn, arguments: JSON.stringify(args[0] ?? {}) }, [fn])
        if (Either.isLeft(decoded)) return decoded.left
        // A person's approval cannot be waited for inside a script: a call that needs one does not run
        // (unless a rule allows it, as a rule lets the model's own call through without asking).
        if (rule?.action !== "allow" && approvalPolicy(decoded.right).asks) {
          // The bootstrap puts "env:<module> <fn>: " before this.
          return failedOutcome(decoded.right.rawInput, `not run: this call needs a person's approval (the tool's approval policy), and ${cannotWait}`)
        }
        return yield* runTool(decoded.right, nestedToolContext(context, index), services, {
          timeout: scope.limits.scriptTimeoutMs,
          // A script reads text.
          seesImages: false
        })
      }))
      if (outcome._tag === "Failed") throw new Error(outcome.error)
      return outcome.output
    }
  }
}

const encoder = new TextEncoder()
const decoder = new TextDecoder()

const byteLength = (text: string): number => encoder.encode(text).length

/** The first `limit` bytes of UTF-8 `encoded`, without a character split at the cut. */
const headOf = (encoded: Uint8Array, limit: number): string => decoder.decode(encoded.subarray(0, limit)).replace(/\uFFFD$/, "")

/** The last `limit` bytes of UTF-8 `encoded`, without a character split at the cut. */
const tailOf = (encoded: Uint8Array, limit: number): string => decoder.decode(encoded.subarray(encoded.length - limit)).replace(/^\uFFFD+/, "")

/** The last `limit` UTF-8 bytes of output: where a failure's reason usually is. */
const lastBytes = (text: string, limit: number): string => {
  const encoded = encoder.encode(text)
  return encoded.length <= limit ? text : `[${encoded.length - limit} earlier bytes of output not shown]\n${tailOf(encoded, limit)}`
}

/** Text cut to `limit` UTF-8 bytes without splitting a character. */
const cutBytes = (text: string, limit: number): string => {
  const encoded = encoder.encode(text)
  return encoded.length <= limit ? text : headOf(encoded, limit)
}

/**
 * An error's text within `limit` UTF-8 bytes: its start and its end, as an error says what went
 * wrong first (its name and message) and where last (its stack), and a script may throw one of
 * any size; the tool's event and the log keep what the model is shown.
 */
const errorShown = (text: string, limit: number): string => {
  const encoded = encoder.encode(text)
  if (encoded.length <= limit) return text
  const half = Math.floor(limit / 2)
  return `${headOf(encoded, half)}\n[${encoded.length - 2 * half} bytes of the error not shown]\n${tailOf(encoded, half)}`
}

/**
 * A test file's results, one line each, within `shown` bytes: all in order when they fit; else the
 * failed ones first, as many as fit (one at least), and a line saying how many were left out.
 */
const testLines = (results: ReadonlyArray<{ readonly name: string; readonly ok: boolean; readonly error?: string }>, shown: ShownLimit): string => {
  const lines = results.map((test) => {
    const text = test.ok ? `ok ${cutBytes(test.name, shown.bytes)}` : `FAILED ${cutBytes(test.name, shown.bytes)}: ${errorShown(test.error ?? "failed", shown.bytes)}`
    return { ok: test.ok, text, bytes: byteLength(text) + 1 }
  })
  if (lines.reduce((sum, line) => sum + line.bytes, 0) <= shown.bytes) return lines.map((line) => line.text).join("\n")
  const ordered = [...lines.filter((line) => !line.ok), ...lines.filter((line) => line.ok)]
  const kept: Array<string> = []
  let used = 0
  for (const line of ordered) {
    if (kept.length > 0 && used + line.bytes > shown.bytes) break
    kept.push(line.text)
    used += line.bytes
  }
  const failedLeft = ordered.slice(kept.length).filter((line) => !line.ok).length
  return `${kept.join("\n")}\n[${ordered.length - kept.length} more results not shown (${failedLeft} of them failed), past ${shown.bytes} bytes (${shown.why}): ` +
    `run one test file at a time, or split a large one]`
}

/**
 * The output as the model is shown it: within the limit, and when longer, what was captured of it
 * spilled to a file of its own in /tmp (named by run and call: calls of other runs may share an
 * id), which says where it ends when less than all of it was captured.
 */
const shownOutput = (scope: ScriptScope, output: string, outputBytes: number): string => {
  if (outputBytes <= scope.shown.bytes) return output
  const safe = (id: string) => id.replace(/[^A-Za-z0-9_-]/g, "_")
  const file = `/tmp/output-${safe(scope.context.runId)}-${safe(scope.context.toolCallId)}.txt`
  // The whole output goes to the file when it was all captured and fits in one file; else its start.
  const whole = byteLength(output) >= outputBytes && outputBytes <= scope.limits.maxFileBytes
  // The note of where it ends fits in the file's limit with what was captured.
  const note = (kept: number) => `\n[the output was cut here: ${kept} of its ${outputBytes} bytes were captured]\n`
  const kept = whole ? output : cutBytes(output, Math.max(0, scope.limits.maxFileBytes - note(outputBytes).length))
  const captured = byteLength(kept)
  const spilled = scope.fs.writeFile(file, whole ? output : `${kept}${note(captured)}`)
  const where = Either.isRight(spilled)
    ? `${whole ? "all of it is" : `its first ${captured} bytes are`} in ${file} (grep it or read_file a range)`
    : `the rest was not kept (${spilled.left.message})`
  return `${cutBytes(output, scope.shown.bytes)}\n[output truncated at ${scope.shown.bytes} of ${outputBytes} bytes (${scope.shown.why}); ${where}]`
}

const seconds = (ms: number): string => `${ms / 1000} s`

/**
 * What a script stopped at its wall clock held, when that was much of its memory: near its limit a
 * script slows down (the garbage collector runs again and again), so a loop filling memory often
 * meets its wall clock first.
 */
const memoryNote = (memory: { readonly usedMb: number; readonly limitMb: number } | undefined): string =>
  memory === undefined || memory.usedMb < memory.limitMb / 2
    ? ""
    : ` By then it held ${memory.usedMb} of the ${memory.limitMb} MB one script may use (scripts.maxMemoryMb in foundry.config.ts): a script that keeps all it makes slows down as its memory fills, then runs out of it.`

/** The answer to a finished run, or why it failed. */
const answerOf = (scope: ScriptScope, path: string, result: ScriptResult): Either.Either<string, ScriptFailed> => {
  switch (result._tag) {
    case "Completed": {
      const value = (result.value === undefined ? undefined : JSON.stringify(result.value, null, 1)) ?? "nothing"
      const shownValue = cutBytes(value, scope.shown.bytes)
      const cut = shownValue.length < value.length ? `\n[the value is cut at ${scope.shown.bytes} bytes (${scope.shown.why}): write it to a file and read or grep that instead]` : ""
      const output = result.output === "" ? "" : `\noutput:\n${shownOutput(scope, result.output, result.outputBytes)}`
      return Either.right(`${path} returned ${shownValue}${cut}${output}`)
    }
    case "Tests": {
      const failed = result.results.filter((test) => !test.ok)
      const output = result.output === "" ? "" : `\noutput:\n${lastBytes(result.output, scope.shown.bytes)}`
      return Either.right(`${result.results.length - failed.length} passed, ${failed.length} failed\n${testLines(result.results, scope.shown)}${output}`)
    }
    case "Failed":
      return Either.left(new ScriptFailed({
        message: `${path} failed: ${errorShown(result.error, scope.shown.bytes)}${result.output === "" ? "" : `\noutput:\n${lastBytes(result.output, scope.shown.bytes)}`}\n(no changes were kept)`
      }))
    case "OutOfMemory":
      return Either.left(new ScriptFailed({
        message: `${path} ran out of memory (${result.limitMb} MB, the most one script may use, heap and buffers together) and was stopped; no changes were kept. ` +
          `Work on the data in smaller pieces (a slice of the rows, then the next), or raise scripts.maxMemoryMb in foundry.config.ts.` +
          (result.output === "" ? "" : `\noutput until then:\n${lastBytes(result.output, scope.shown.bytes)}`)
      }))
    case "TimedOut":
      return Either.left(new ScriptFailed({
        message: `${path} ran longer than ${seconds(scope.limits.scriptTimeoutMs)} (scriptTimeoutMs) and was stopped; no changes were kept. Process less per run (a slice of the rows, then the next), or look for a loop that never ends.` +
          memoryNote(result.memory) +
          (result.output === "" ? "" : `\noutput until then:\n${lastBytes(result.output, scope.shown.bytes)}`)
      }))
  }
}

/** Reads and checks a script against `modules`; a problem is refused with its line and the fix. */
const checked = (scope: ScriptScope, modules: ResolvedModules, path: string, test: boolean) =>
  Effect.flatMap(scope.fs.readText(path), (source) =>
    Effect.flatMap(validateScript(path, source, modules.exports, { test }), (check) =>
      check._tag === "Valid" ? Effect.succeed(check) : new VerbRefused({ message: check.message })))

/**
 * A script checked, with the modules it imports connected: one whose MCP server was not reached
 * is tried again, and the script fails alone while it stays unreached (its names are checked once
 * the server has listed them).
 */
const ready = Effect.fnUntraced(function*(scope: ScriptScope, path: string, test: boolean) {
  const first = yield* checked(scope, scope.modules, path, test)
  const modules = yield* scope.connect(first.imports).pipe(
    Effect.mapError((error) => new ScriptFailed({ message: `${path} was not run: ${error.message}\n(no changes were kept)` }))
  )
  const code = modules === scope.modules ? first.code : (yield* checked(scope, modules, path, test)).code
  return { code, scope: modules === scope.modules ? scope : { ...scope, modules } }
})

/** Runs one script (or one test file) on the scope's worker. */
const runOne = Effect.fnUntraced(function*(unconnected: ScriptScope, path: string, args: unknown, mode: "run" | "test") {
  const { code, scope } = yield* ready(unconnected, path, mode === "test")
  const runner = yield* ScriptRunner
  const runtime = yield* Effect.runtime<never>()
  // The tools a script calls run with the services the verb runs with (the app's, and the runtime's).
  const services = Context.unsafeMake<unknown>(new Map((yield* Effect.context<never>()).unsafeMap))
  return yield* runner.run({ scope: scope.pool, instance: `${scope.context.agent}/${scope.context.instanceId}` }, {
    code,
    path,
    args: args ?? null,
    mode,
    modules: scope.modules.forWorker,
    timeoutMs: scope.limits.scriptTimeoutMs,
    maxOutputBytes: scope.limits.maxOutputBytes,
    // Kept whole (up to the runner's ceiling) so that what is cut for the model can be read from /tmp.
    maxCapturedBytes: scope.limits.maxFileBytes
  }, hostFor(scope, runtime, services, yield* McpClients))
})

/** `run_script`: answers the script's return value and output. */
export const runScript = Effect.fn("environments.runScript")(function*(scope: ScriptScope, input: { readonly path: string; readonly args?: unknown }) {
  const path = yield* normalizePath(input.path)
  if (isTestFile(path)) return yield* new VerbRefused({ message: `${path} is a test file: run it with run_tests({ path: "${path}" })` })
  if (!isScript(path)) return yield* new VerbRefused({ message: `${path} is not a script: run_script runs .js and .ts files that export default async function (args)` })
  return yield* answerOf(scope, path, yield* runOne(scope, path, input.args, "run"))
})

/** `run_tests`: every test file under the path (default /scripts), each test's result. */
export const runTests = Effect.fn("environments.runTests")(function*(scope: ScriptScope, input: { readonly path?: string | undefined }) {
  const root = yield* normalizePath(input.path ?? "/scripts")
  const files = isTestFile(root)
    ? [root]
    : scope.fs.vfs.list(root, { recursive: true }).filter((entry) => entry.kind === "file" && isTestFile(entry.path)).map((entry) => entry.path)
  if (files.length === 0) return yield* new VerbRefused({ message: `no test files under ${root}: write one as ${root === "/" ? "/scripts" : root}/<name>.test.js (import { test, assert } from "env:test")` })
  const reports: Array<string> = []
  for (const file of files) {
    const result = yield* runOne(scope, file, null, "test").pipe(Effect.either)
    const report = Either.isLeft(result)
      ? result.left.message
      : Either.match(answerOf(scope, file, result.right), { onLeft: (failure) => failure.message, onRight: (text) => text })
    reports.push(`${file}: ${report}`)
  }
  return reports.join("\n")
})
