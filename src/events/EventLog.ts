/**
 * The event log: every step is an event, stored durably (text deltas excepted) and fanned out
 * live, so an SSE client can replay a run's history and then follow it as it happens.
 */
import { Chunk, Clock, Context, Deferred, Effect, Layer, PubSub, Queue, Stream } from "effect"
import { newId } from "../durable/ids.js"
import { finalStatuses } from "../durable/records.js"
import { Store, type StoreError } from "../durable/Store.js"
import { ephemeralTypes, type FoundryEvent, runEndTypes } from "./FoundryEvent.js"

/** An event before the log gives it an id, a time and a sequence number. */
export type EventDraft = Omit<FoundryEvent, "id" | "seq" | "time" | "release">

/** The event log. */
export class EventLog extends Context.Tag("foundry/EventLog")<EventLog, {
  /** Records an event (unless it is ephemeral) and publishes it to live subscribers. */
  readonly emit: (draft: EventDraft) => Effect.Effect<FoundryEvent, StoreError>
  /** A run's events: the stored ones, then live ones, ending with the event that ends the run. */
  readonly runEvents: (runId: string) => Stream.Stream<FoundryEvent, StoreError>
}>() {}

/** An event waiting for the next group commit. */
interface Pending {
  readonly event: Omit<FoundryEvent, "seq">
  readonly done: Deferred.Deferred<FoundryEvent, StoreError>
}

/** The most events one transaction writes. */
const maxBatch = 512

/** The event log over the `Store`, with an in-process fan-out. */
export const EventLogLive = Layer.scoped(
  EventLog,
  Effect.gen(function*() {
    const store = yield* Store
    const hub = yield* Effect.acquireRelease(PubSub.unbounded<FoundryEvent>(), PubSub.shutdown)
    const release = "dev"

    // Group commit: events emitted while a write is in progress are written together in the
    // next transaction, so concurrent runs share transactions instead of paying one each. An
    // emitter still waits until its event is durable.
    const pending = yield* Effect.acquireRelease(Queue.unbounded<Pending>(), Queue.shutdown)
    yield* Effect.gen(function*() {
      const batch = Chunk.toReadonlyArray(yield* Queue.takeBetween(pending, 1, maxBatch))
      const written = yield* store.appendEvents(batch.map((p) => p.event)).pipe(Effect.either)
      for (const [index, item] of batch.entries()) {
        const stored = written._tag === "Right" ? written.right[index] : undefined
        if (written._tag === "Left") yield* Deferred.fail(item.done, written.left)
        else if (stored !== undefined) {
          yield* PubSub.publish(hub, stored)
          yield* Deferred.succeed(item.done, stored)
        }
      }
    }).pipe(Effect.forever, Effect.forkScoped)

    const emit = Effect.fn("EventLog.emit")(function*(draft: EventDraft) {
      const time = yield* Clock.currentTimeMillis
      const event = { ...draft, id: newId("evt"), time, release }
      if (ephemeralTypes.has(draft.type)) {
        const published = { ...event, seq: 0 }
        yield* PubSub.publish(hub, published)
        return published
      }
      const done = yield* Deferred.make<FoundryEvent, StoreError>()
      yield* Queue.offer(pending, { event, done })
      return yield* Deferred.await(done)
    })

    const runEvents = (runId: string): Stream.Stream<FoundryEvent, StoreError> =>
      Stream.unwrapScoped(
        Effect.gen(function*() {
          // Subscribe before reading history, so nothing falls between the two.
          const live = yield* PubSub.subscribe(hub)
          const history = yield* store.listEvents({ runId, limit: 100_000 })
          const lastSeq = history.reduce((max, e) => Math.max(max, e.seq), 0)
          const run = yield* store.getRun(runId)
          const ended = history.some((e) => runEndTypes.has(e.type)) ||
            (run._tag === "Some" && finalStatuses.has(run.value.status))
          if (ended) return Stream.fromIterable(history)
          const following = Stream.fromQueue(live).pipe(
            Stream.filter((e) => e.runId === runId && (e.seq === 0 || e.seq > lastSeq)),
            Stream.takeUntil((e) => runEndTypes.has(e.type))
          )
          return Stream.concat(Stream.fromIterable(history), following)
        })
      )

    return EventLog.of({ emit, runEvents })
  })
)

