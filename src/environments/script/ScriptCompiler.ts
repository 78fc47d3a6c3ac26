/**
 * Compiles scripts with esbuild on threads of their own (`compileWorker.mjs`), each with its own
 * esbuild service, within a time and a heap limit. esbuild sends every problem it finds with its
 * whole line: a script with a problem in each of hundreds of thousands of statements took it and
 * the thread decoding its answer tens of seconds and gigabytes. On the main thread (and on the
 * esbuild service the process shares) that held the whole server; here a compile past its time
 * or heap costs its thread, and its service ends with it. A thread compiles one script at a time;
 * a compile that finds every thread busy starts another, up to `maxThreads`. One idle thread is kept for the next
 * compile (starting one and its service takes a few hundred milliseconds) and ends after `idleMs`.
 */
import { Worker } from "node:worker_threads"
import type { TransformOptions } from "esbuild"
import { Duration, Effect, Either, Fiber, Schema, type Scope } from "effect"

/** A problem esbuild found, where it is, quoted around its column. */
export interface CompileProblem {
  readonly line: number
  readonly column: number
  readonly text: string
}

/** How a script is compiled: CommonJS, with an inline source map the worker maps stack lines back with. */
export const transformOptions = (path: string): TransformOptions => ({
  loader: /\.[mc]?ts$/.test(path) ? "ts" : "js",
  format: "cjs",
  target: "es2022",
  sourcefile: path,
  sourcemap: "inline",
  logLevel: "silent"
})

const Answer = Schema.Union(
  Schema.Struct({ _tag: Schema.Literal("Compiled"), code: Schema.String }),
  Schema.Struct({
    _tag: Schema.Literal("Problems"),
    problems: Schema.Array(Schema.Struct({ line: Schema.Number, column: Schema.Number, text: Schema.String })),
    count: Schema.Number
  }),
  Schema.Struct({ _tag: Schema.Literal("Crashed"), error: Schema.String })
)
const decodeAnswer = Schema.decodeUnknownEither(Answer)

/**
 * How a compile ended: the code; the first problems (in the script's order) and how many in all;
 * past the time limit; or its thread died (out of heap, esbuild's service ended).
 */
export type Compiled =
  | typeof Answer.Type
  | { readonly _tag: "TimedOut"; readonly after: Duration.Duration }

/** Compiles scripts off the main thread. */
export interface ScriptCompiler {
  readonly compile: (path: string, source: string) => Effect.Effect<Compiled>
}

/** How the compiler uses threads. */
export interface ScriptCompilerOptions {
  /** The worker's module (`packageLayout.compileWorkerFile`). */
  readonly file: string
  /** How long one compile may take before its thread is ended. */
  readonly within: Duration.DurationInput
  /** The heap of a thread: decoding esbuild's answer for a script with very many problems fills it. */
  readonly maxMemoryMb: number
  /** How long the idle thread is kept. */
  readonly idleMs: number
  /**
   * The most threads at once (each with an esbuild service of its own): compiles beyond it wait
   * for one, so a burst of scripts checked together cannot start a thread and a service for each.
   */
  readonly maxThreads: number
  /** The most problems a compile sends back (the answer lists only a few). */
  readonly maxProblems: number
}

const messageOf = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** The compiler; its threads end with the scope. */
export const makeScriptCompiler = (options: ScriptCompilerOptions): Effect.Effect<ScriptCompiler, never, Scope.Scope> =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const within = Duration.decode(options.within)
    const threads = yield* Effect.makeSemaphore(options.maxThreads)
    const live = new Set<Worker>()
    let idle: { readonly worker: Worker; readonly reaper: Fiber.RuntimeFiber<void> } | undefined

    const end = (worker: Worker) =>
      Effect.suspend(() => {
        live.delete(worker)
        return Effect.promise(() => worker.terminate())
      }).pipe(Effect.asVoid)

    yield* Effect.addFinalizer(() => Effect.forEach([...live], end, { discard: true }))

    // A compile does not wait for its thread to end: one deep in esbuild's answer may take a while.
    const discard = (worker: Worker) => Effect.asVoid(Effect.forkIn(end(worker), scope))

    const spawn = () => {
      const worker = new Worker(options.file, {
        workerData: { maxProblems: options.maxProblems },
        resourceLimits: { maxOldGenerationSizeMb: options.maxMemoryMb }
      })
      live.add(worker)
      // A thread that dies idle is forgotten; its error (an 'exit' follows) must not go unheard, or it ends the process.
      worker.on("error", () => {})
      worker.on("exit", () => {
        live.delete(worker)
        if (idle?.worker === worker) idle = undefined
      })
      return worker
    }

    const take = Effect.gen(function*() {
      const kept = idle
      if (kept === undefined) return spawn()
      idle = undefined
      yield* Fiber.interrupt(kept.reaper)
      // Busy, the thread keeps the process alive until it answers.
      kept.worker.ref()
      return kept.worker
    })

    // A thread that answered goes back as the idle one (or ends, when one is kept already).
    const giveBack = (worker: Worker) =>
      Effect.gen(function*() {
        if (idle !== undefined) return yield* end(worker)
        worker.unref()
        const reaper = yield* Effect.sleep(Duration.millis(options.idleMs)).pipe(
          Effect.zipRight(Effect.suspend(() => {
            if (idle?.worker !== worker) return Effect.void
            idle = undefined
            return end(worker)
          })),
          // Forked from a compile's uninterruptible part: the wait must stay interruptible, or closing the scope waits it out.
          Effect.interruptible,
          Effect.forkIn(scope)
        )
        idle = { worker, reaper }
      })

    const ask = (worker: Worker, path: string, source: string) =>
      Effect.async<Compiled>((resume) => {
        // Whichever comes first answers, and takes all three off: the thread is asked again and
        // again while it is kept, and listeners left from earlier compiles would pile up on it.
        const stopListening = () => {
          worker.off("message", onMessage)
          worker.off("error", onError)
          worker.off("exit", onExit)
        }
        const answer = (compiled: Compiled) => {
          stopListening()
          resume(Effect.succeed(compiled))
        }
        const onMessage = (message: unknown) =>
          answer(Either.getOrElse(decodeAnswer(message), (error) => ({ _tag: "Crashed" as const, error: `an answer the compiler cannot read: ${error.message}` })))
        const onError = (error: unknown) => answer({ _tag: "Crashed", error: messageOf(error) })
        const onExit = (code: number) => answer({ _tag: "Crashed", error: `the compiler thread exited (${code})` })
        worker.on("message", onMessage)
        worker.on("error", onError)
        worker.on("exit", onExit)
        worker.postMessage({ source, options: transformOptions(path) })
        return Effect.sync(stopListening)
      })

    const compile = Effect.fn("ScriptCompiler.compile")(function*(path: string, source: string) {
      // The time limit starts once a thread is had: waiting for one is not the script's fault.
      return yield* threads.withPermits(1)(Effect.uninterruptibleMask((restore) =>
        Effect.gen(function*() {
          const worker = yield* take
          const compiled = yield* restore(ask(worker, path, source).pipe(
            Effect.timeoutTo({ duration: within, onSuccess: (answer): Compiled => answer, onTimeout: (): Compiled => ({ _tag: "TimedOut", after: within }) })
          )).pipe(Effect.onInterrupt(() => discard(worker)))
          // A thread that timed out is still at work (its service too), and one that crashed is of no more use.
          yield* compiled._tag === "Compiled" || compiled._tag === "Problems" ? giveBack(worker) : discard(worker)
          return compiled
        })
      ))
    })

    return { compile }
  })
