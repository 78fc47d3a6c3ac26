/**
 * A server whose store a test can make refuse one kind of write: a trigger `BEFORE <statement> ON
 * <table>` that raises "the store dropped the change" when `when` holds (SQL over `NEW` or `OLD`),
 * on SQLite and on PostgreSQL, so a request can be failed partway through its transaction.
 */
import Sqlite from "better-sqlite3"
import { Effect, type Scope } from "effect"
import { plannedModel } from "../support/plannedModel.js"
import { connect, freshDatabase, skipPostgres } from "../support/postgres.js"
import { startServer, startServerOnItsStore } from "../support/server.js"
import { instancesProject } from "./apiProject.js"

/** The write refused: a statement on a table, when a condition on its row holds. */
export interface Refusal {
  readonly statement: "INSERT" | "DELETE"
  readonly table: string
  readonly when: string
}

/** A started server: its address, its instances' and installations' rows as stored, and the refusal to turn on and off. */
export interface RefusingServer {
  readonly url: string
  readonly rows: Effect.Effect<unknown>
  readonly refuse: Effect.Effect<void>
  readonly allow: Effect.Effect<void>
}

/** A backend to start such a server on; `files` are added to the instances' project. */
export interface Backend {
  readonly name: string
  readonly skip: boolean
  readonly start: (refusal: Refusal, files?: Readonly<Record<string, string>>) => Effect.Effect<RefusingServer, unknown, Scope.Scope>
}

/** What a refused write fails with: a request's answer must not quote it. */
export const dropped = "the store dropped the change"

export const instanceRows = "SELECT agent, id, context, status, status_reason, provisioning_key, updated_at FROM foundry_instances ORDER BY agent, id"
export const installationRows = "SELECT agent, instance_id, kind, capability, config, secrets, updated_at FROM foundry_installations ORDER BY instance_id, kind, capability"

const sqlite: Backend = {
  name: "SQLite",
  skip: false,
  start: (refusal, files) =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject(undefined, files))
      const db = yield* Effect.acquireRelease(Effect.sync(() => new Sqlite(server.storeFile)), (db) => Effect.sync(() => db.close()))
      return {
        url: server.url,
        rows: Effect.sync(() => ({ instances: db.prepare(instanceRows).all(), installations: db.prepare(installationRows).all() })),
        refuse: Effect.sync(() =>
          void db.exec(`CREATE TRIGGER refusal BEFORE ${refusal.statement} ON ${refusal.table} WHEN ${refusal.when}
            BEGIN SELECT RAISE(ABORT, '${dropped}'); END`)
        ),
        allow: Effect.sync(() => void db.exec("DROP TRIGGER refusal"))
      }
    })
}

const postgres: Backend = {
  name: "PostgreSQL",
  skip: skipPostgres,
  start: (refusal, files) =>
    Effect.gen(function*() {
      const url = yield* freshDatabase
      const config = `import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: ${JSON.stringify(url)} } })
`
      const server = yield* startServerOnItsStore(yield* instancesProject(config, files), plannedModel)
      const sql = yield* connect(url)
      return {
        url: server,
        rows: Effect.orDie(Effect.all({ instances: sql.unsafe(instanceRows), installations: sql.unsafe(installationRows) })),
        refuse: Effect.orDie(Effect.zipRight(
          sql.unsafe(`CREATE OR REPLACE FUNCTION refusal() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION '${dropped}'; END $$`),
          sql.unsafe(`CREATE TRIGGER refusal BEFORE ${refusal.statement} ON ${refusal.table} FOR EACH ROW WHEN (${refusal.when})
            EXECUTE FUNCTION refusal()`)
        )),
        allow: Effect.orDie(Effect.asVoid(sql.unsafe(`DROP TRIGGER refusal ON ${refusal.table}`)))
      }
    })
}

export const backends: ReadonlyArray<Backend> = [sqlite, postgres]
