/**
 * An instance's change and its events, written as one: the events are stamped, their insert is
 * handed to the change's unit of the group commit, and they are published only once it has
 * committed. The one place an instance's events are inserted, so that a store failing partway
 * keeps neither the change without its events nor events of a change it did not keep.
 */
import { Clock, type Context, Effect, Option } from "effect"
import type { Row, Statement } from "../durable/Database.js"
import type { InstanceStorage } from "../durable/InstanceStorage.js"
import type { InstanceRef } from "../durable/records.js"
import type { InstanceWrite } from "../durable/instanceWrite.js"
import type { EventDraft, EventLog } from "../events/EventLog.js"
import { insertEvents, sequenced } from "../events/EventStorage.js"
import type { EventContent } from "../events/FoundryEvent.js"
import { spanIdOf, traceIdOf } from "../journal/trace.js"

/** `content` as an event of the instance, its trace anchored on the instance and the moment. */
const drafted = (ref: InstanceRef, content: EventContent) =>
  Effect.map(Clock.currentTimeMillis, (now): EventDraft => {
    const anchor = `${ref.agent}/${ref.id}@${now}`
    return {
      ...content,
      traceId: traceIdOf(anchor),
      spanId: spanIdOf(anchor, content.type),
      parentSpanId: null,
      runId: "",
      conversationId: "",
      instanceId: ref.id,
      agent: ref.agent
    }
  })

/** The writes of an instance's changes with their events, over `storage` and `events`. */
export const makeInstanceEventWrites = (storage: Context.Tag.Service<InstanceStorage>, events: Context.Tag.Service<EventLog>) => {
  /**
   * `write`, given the insert of the events `drafts` to commit with its rows, and the events
   * published once it has: all of it, or nothing. `told` says from its result whether it wrote
   * them, with the rows the insert returned.
   */
  const withEvents = <A, E>(
    ref: InstanceRef,
    drafts: ReadonlyArray<EventContent>,
    write: (also: ReadonlyArray<Statement>) => Effect.Effect<A, E>,
    told: (result: A) => ReadonlyArray<Row> | undefined
  ) =>
    Effect.gen(function*() {
      const stamped = yield* events.stamp(yield* Effect.forEach(drafts, (draft) => drafted(ref, draft)))
      const result = yield* write([insertEvents(stamped)])
      const rows = told(result)
      if (rows !== undefined) yield* events.publish(sequenced(stamped, rows))
      return result
    })

  /** `write` with the events of `drafts` in one unit (`InstanceStorage.apply`); whether its guards let it be written. */
  const applyWithEvents = (ref: InstanceRef, write: InstanceWrite, drafts: ReadonlyArray<EventContent>) =>
    Effect.map(
      withEvents(ref, drafts, (also) => storage.apply(ref, write, also), Option.match({ onNone: () => undefined, onSome: (rows) => rows[0] ?? [] })),
      Option.isSome
    )

  return { withEvents, applyWithEvents }
}
