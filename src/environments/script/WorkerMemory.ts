/**
 * How much memory a script's run has added to its own worker thread: the V8 heap it uses plus
 * what it holds outside the heap (ArrayBuffers among it), as `sandboxWorker.mjs` measures it in
 * its own isolate. Other threads' scripts are not in it, as they are in the process's RSS.
 *
 * It is read from the main thread while the script runs. A thread busy in a script answers no
 * message, and Node 20 has no figure of another thread (`worker.getHeapStatistics` came with
 * 22.16, and counts the heap only); the inspector protocol does answer, since V8 runs its requests
 * between the script's own steps. So the pool holds one in-process inspector session (no port is
 * opened), attached to the process's worker threads (`NodeWorker.enable`), and asks a thread of
 * its own to evaluate the figure. A Node built without the inspector reads nothing: only the heap
 * limit (`resourceLimits`) then bounds a script.
 *
 * A thread must not be terminated while a read of it is in flight: on Node 20, `worker.terminate()`
 * of a thread that is answering the inspector can wait forever (three processes each terminating
 * 300 spinning threads read every 5 ms: one in three hung; none once the reads were drained first).
 * `quiet` stops reading a thread and waits for its reads to be answered.
 */
import { Duration, Effect, Option, Schema, type Scope } from "effect"

/** Reads the memory of the pool's threads. */
export interface WorkerMemory {
  /** Bytes the thread's current (or last) run has added; none when the thread does not answer in time. */
  readonly ofRun: (threadId: number) => Effect.Effect<Option.Option<number>>
  /** Reads the thread no more, and waits (at most `quietLimit`) until none of its reads is unanswered. */
  readonly quiet: (threadId: number) => Effect.Effect<void>
}

/** What `sandboxWorker.mjs` puts on its realm's global for this reader. */
const expression = "foundryRunMemory()"

/** How long a read waits: a thread in a long garbage collection answers after it. */
const readLimit = Duration.seconds(1)

/** How long `quiet` waits for a thread's reads: one that never answers is terminated all the same. */
const quietLimit = Duration.seconds(2)

const Answer = Schema.parseJson(Schema.Struct({
  id: Schema.Number,
  result: Schema.optional(Schema.Struct({ result: Schema.Struct({ value: Schema.optional(Schema.Unknown) }) }))
}))
const decodeAnswer = Schema.decodeUnknownOption(Answer)

const nothing: WorkerMemory = { ofRun: () => Effect.succeedNone, quiet: () => Effect.void }

/** The reader, its inspector session closed with the scope. */
export const makeWorkerMemory: Effect.Effect<WorkerMemory, never, Scope.Scope> = Effect.gen(function*() {
  const inspector = yield* Effect.option(Effect.tryPromise(() => import("node:inspector")))
  if (Option.isNone(inspector)) return nothing
  const connected = yield* Effect.option(Effect.acquireRelease(
    Effect.try(() => {
      const session = new inspector.value.Session()
      session.connect()
      return session
    }),
    (session) => Effect.sync(() => session.disconnect())
  ))
  if (Option.isNone(connected)) return nothing
  const session = connected.value

  // The inspector's session id of each thread, by thread id. The protocol's `workerId` is a number
  // of the session's own; Node titles a thread's target "[worker <threadId>]".
  const threads = new Map<number, string>()
  const waiting = new Map<number, (bytes: Option.Option<number>) => void>()
  // Requests sent and not yet answered, by request id: the thread each went to, kept past the
  // reader's own timeout, since that is what `quiet` waits out.
  const inFlight = new Map<number, number>()
  const quieted = new Set<number>()
  const drained = new Set<() => void>()
  let requests = 0
  const settled = (id: number) => {
    if (!inFlight.delete(id)) return
    for (const check of [...drained]) check()
  }
  const answer = (id: number, bytes: Option.Option<number>) => {
    settled(id)
    const resume = waiting.get(id)
    waiting.delete(id)
    resume?.(bytes)
  }

  session.on("NodeWorker.attachedToWorker", ({ params }) => {
    const thread = /^\[worker (\d+)\]/.exec(params.workerInfo.title)
    if (thread !== null) threads.set(Number(thread[1]), params.sessionId)
  })
  session.on("NodeWorker.detachedFromWorker", ({ params }) => {
    for (const [thread, sessionId] of threads) {
      if (sessionId !== params.sessionId) continue
      threads.delete(thread)
      quieted.delete(thread)
      for (const [id, to] of inFlight) if (to === thread) answer(id, Option.none())
    }
  })
  session.on("NodeWorker.receivedMessageFromWorker", ({ params }) => {
    Option.map(decodeAnswer(params.message), (message) => {
      const value = message.result?.result.value
      answer(message.id, typeof value === "number" ? Option.some(value) : Option.none())
    })
  })
  session.post("NodeWorker.enable", { waitForDebuggerOnStart: false })

  const ofRun = (threadId: number): Effect.Effect<Option.Option<number>> =>
    Effect.async<Option.Option<number>>((resume) => {
      const sessionId = threads.get(threadId)
      if (sessionId === undefined || quieted.has(threadId)) return resume(Effect.succeedNone)
      const id = ++requests
      inFlight.set(id, threadId)
      waiting.set(id, (bytes) => resume(Effect.succeed(bytes)))
      const message = JSON.stringify({ id, method: "Runtime.evaluate", params: { expression, returnByValue: true, silent: true } })
      session.post("NodeWorker.sendMessageToWorker", { sessionId, message }, (error) => {
        if (error !== null) answer(id, Option.none())
      })
      return Effect.sync(() => waiting.delete(id))
    }).pipe(Effect.timeoutTo({ duration: readLimit, onTimeout: Option.none, onSuccess: (bytes) => bytes }))

  const unanswered = (threadId: number) => {
    for (const to of inFlight.values()) if (to === threadId) return true
    return false
  }
  const quiet = (threadId: number): Effect.Effect<void> =>
    Effect.async<void>((resume) => {
      quieted.add(threadId)
      const check = () => {
        if (unanswered(threadId)) return
        drained.delete(check)
        resume(Effect.void)
      }
      drained.add(check)
      check()
      return Effect.sync(() => drained.delete(check))
    }).pipe(Effect.timeoutOption(quietLimit), Effect.asVoid)

  return { ofRun, quiet }
})
