/**
 * Processes on one store, as the tests of what crosses between processes make them: each an event
 * log of its own on the database a place opens (two event logs on one database are two processes
 * on one store, each tailing what the other writes), or a channel of its own.
 */
import { Context, type Duration, Effect, Layer } from "effect"
import { Database } from "../../src/durable/Database.js"
import * as SqlStore from "../../src/durable/SqlStore.js"
import * as EventLog from "../../src/events/EventLog.js"
import * as EventStorage from "../../src/events/EventStorage.js"
import type { DatabaseLayer } from "../journal/backends.js"

/**
 * A process on the database `place` opens, tailing the store every `pollEvery`: its event log, and
 * its database. With `tailStarts`, its tail, when a follower starts it, reads the newest number
 * stored and then waits for that before it goes on from there.
 */
export const processWithDatabaseOn = (place: DatabaseLayer, pollEvery: Duration.DurationInput = "20 millis", tailStarts?: Effect.Effect<void>) =>
  Effect.map(
    Layer.build(
      EventLog.layer({ crossProcess: { pollEvery } }).pipe(
        Layer.provideMerge(
          tailStarts === undefined ? Layer.empty : Layer.effect(
            EventStorage.EventStorage,
            Effect.map(EventStorage.EventStorage, (storage) => ({ ...storage, newestSeq: Effect.zipLeft(storage.newestSeq, tailStarts) }))
          )
        ),
        Layer.provideMerge(EventStorage.layer),
        Layer.provideMerge(SqlStore.layer),
        Layer.provideMerge(place)
      )
    ),
    (context) => ({
      log: Context.get(context, EventLog.EventLog),
      database: Context.get(context, Database),
      storage: Context.get(context, EventStorage.EventStorage)
    })
  )

/** The channel of a connection of its own to the database `place` opens: no process, no relay. */
export const channelOn = (place: DatabaseLayer) =>
  Effect.flatMap(Layer.build(place), (context) => {
    const channel = Context.get(context, Database).channel
    return channel === undefined ? Effect.dieMessage("a store on disk has a channel") : Effect.succeed(channel)
  })

/** A process's event log on the database `place` opens, tailing the store every `pollEvery`. */
export const processOn = (place: DatabaseLayer, pollEvery: Duration.DurationInput = "20 millis") =>
  Effect.map(processWithDatabaseOn(place, pollEvery), ({ log }) => log)
