/**
 * One sandbox worker thread seen from the host: starts `sandboxWorker.mjs` with its own heap limit,
 * no environment and no inherited stdio, runs one script at a time on it, answers the script's
 * env: module calls through the run's `ScriptHost`, and reads the console output it captured into
 * shared memory (there even when the thread had to be terminated).
 */
import { Worker } from "node:worker_threads"
import { Duration, Effect, Either, Option, Schema } from "effect"
import type { ScriptHost, ScriptResult, ScriptRun } from "./ScriptRunner.js"

/** A worker thread running scripts, one at a time. */
export interface ScriptWorker {
  /** False once the thread has exited (terminated, crashed, out of memory). */
  readonly alive: () => boolean
  /** Runs a script to its end, its wall-clock limit (then the thread is terminated) or the thread's death. */
  readonly run: (run: ScriptRun, host: ScriptHost) => Effect.Effect<ScriptResult>
  readonly terminate: Effect.Effect<void>
}

const DoneResult = Schema.Union(
  Schema.Struct({ _tag: Schema.Literal("Completed"), value: Schema.optional(Schema.String) }),
  Schema.Struct({ _tag: Schema.Literal("Failed"), error: Schema.String }),
  Schema.Struct({
    _tag: Schema.Literal("Tests"),
    results: Schema.Array(Schema.Struct({ name: Schema.String, ok: Schema.Boolean, error: Schema.optional(Schema.String) }))
  })
)

const WorkerMessage = Schema.Union(
  Schema.Struct({
    type: Schema.Literal("call"),
    run: Schema.Number,
    call: Schema.Number,
    module: Schema.String,
    fn: Schema.String,
    args: Schema.Array(Schema.Unknown)
  }),
  Schema.Struct({ type: Schema.Literal("done"), run: Schema.Number, result: DoneResult })
)
const decodeMessage = Schema.decodeUnknownEither(WorkerMessage)

type Outcome =
  | { readonly _tag: "Done"; readonly result: typeof DoneResult.Type }
  | { readonly _tag: "Crashed"; readonly error: string }

interface ActiveRun {
  readonly id: number
  readonly host: ScriptHost
  readonly settle: (outcome: Outcome) => void
}

const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

const isFailure = (value: unknown): value is { readonly error: string } =>
  typeof value === "object" && value !== null && !(value instanceof Uint8Array) && Object.keys(value).length === 1 &&
  "error" in value && typeof value.error === "string"

const isDoneOf = (raw: unknown, run: number): boolean =>
  typeof raw === "object" && raw !== null && "type" in raw && raw.type === "done" && "run" in raw && raw.run === run

/** Console output captured in shared memory: [total bytes, captured bytes] as two BigInt64, then UTF-8 text. */
const outputCapture = (maxOutputBytes: number) => {
  const capacity = Math.min(Math.max(1024, maxOutputBytes * 4), 64 * 1024 * 1024)
  const buffer = new SharedArrayBuffer(16 + capacity)
  const read = () => {
    const header = new BigInt64Array(buffer, 0, 2)
    const written = Number(Atomics.load(header, 1))
    return {
      output: Buffer.from(new Uint8Array(buffer, 16, written)).toString("utf8"),
      outputBytes: Number(Atomics.load(header, 0))
    }
  }
  return { buffer, read }
}

const jsonOf = (value: unknown): Either.Either<string, string> => {
  try {
    return Either.right(JSON.stringify(value ?? null))
  } catch (error) {
    return Either.left(messageOf(error))
  }
}

const parseValue = (json: string | undefined): Either.Either<unknown, string> => {
  if (json === undefined) return Either.right(undefined)
  try {
    return Either.right(JSON.parse(json))
  } catch (error) {
    return Either.left(messageOf(error))
  }
}

/** Starts a worker thread; `onExit` is told once when it has exited, whatever the reason. */
export const spawnScriptWorker = (options: { readonly file: string; readonly maxMemoryMb: number; readonly onExit: () => void }): ScriptWorker => {
  const worker = new Worker(options.file, {
    // Heap limits apply to the thread; a script past them ends it (ERR_WORKER_OUT_OF_MEMORY), not the server.
    resourceLimits: { maxOldGenerationSizeMb: options.maxMemoryMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
    env: {},
    stdout: true,
    stderr: true,
    // Lets the worker answer `import()` with an error of the sandbox's realm (Node 20 asks for the flag).
    execArgv: ["--experimental-vm-modules"]
  })
  let alive = true
  let active: ActiveRun | undefined
  let runs = 0
  let stderr = ""
  worker.stdout.resume()
  worker.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-2000)
  })

  const crash = (error: string) => active?.settle({ _tag: "Crashed", error })
  worker.on("error", (error: Error & { readonly code?: string }) => {
    // The thread is on its way out ('exit' follows): no run may start on it.
    alive = false
    crash(error.code === "ERR_WORKER_OUT_OF_MEMORY"
      ? `the script ran out of memory (the limit is ${options.maxMemoryMb} MB)`
      : `the script's worker failed: ${error.message}${stderr === "" ? "" : `\n${stderr}`}`)
  })
  worker.on("exit", () => {
    alive = false
    options.onExit()
    crash(`the script's worker stopped${stderr === "" ? "" : `:\n${stderr}`}`)
  })

  const answer = (run: ActiveRun, call: number, module: string, fn: string, args: ReadonlyArray<unknown>) => {
    const reply = (ok: boolean, value: unknown) => {
      // The answer to a run that is over (timed out, finished) has nobody to go to.
      if (!alive || active?.id !== run.id) return
      try {
        worker.postMessage(ok ? { type: "result", run: run.id, call, ok, value } : { type: "result", run: run.id, call, ok, error: value })
      } catch (error) {
        worker.postMessage({ type: "result", run: run.id, call, ok: false, error: `the answer of ${module}.${fn} cannot reach the script: ${messageOf(error)}` })
      }
    }
    Promise.resolve()
      .then(() => run.host.call(module, fn, args))
      .then(
        (value) => isFailure(value) ? reply(false, value.error) : reply(true, value),
        (error: unknown) => reply(false, messageOf(error))
      )
  }

  worker.on("message", (raw: unknown) => {
    const message = decodeMessage(raw)
    const run = active
    if (run === undefined) return
    if (Either.isLeft(message)) {
      // A result the sandbox mangled (its own intrinsics replaced by the script) ends the run rather than leaving it waiting.
      if (isDoneOf(raw, run.id)) run.settle({ _tag: "Crashed", error: "the script's result is not readable (did it replace built-ins such as Array.prototype.push?)" })
      return
    }
    if (message.right.run !== run.id) return
    if (message.right.type === "call") answer(run, message.right.call, message.right.module, message.right.fn, message.right.args)
    else run.settle({ _tag: "Done", result: message.right.result })
  })

  const terminate = Effect.promise(() => worker.terminate()).pipe(Effect.asVoid)

  const run = (script: ScriptRun, host: ScriptHost) =>
    Effect.gen(function*() {
      const capture = outputCapture(script.maxOutputBytes)
      const args = jsonOf(script.args)
      if (Either.isLeft(args)) return { _tag: "Failed", error: `the script's args are not JSON: ${args.left}`, output: "", outputBytes: 0 } satisfies ScriptResult
      const id = ++runs
      const outcome = yield* Effect.async<Outcome>((resume) => {
        if (!alive) {
          resume(Effect.succeed({ _tag: "Crashed", error: "the script's worker is not running" }))
          return
        }
        active = {
          id,
          host,
          settle: (outcome) => {
            if (active?.id !== id) return
            active = undefined
            resume(Effect.succeed(outcome))
          }
        }
        const modules = script.modules.map(({ name, exports, kind, source }) => ({ name, exports: [...exports], kind, source }))
        try {
          worker.postMessage({ type: "run", run: id, code: script.code, path: script.path, args: args.right, mode: script.mode, modules, output: capture.buffer })
        } catch (error) {
          active.settle({ _tag: "Crashed", error: `the script could not start: ${messageOf(error)}` })
        }
        return Effect.sync(() => {
          if (active?.id === id) active = undefined
        })
      }).pipe(
        Effect.timeoutOption(Duration.millis(script.timeoutMs)),
        // A caller that stops waiting leaves the script running: the thread goes with it.
        Effect.onInterrupt(() => terminate)
      )
      if (Option.isNone(outcome)) {
        yield* terminate
        return { _tag: "TimedOut", ...capture.read() } satisfies ScriptResult
      }
      // A dead thread is gone before the run answers, so the count of workers is exact.
      if (outcome.value._tag === "Crashed") yield* terminate
      const output = capture.read()
      const result: ScriptResult = outcome.value._tag === "Crashed"
        ? { _tag: "Failed", error: outcome.value.error, ...output }
        : outcome.value.result._tag === "Completed"
        ? Either.match(parseValue(outcome.value.result.value), {
          onLeft: (error): ScriptResult => ({ _tag: "Failed", error: `the script's value is not JSON: ${error}`, ...output }),
          onRight: (value): ScriptResult => ({ _tag: "Completed", value, ...output })
        })
        : outcome.value.result._tag === "Failed"
        ? { _tag: "Failed", error: outcome.value.result.error, ...output }
        : { _tag: "Tests", results: outcome.value.result.results, ...output }
      return result
    })

  return { alive: () => alive, run, terminate }
}
