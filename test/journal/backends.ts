/**
 * The storage under test, once per backend: SQLite on a temporary file and PostgreSQL in a fresh
 * schema. A backend gives a fresh place for one test's data; `open` builds on it every storage a
 * run's steps write (database, store, instances, timers, event storage, event log, run journal), and opening the same
 * place again reopens the same data.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import type { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, type Scope } from "effect"
import * as ActivationStorage from "../../src/durable/ActivationStorage.js"
import { Database } from "../../src/durable/Database.js"
import * as PgDatabase from "../../src/durable/PgDatabase.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import * as InstanceStorage from "../../src/durable/InstanceStorage.js"
import * as SqlStore from "../../src/durable/SqlStore.js"
import { Store } from "../../src/durable/Store.js"
import type { StoreError } from "../../src/durable/StoreError.js"
import * as EventLog from "../../src/events/EventLog.js"
import * as EventStorage from "../../src/events/EventStorage.js"
import * as RunJournal from "../../src/journal/RunJournal.js"
import { freshSchema, type PostgresUnavailable, skipPostgres } from "../support/postgres.js"

/** A database layer: building it opens (and migrates) the database. */
export type DatabaseLayer = Layer.Layer<Database | SqlClient.SqlClient, StoreError>

/** A backend under test. */
export interface Backend {
  readonly name: string
  readonly skip: boolean
  /** A new, empty place for one test's data, removed when the test ends. */
  readonly fresh: Effect.Effect<DatabaseLayer, PostgresUnavailable, Scope.Scope>
}

export const sqlite: Backend = {
  name: "SQLite",
  skip: false,
  fresh: Effect.acquireRelease(
    Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-store-"))),
    (dir) => Effect.sync(() => rmSync(dir, { recursive: true, force: true }))
  ).pipe(
    // A folder that does not exist yet: the layer creates it.
    Effect.map((dir) => SqliteDatabase.layer(join(dir, "data", "foundry.db")).pipe(Layer.provide(NodeContext.layer)))
  )
}

export const postgres: Backend = {
  name: "PostgreSQL",
  skip: skipPostgres,
  fresh: Effect.map(freshSchema, (url) => PgDatabase.layer(url))
}

export const backends: ReadonlyArray<Backend> = [sqlite, postgres]

/** The release the tests' events are stamped with. */
export const release = "r1"

/**
 * The event log, except that an event's id is its span id, so a test knows every id in advance
 * (a real id is made fresh for every event).
 */
const eventLogWithSpanIds = Layer.effect(
  EventLog.EventLog,
  Effect.map(EventLog.EventLog, (log) =>
    EventLog.EventLog.of({
      ...log,
      stamp: (drafts) => Effect.map(log.stamp(drafts), (events) => events.map((event) => ({ ...event, id: event.spanId })))
    }))
).pipe(Layer.provide(EventLog.layer({ release: Effect.succeed(release) })))

/**
 * Every storage over the database `place` opens. The journal judges leases by the process's clock,
 * which the tests set (`TestClock`), unless given another (`RunJournal.layer`: the database's on PostgreSQL).
 */
export const storageLayer = (place: DatabaseLayer, journal: typeof RunJournal.layer = RunJournal.layerOnProcessClock) =>
  journal.pipe(
    Layer.provideMerge(eventLogWithSpanIds),
    Layer.provideMerge(EventStorage.layer),
    Layer.provideMerge(SqlStore.layer),
    Layer.provideMerge(Layer.merge(InstanceStorage.layer, ActivationStorage.layer)),
    Layer.provideMerge(place)
  )

/** The storages a test drives. */
export interface Storage {
  readonly journal: Context.Tag.Service<RunJournal.RunJournal>
  readonly store: Context.Tag.Service<Store>
  readonly instances: Context.Tag.Service<InstanceStorage.InstanceStorage>
  readonly events: Context.Tag.Service<EventStorage.EventStorage>
  readonly database: Context.Tag.Service<Database>
}

/** Opens every storage on `place` for as long as the scope lasts (its journal `journal`, as `storageLayer` says). */
export const open = (place: DatabaseLayer, journal?: typeof RunJournal.layer) =>
  Effect.map(Layer.build(storageLayer(place, journal)), (context): Storage => ({
    journal: Context.get(context, RunJournal.RunJournal),
    store: Context.get(context, Store),
    instances: Context.get(context, InstanceStorage.InstanceStorage),
    events: Context.get(context, EventStorage.EventStorage),
    database: Context.get(context, Database)
  }))

/**
 * Makes the database refuse to store an event with id `id` (a trigger), so that a test can fail
 * one statement of a step: event ids are unique by construction, and the store no longer checks.
 */
export const refuseEvent = (storage: Storage, id: string) => {
  const sql = storage.database.sql
  return sql.onDialectOrElse({
    pg: () =>
      Effect.zipRight(
        sql.unsafe(`CREATE OR REPLACE FUNCTION foundry_test_refuse() RETURNS trigger AS $$
          BEGIN IF NEW.id = '${id}' THEN RAISE EXCEPTION 'refused by the test'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`),
        sql.unsafe("CREATE TRIGGER foundry_test_refuse BEFORE INSERT ON foundry_events FOR EACH ROW EXECUTE FUNCTION foundry_test_refuse()")
      ),
    orElse: () =>
      sql.unsafe(`CREATE TRIGGER foundry_test_refuse BEFORE INSERT ON foundry_events
        WHEN NEW.id = '${id}' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`)
  }).pipe(Effect.orDie, Effect.asVoid)
}

/** Every storage on a fresh place of `backend`, open for the test. */
export const freshStorage = (backend: Backend) => Effect.flatMap(backend.fresh, open)
