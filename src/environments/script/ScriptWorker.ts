/**
 * One sandbox worker thread seen from the host: starts `sandboxWorker.mjs` with its own heap limit,
 * no environment and no inherited stdio, runs one script at a time on it, answers the script's
 * env: module calls through the run's `ScriptHost`, watches the thread's own memory while the
 * script runs, and reads the console output it captured into shared memory (there even when the
 * thread had to be terminated). After a run it says when the thread is free again: once the code
 * the run left behind has ended.
 */
import { Worker } from "node:worker_threads"
import { Duration, Effect, Either, Option, Schedule, Schema } from "effect"
import type { ScriptHost, ScriptResult, ScriptRun } from "./scriptRun.js"
import type { WorkerMemory } from "./WorkerMemory.js"

/** A worker thread running scripts, one at a time. */
export interface ScriptWorker {
  /** False once the thread has exited (terminated, crashed, out of memory). */
  readonly alive: () => boolean
  /**
   * Runs a script to its end, its wall-clock limit or its memory limit (then the thread is
   * terminated), or the thread's death. The thread takes no other run before `settle`.
   */
  readonly run: (run: ScriptRun, host: ScriptHost) => Effect.Effect<ScriptResult>
  /**
   * Waits until the code the last run left behind (promise callbacks still running after it
   * answered) has ended, at most `grace`; past it the thread is terminated. True when the thread
   * can take another run.
   */
  readonly settle: (grace: Duration.DurationInput) => Effect.Effect<boolean>
  /**
   * Stops the thread, waiting at most `stopWithin`: a thread held in a blocking call cannot be
   * stopped until it returns, and the pool must not wait on it (it is no longer used, and counted
   * among the live threads until it exits).
   */
  readonly terminate: Effect.Effect<void>
}

/** The most console output kept of a run (all of it is counted): it is held in the server's memory. */
export const captureCeilingBytes = 2 * 1024 * 1024

const DoneResult = Schema.Union(
  Schema.Struct({ _tag: Schema.Literal("Completed"), value: Schema.optional(Schema.String) }),
  Schema.Struct({ _tag: Schema.Literal("Failed"), error: Schema.String }),
  Schema.Struct({
    _tag: Schema.Literal("Tests"),
    results: Schema.Array(Schema.Struct({ name: Schema.String, ok: Schema.Boolean, error: Schema.optional(Schema.String) }))
  })
)

const WorkerMessage = Schema.Union(
  Schema.Struct({ type: Schema.Literal("ready") }),
  Schema.Struct({
    type: Schema.Literal("call"),
    run: Schema.Number,
    call: Schema.Number,
    module: Schema.String,
    fn: Schema.String,
    args: Schema.Array(Schema.Unknown)
  }),
  Schema.Struct({ type: Schema.Literal("done"), run: Schema.Number, result: DoneResult }),
  Schema.Struct({ type: Schema.Literal("settled"), run: Schema.Number })
)
const decodeMessage = Schema.decodeUnknownEither(WorkerMessage)

type Outcome =
  | { readonly _tag: "Done"; readonly result: typeof DoneResult.Type }
  | { readonly _tag: "Crashed"; readonly error: string }
  | { readonly _tag: "OutOfMemory" }

const outOfMemory: Outcome = { _tag: "OutOfMemory" }

/** How a run ended, its wall clock included (with what it had added to its thread's memory by then). */
type Stopped = Outcome | { readonly _tag: "TimedOut"; readonly usedBytes: Option.Option<number> }

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

const megabytes = (mb: number): number => mb * 1024 * 1024

/**
 * Ends once the run has added more than `maxMemoryMb` to its thread's memory, heap and buffers
 * (`WorkerMemory`). Heap limits do not cover array buffers, so this is how a script filling
 * buffers is stopped before it takes the server's memory; it counts this thread only, so a
 * script's neighbours on other threads never count against it.
 */
const memoryGuard = (read: Effect.Effect<Option.Option<number>>, maxMemoryMb: number): Effect.Effect<Outcome> =>
  read.pipe(
    Effect.repeat({
      schedule: Schedule.spaced(Duration.millis(50)),
      until: (bytes) => Option.exists(bytes, (used) => used > megabytes(maxMemoryMb))
    }),
    Effect.as(outOfMemory)
  )

/**
 * Console output captured in shared memory: [total bytes, captured bytes] as two BigInt64, then
 * UTF-8 text. A worker keeps its buffer from run to run (reset, grown when a run asks for more):
 * a buffer per run was megabytes of shared memory per script, which the process did not give back.
 */
const outputCapture = (run: ScriptRun, previous: SharedArrayBuffer | undefined) => {
  const capacity = Math.min(captureCeilingBytes, Math.max(1024, run.maxOutputBytes, run.maxCapturedBytes ?? run.maxOutputBytes * 4))
  const buffer = previous !== undefined && previous.byteLength >= 16 + capacity ? previous : new SharedArrayBuffer(16 + capacity)
  const reset = new BigInt64Array(buffer, 0, 2)
  Atomics.store(reset, 0, 0n)
  Atomics.store(reset, 1, 0n)
  const read = () => {
    const header = new BigInt64Array(buffer, 0, 2)
    const written = Number(Atomics.load(header, 1))
    return {
      output: Buffer.from(new Uint8Array(buffer, 16, written)).toString("utf8"),
      outputBytes: Number(Atomics.load(header, 0))
    }
  }
  return { buffer, capacity, read }
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

const resultOf = (outcome: Outcome, maxMemoryMb: number, output: { readonly output: string; readonly outputBytes: number }): ScriptResult => {
  if (outcome._tag === "Crashed") return { _tag: "Failed", error: outcome.error, ...output }
  if (outcome._tag === "OutOfMemory") return { _tag: "OutOfMemory", limitMb: maxMemoryMb, ...output }
  const result = outcome.result
  switch (result._tag) {
    case "Completed":
      return Either.match(parseValue(result.value), {
        onLeft: (error): ScriptResult => ({ _tag: "Failed", error: `the script's value is not JSON: ${error}`, ...output }),
        onRight: (value): ScriptResult => ({ _tag: "Completed", value, ...output })
      })
    case "Failed":
      return { _tag: "Failed", error: result.error, ...output }
    case "Tests":
      return { _tag: "Tests", results: result.results, ...output }
  }
}

/** How long a thread may take to come up before the run it was started for fails. */
const threadStartLimit = Duration.seconds(30)

const notStarted: Outcome = { _tag: "Crashed", error: `the script's worker did not start within ${Duration.format(threadStartLimit)}` }

/** Starts a worker thread; `onExit` is told once when it has exited, whatever the reason. */
export const spawnScriptWorker = (options: {
  readonly file: string
  readonly maxMemoryMb: number
  readonly memory: WorkerMemory
  readonly stopWithin: Duration.DurationInput
  readonly onExit: () => void
}): ScriptWorker => {
  const worker = new Worker(options.file, {
    // Heap limits apply to the thread; a script past them ends it (ERR_WORKER_OUT_OF_MEMORY), not the server.
    resourceLimits: { maxOldGenerationSizeMb: options.maxMemoryMb, maxYoungGenerationSizeMb: 32, stackSizeMb: 4 },
    env: {},
    stdout: true,
    stderr: true,
    // Lets the worker answer `import()` itself (Node 20 asks for the flag); without it Node would, with an error of the worker's realm.
    execArgv: ["--experimental-vm-modules"]
  })
  let alive = true
  let ready = false
  let active: ActiveRun | undefined
  let runs = 0
  let settledRun = 0
  // What the last run has added to the thread's memory: what it left behind is held to the same limit.
  const runMemory = Effect.suspend(() => options.memory.ofRun(worker.threadId))
  let stderr = ""
  // Waiters for a change of state (ready, settled, exited), each checking what it waits for.
  const changes = new Set<() => void>()
  const changed = () => {
    for (const check of [...changes]) check()
  }
  const until = (condition: () => boolean): Effect.Effect<void> =>
    Effect.async<void>((resume) => {
      const check = () => {
        if (!condition()) return
        changes.delete(check)
        resume(Effect.void)
      }
      changes.add(check)
      check()
      return Effect.sync(() => changes.delete(check))
    })

  worker.stdout.resume()
  worker.stderr.on("data", (chunk: Buffer) => {
    stderr = (stderr + chunk.toString("utf8")).slice(-2000)
  })

  const crash = (error: string) => active?.settle({ _tag: "Crashed", error })
  worker.on("error", (error: Error & { readonly code?: string }) => {
    // The thread is on its way out ('exit' follows): no run may start on it.
    alive = false
    if (error.code === "ERR_WORKER_OUT_OF_MEMORY") active?.settle(outOfMemory)
    else crash(`the script's worker failed: ${error.message}${stderr === "" ? "" : `\n${stderr}`}`)
    changed()
  })
  const stopped = () => `the script's worker stopped${stderr === "" ? "" : `:\n${stderr}`}`
  worker.on("exit", () => {
    alive = false
    options.onExit()
    crash(stopped())
    changed()
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
    if (Either.isLeft(message)) {
      // A result the sandbox mangled (its own intrinsics replaced by the script) ends the run rather than leaving it waiting.
      if (run !== undefined && isDoneOf(raw, run.id)) run.settle({ _tag: "Crashed", error: "the script's result is not readable (did it replace built-ins such as Array.prototype.push?)" })
      return
    }
    const received = message.right
    switch (received.type) {
      case "ready":
        ready = true
        changed()
        return
      case "settled":
        settledRun = Math.max(settledRun, received.run)
        changed()
        return
      case "call":
        if (run?.id === received.run) answer(run, received.call, received.module, received.fn, received.args)
        return
      case "done":
        if (run?.id === received.run) run.settle({ _tag: "Done", result: received.result })
        return
    }
  })

  const terminate = Effect.suspend(() => {
    alive = false
    changed()
    return options.memory.quiet(worker.threadId)
  }).pipe(
    Effect.zipRight(Effect.promise(() => worker.terminate())),
    Effect.timeoutOption(options.stopWithin),
    Effect.flatMap(Option.match({
      onSome: () => Effect.void,
      onNone: () =>
        Effect.logWarning(
          `a script's worker thread did not stop within ${Duration.format(options.stopWithin)} (held in a blocking call); ` +
            "it takes no more runs and ends when the call returns"
        )
    }))
  )

  const execute = (id: number, script: ScriptRun, host: ScriptHost, args: string, output: SharedArrayBuffer, capacity: number) =>
    Effect.async<Outcome>((resume) => {
      if (!alive) {
        resume(Effect.succeed({ _tag: "Crashed", error: stopped() }))
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
      const modules = script.modules.map(({ name, exports, kind, source, unavailable }) => ({ name, exports: [...exports], kind, source, unavailable }))
      try {
        worker.postMessage({ type: "run", run: id, code: script.code, path: script.path, args, mode: script.mode, modules, output, capacity })
      } catch (error) {
        active.settle({ _tag: "Crashed", error: `the script could not start: ${messageOf(error)}` })
      }
      return Effect.sync(() => {
        if (active?.id === id) active = undefined
      })
    })

  let outputBuffer: SharedArrayBuffer | undefined
  const run = (script: ScriptRun, host: ScriptHost) =>
    Effect.gen(function*() {
      const capture = outputCapture(script, outputBuffer)
      outputBuffer = capture.buffer
      const args = jsonOf(script.args)
      if (Either.isLeft(args)) return { _tag: "Failed", error: `the script's args are not JSON: ${args.left}`, output: "", outputBytes: 0 } satisfies ScriptResult
      const id = ++runs
      // The script's wall clock and its memory are measured once the thread is up: the thread's own
      // start (slow on a busy machine) is not the script's time. A thread that never comes up is
      // bounded on its own.
      const executed = Effect.race(execute(id, script, host, args.right, capture.buffer, capture.capacity), memoryGuard(runMemory, options.maxMemoryMb)).pipe(
        Effect.timeoutOption(Duration.millis(script.timeoutMs)),
        Effect.flatMap(Option.match({
          onSome: (outcome) => Effect.succeed<Stopped>(outcome),
          // What it held then tells a script that fills memory (slowed down by the garbage collector) from one that loops.
          onNone: () => Effect.map(runMemory, (usedBytes): Stopped => ({ _tag: "TimedOut", usedBytes }))
        }))
      )
      const outcome = yield* until(() => ready || !alive).pipe(
        Effect.timeoutOption(threadStartLimit),
        Effect.flatMap(Option.match({
          onNone: () => Effect.succeed<Stopped>(notStarted),
          onSome: () => executed
        })),
        // A caller that stops waiting leaves the script running: the thread goes with it.
        Effect.onInterrupt(() => terminate)
      )
      // A thread that ran over a limit or died is gone before the run answers, so the count of workers is exact.
      if (outcome._tag !== "Done") yield* terminate
      if (outcome._tag !== "TimedOut") return resultOf(outcome, options.maxMemoryMb, capture.read())
      return {
        _tag: "TimedOut",
        ...Option.match(outcome.usedBytes, {
          onNone: () => ({}),
          onSome: (used) => ({ memory: { usedMb: Math.max(0, Math.round(used / megabytes(1))), limitMb: options.maxMemoryMb } })
        }),
        ...capture.read()
      } satisfies ScriptResult
    })

  const settle = (grace: Duration.DurationInput) =>
    until(() => !alive || settledRun >= runs).pipe(
      Effect.as(true),
      Effect.race(Effect.as(memoryGuard(runMemory, options.maxMemoryMb), false)),
      Effect.timeoutOption(grace),
      Effect.flatMap((settled) => Option.getOrElse(settled, () => false) ? Effect.sync(() => alive) : Effect.as(terminate, false))
    )

  return { alive: () => alive, run, settle, terminate }
}
