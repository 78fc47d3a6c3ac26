/**
 * The channel to the other processes on a SQLite store (a `StoreChannel`). SQLite has no
 * `LISTEN`/`NOTIFY`, so a file of its own beside the store's (`<store>-live`, as SQLite names its
 * `-wal` and `-shm`) holds the messages of the last minute: a sender appends one, and a listener
 * reads what came after the last it read, every `pollEvery`. Not synced: a message is for whoever
 * listens now. A file apart from the store's, so that its writes never wait for the store's lock
 * or its syncs, nor the store's for them.
 */
import Sqlite from "better-sqlite3"
import { Effect, type Scope, Stream } from "effect"
import { type StoreChannel, startupContention } from "./Database.js"
import { messageOf, StoreError } from "./StoreError.js"

/** How often a listener reads what came, in milliseconds. */
const pollEvery = 50
/** How long a message is kept: a listener that has not read it by then never will. */
const keepFor = 60_000
/** How long a write waits for another process's: a message is a few bytes, written in microseconds. */
const busyWait = 200

interface MessageRow {
  readonly seq: number
  readonly body: string
}

const isMessageRow = (row: unknown): row is MessageRow =>
  typeof row === "object" && row !== null && "seq" in row && typeof row.seq === "number" && "body" in row && typeof row.body === "string"

const newestSeq = (row: unknown): number => typeof row === "object" && row !== null && "seq" in row && typeof row.seq === "number" ? row.seq : 0

/** The channel of the store at `storeFile`, open for the current scope. */
export const openChannel = (storeFile: string): Effect.Effect<StoreChannel, StoreError, Scope.Scope> =>
  Effect.gen(function*() {
    const filename = `${storeFile}-live`
    const failed = (operation: string) => (cause: unknown) => new StoreError({ operation, message: `${filename}: ${messageOf(cause)}` })
    const db = yield* Effect.acquireRelease(
      Effect.try({ try: () => new Sqlite(filename, { timeout: busyWait }), catch: failed("open") }),
      (db) => Effect.sync(() => db.close())
    )
    // Processes opening it at once race to switch it to WAL, as the store's: the loser tries again.
    yield* Effect.try({
      try: () => {
        db.pragma("journal_mode = WAL")
        db.pragma("synchronous = OFF")
        db.exec("CREATE TABLE IF NOT EXISTS foundry_live_messages (seq INTEGER PRIMARY KEY AUTOINCREMENT, channel TEXT NOT NULL, body TEXT NOT NULL, at INTEGER NOT NULL)")
      },
      catch: failed("open")
    }).pipe(Effect.retry(startupContention))
    const insert = db.prepare("INSERT INTO foundry_live_messages (channel, body, at) VALUES (?, ?, ?)")
    const since = db.prepare("SELECT seq, body FROM foundry_live_messages WHERE channel = ? AND seq > ? ORDER BY seq")
    const newest = db.prepare("SELECT COALESCE(MAX(seq), 0) AS seq FROM foundry_live_messages")
    const prune = db.prepare("DELETE FROM foundry_live_messages WHERE at < ?")
    let prunedAt = 0
    // Messages sent from here, passed by when read: a process need not hear itself here.
    const own = new Set<number>()
    const sendNow = (channel: string, message: string): void => {
      const now = Date.now()
      if (own.size > 10_000) own.clear()
      own.add(Number(insert.run(channel, message, now).lastInsertRowid))
      if (now - prunedAt < keepFor) return
      prunedAt = now
      prune.run(now - keepFor)
    }

    return {
      // A message fits in a row of any size; the relay keeps them as small as on PostgreSQL.
      maxMessageBytes: 7900,
      // Read by a timer of its own, without an Effect: every process reads it twenty times a
      // second whatever it does, and a fiber's operations for that would show in every run's.
      mayGoDeaf: false,
      listen: (channel) => {
        // From the call on, not from when the stream first runs: a process that says it is there
        // right after it calls this hears the answers, however late its stream starts (a layer
        // being built keeps the fiber that runs it waiting), and what came meanwhile, up to a
        // minute of it, comes at once. Run again, it goes on after the last message it handed its
        // stream; run twice at once, the two would share the messages between them.
        let read: number | undefined
        try {
          read = newestSeq(newest.get())
        } catch {
          // Read as the stream starts, which reports the failure.
        }
        return Stream.asyncPush<string, StoreError>((emit) =>
          Effect.acquireRelease(
            Effect.try({
              try: () => {
                read ??= newestSeq(newest.get())
                const timer = setInterval(() => {
                  try {
                    for (const row of since.all(channel, read ?? 0)) {
                      if (!isMessageRow(row)) continue
                      read = row.seq
                      if (!own.delete(row.seq)) emit.single(row.body)
                    }
                  } catch (cause) {
                    emit.fail(failed("listen")(cause))
                  }
                }, pollEvery)
                // Never what keeps a process running.
                timer.unref()
                return timer
              },
              catch: failed("listen")
            }),
            (timer) => Effect.sync(() => clearInterval(timer))
          )
        )
      },
      send: (channel, message) => Effect.try({ try: () => sendNow(channel, message), catch: failed("send") }),
      sendNow: (channel, message) => {
        try {
          sendNow(channel, message)
        } catch {
          // Busy past its wait, or the disk full: the message is lost, as one to nobody listening would be.
        }
      }
    } satisfies StoreChannel
  })
