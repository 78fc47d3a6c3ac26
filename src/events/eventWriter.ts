/**
 * Which event log wrote an event. Each log stamps the ids of its events with a writer part of its
 * own (`durable/ids.ts`), so an event says which log, and so which process on the store, wrote
 * it, however it is read: published there, read back from the store, or relayed. The OTLP export
 * of each process sends the spans whose end its own log wrote, so each span goes once however
 * many processes follow the store.
 */
import { newId, newWriter, writerOf } from "../durable/ids.js"
import { type AnyEvent, type FoundryEvent, withEnvelope } from "./FoundryEvent.js"

/** The writer of one event log. */
export const makeEventWriter = () => {
  const writer = newWriter()
  return {
    /**
     * The drafts as events of `release` at `time`, each with an id of its own, numbered 0: as an
     * ephemeral event is published, until the store numbers a stored one.
     */
    stamp: (drafts: ReadonlyArray<AnyEvent<"id" | "seq" | "time" | "release">>, time: number, release: string): ReadonlyArray<FoundryEvent> =>
      drafts.map((draft) => withEnvelope(draft, { id: newId("evt", writer), time, release, seq: 0 })),
    /** Whether this writer stamped `event`. */
    wrote: (event: FoundryEvent): boolean => writerOf(event.id) === writer
  }
}
