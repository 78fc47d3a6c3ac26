/**
 * Agent instances and the capabilities they install: the data that owns conversations. An
 * instance is made on first use (by a run, a webhook's playbook or an internal event) with an empty
 * context, or created through the instances API with a context, a provisioning key and
 * installations, all in one transaction.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, Schema } from "effect"
import { Database, type Row, type Statement } from "./Database.js"
import { type InstanceWrite, instanceWriteUnit } from "./instanceWrite.js"
import { type CapabilityKind, InstallationRecord, type InstanceRef, InstanceRecord, InstanceStatus, type NewInstallation } from "./records.js"
import { failAs, type StoreError } from "./StoreError.js"

/** A page of instances, ordered by agent then id. */
export interface InstanceQuery {
  readonly agent?: string | undefined
  /** Part of the id or the provisioning key, any case. */
  readonly search?: string | undefined
  readonly status?: InstanceStatus | undefined
  /** The last instance of the previous page. */
  readonly after?: InstanceRef | undefined
  readonly limit: number
}

/** An instance in a page, with how many capabilities it has installed. */
export interface InstancePageEntry {
  readonly instance: InstanceRecord
  readonly installations: number
}

/** An instance to create. */
export interface NewInstance extends InstanceRef {
  readonly provisioningKey: string | null
  readonly context: Readonly<Record<string, unknown>>
}

/** Instance storage. */
export class InstanceStorage extends Context.Tag("foundry/InstanceStorage")<InstanceStorage, {
  /** The instance `id` of `agent`, created with `context` on first use. */
  readonly ensure: (agent: string, id: string, context?: Readonly<Record<string, unknown>>) => Effect.Effect<InstanceRecord, StoreError>
  readonly get: (agent: string, id: string) => Effect.Effect<Option.Option<InstanceRecord>, StoreError>
  /** The instance's context as stored: read by every run that uses it, in one statement without the client's machinery. */
  readonly context: (agent: string, id: string) => Effect.Effect<Option.Option<InstanceRecord["context"]>, StoreError>
  /** Every instance of every agent, by agent then id. */
  readonly list: Effect.Effect<ReadonlyArray<InstanceRecord>, StoreError>
  /** One page of instances, each with its number of installations (counted in the same query). */
  readonly page: (query: InstanceQuery) => Effect.Effect<ReadonlyArray<InstancePageEntry>, StoreError>
  /** The instance, created on first use in one atomic statement; `created` says whether this call made it. */
  readonly provision: (agent: string, id: string) => Effect.Effect<{ readonly instance: InstanceRecord; readonly created: boolean }, StoreError>
  /**
   * Creates the instance with its installations and `also` (its events) in one transaction, `rows`
   * what `also` returned. When one with that id or that provisioning key exists already, nothing is
   * written and that one is returned (`created: false`).
   */
  readonly create: (
    instance: NewInstance,
    installations: ReadonlyArray<NewInstallation>,
    also?: ReadonlyArray<Statement>
  ) => Effect.Effect<{ readonly instance: InstanceRecord; readonly created: boolean; readonly rows: ReadonlyArray<ReadonlyArray<Row>> }, StoreError>
  readonly findByKey: (agent: string, provisioningKey: string) => Effect.Effect<Option.Option<InstanceRecord>, StoreError>
  readonly installations: (ref: InstanceRef) => Effect.Effect<ReadonlyArray<InstallationRecord>, StoreError>
  /**
   * Writes `write` and `also` (its events) in one transaction, only while the instance is not
   * archived and what `write` was made from is stored as read: the rows `also` returned, or `None`
   * when nothing was written (read again, and decide again).
   */
  readonly apply: (
    ref: InstanceRef,
    write: InstanceWrite,
    also: ReadonlyArray<Statement>
  ) => Effect.Effect<Option.Option<ReadonlyArray<ReadonlyArray<Row>>>, StoreError>
  /** The active instances of `agent` that have the capability installed. */
  readonly withInstallation: (agent: string, kind: CapabilityKind, capability: string) => Effect.Effect<ReadonlyArray<InstanceRecord>, StoreError>
  /** The installation whose secrets were sealed last: a process checks its key against them as it starts. */
  readonly latestSealed: Effect.Effect<Option.Option<InstallationRecord>, StoreError>
}>() {}

const decodeContext = Schema.decodeUnknownOption(InstanceRecord.fields.context)

const Ref = Schema.Struct({ agent: Schema.String, id: Schema.String })

/** Instance storage on the database's `SqlClient`. */
export const layer = Layer.effect(
  InstanceStorage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const database = yield* Database
    const find = SqlSchema.findOne({
      Request: Ref,
      Result: InstanceRecord,
      execute: ({ agent, id }) => sql`SELECT * FROM foundry_instances WHERE agent = ${agent} AND id = ${id}`
    })
    const findByKey = SqlSchema.findOne({
      Request: Schema.Struct({ agent: Schema.String, key: Schema.String }),
      Result: InstanceRecord,
      execute: ({ agent, key }) => sql`SELECT * FROM foundry_instances WHERE agent = ${agent} AND provisioning_key = ${key}`
    })
    const list = SqlSchema.findAll({
      Request: Schema.Void,
      Result: InstanceRecord,
      execute: () => sql`SELECT * FROM foundry_instances ORDER BY agent, id`
    })
    const installations = SqlSchema.findAll({
      Request: Ref,
      Result: InstallationRecord,
      execute: ({ agent, id }) =>
        sql`SELECT * FROM foundry_installations WHERE agent = ${agent} AND instance_id = ${id} ORDER BY kind, capability`
    })
    const withInstallation = SqlSchema.findAll({
      Request: Schema.Struct({ agent: Schema.String, kind: Schema.String, capability: Schema.String }),
      Result: InstanceRecord,
      execute: ({ agent, capability, kind }) =>
        sql`SELECT i.* FROM foundry_instances i JOIN foundry_installations n ON n.agent = i.agent AND n.instance_id = i.id
          WHERE i.agent = ${agent} AND n.kind = ${kind} AND n.capability = ${capability} AND i.status = 'active' ORDER BY i.id`
    })
    const latestSealed = SqlSchema.findOne({
      Request: Schema.Void,
      Result: InstallationRecord,
      execute: () => sql`SELECT * FROM foundry_installations WHERE secrets IS NOT NULL ORDER BY updated_at DESC LIMIT 1`
    })
    const decodePage = Schema.decodeUnknown(Schema.Array(Schema.Struct({
      instance: InstanceRecord,
      // PostgreSQL answers a count as text.
      installations: Schema.Union(Schema.Number, Schema.NumberFromString)
    })))

    const page = (query: InstanceQuery) =>
      Effect.gen(function*() {
        const conditions = [
          ...(query.agent === undefined ? [] : [sql`agent = ${query.agent}`]),
          ...(query.status === undefined ? [] : [sql`status = ${query.status}`]),
          ...(query.search === undefined || query.search === ""
            ? []
            : [sql`(LOWER(id) LIKE ${containing(query.search)} ESCAPE '\\' OR LOWER(provisioning_key) LIKE ${containing(query.search)} ESCAPE '\\')`]),
          ...(query.after === undefined
            ? []
            : [sql`(agent > ${query.after.agent} OR (agent = ${query.after.agent} AND id > ${query.after.id}))`])
        ]
        const rows = yield* sql<Record<string, unknown>>`SELECT i.*, (SELECT COUNT(*) FROM foundry_installations n
          WHERE n.agent = i.agent AND n.instance_id = i.id) AS installation_count
          FROM foundry_instances i WHERE ${sql.and(conditions)} ORDER BY agent, id LIMIT ${query.limit}`
        return yield* decodePage(rows.map(({ installationCount, ...instance }) => ({ instance, installations: installationCount })))
      })

    /** `%`, `_` and `\` are searched for as themselves, not as LIKE's wildcards. */
    const containing = (text: string) => `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`

    const provision = (agent: string, id: string, context: Readonly<Record<string, unknown>>) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const inserted = yield* sql<{ readonly id: string }>`INSERT INTO foundry_instances ${
          sql.insert({ agent, id, context: JSON.stringify(context), createdAt: now, updatedAt: now })
        } ON CONFLICT (agent, id) DO NOTHING RETURNING id`
        const instance = yield* Effect.flatten(find({ agent, id }))
        return { instance, created: inserted.length > 0 }
      })

    /** The instance of `instance`'s provisioning key, else the one of its id: the one a create found there. */
    const existing = (instance: NewInstance) =>
      Effect.gen(function*() {
        const byKey = instance.provisioningKey === null ? Option.none() : yield* findByKey({ agent: instance.agent, key: instance.provisioningKey })
        return Option.isSome(byKey) ? byKey : yield* find(instance)
      })

    const create = (instance: NewInstance, toInstall: ReadonlyArray<NewInstallation>, also: ReadonlyArray<Statement>) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const write: InstanceWrite = {
          create: { provisioningKey: instance.provisioningKey },
          context: instance.context,
          install: toInstall.map((installation) => ({ installation })),
          uninstall: []
        }
        const unit = instanceWriteUnit(database.dialect, instance, write, now, also)
        const written = yield* database.write(unit).pipe(
          // On PostgreSQL an instance of the same id made on first use meanwhile (a run's `provision`)
          // fails this one's insert on the unique key: nothing of this one was written, and that one is the answer.
          Effect.catchTag("StoreError", (error) =>
            Effect.flatMap(Effect.orElse(existing(instance), () => Effect.fail(error)), (found) =>
              Option.isSome(found) ? Effect.succeed({ _tag: "Refused" } as const) : Effect.fail(error)))
        )
        if (written._tag === "Refused") return { instance: yield* Effect.flatten(existing(instance)), created: false, rows: [] }
        return { instance: yield* Effect.flatten(find(instance)), created: true, rows: written.rows.slice(unit.statements.length - also.length) }
      })

    return InstanceStorage.of({
      ensure: (agent, id, context = {}) => Effect.map(provision(agent, id, context), (result) => result.instance).pipe(failAs("ensureInstance")),
      get: (agent, id) => find({ agent, id }).pipe(failAs("getInstance")),
      context: (agent, id) =>
        Effect.map(
          database.read({ sql: "SELECT context FROM foundry_instances WHERE agent = ? AND id = ?", params: [agent, id] }),
          (rows) => Option.flatMap(Option.fromNullable(rows[0]), (row) => decodeContext(row.context))
        ),
      list: list(undefined).pipe(failAs("listInstances")),
      page: (query) => page(query).pipe(failAs("pageInstances")),
      provision: (agent, id) => provision(agent, id, {}).pipe(failAs("provisionInstance")),
      create: (instance, toInstall, also = []) => create(instance, toInstall, also).pipe(failAs("createInstance")),
      findByKey: (agent, key) => findByKey({ agent, key }).pipe(failAs("findInstanceByKey")),
      installations: (ref) => installations(ref).pipe(failAs("listInstallations")),
      apply: (ref, write, also) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const unit = instanceWriteUnit(database.dialect, ref, write, now, also)
          const written = yield* database.write(unit)
          return written._tag === "Refused" ? Option.none() : Option.some(written.rows.slice(unit.statements.length - also.length))
        }),
      withInstallation: (agent, kind, capability) => withInstallation({ agent, kind, capability }).pipe(failAs("instancesWithInstallation")),
      latestSealed: latestSealed(undefined).pipe(failAs("latestSealedInstallation"))
    })
  })
)
