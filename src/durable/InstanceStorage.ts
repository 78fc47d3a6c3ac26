/**
 * Agent instances: the data that owns conversations, made on first use (by a run, a webhook's
 * playbook or an internal event) with an empty context unless one is given.
 */
import { SqlClient, SqlSchema } from "@effect/sql"
import { Clock, Context, Effect, Layer, type Option, Schema } from "effect"
import { InstanceRecord } from "./records.js"
import { failAs, type StoreError } from "./StoreError.js"

/** Instance storage. */
export class InstanceStorage extends Context.Tag("foundry/InstanceStorage")<InstanceStorage, {
  /** The instance `id` of `agent`, created with `context` on first use. */
  readonly ensure: (agent: string, id: string, context?: Readonly<Record<string, unknown>>) => Effect.Effect<InstanceRecord, StoreError>
  readonly get: (agent: string, id: string) => Effect.Effect<Option.Option<InstanceRecord>, StoreError>
  /** Every instance of every agent, by agent then id. */
  readonly list: Effect.Effect<ReadonlyArray<InstanceRecord>, StoreError>
  /** The instance, created on first use in one atomic statement; `created` says whether this call made it. */
  readonly provision: (agent: string, id: string) => Effect.Effect<{ readonly instance: InstanceRecord; readonly created: boolean }, StoreError>
}>() {}

/** Instance storage on the database's `SqlClient`. */
export const layer = Layer.effect(
  InstanceStorage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const find = SqlSchema.findOne({
      Request: Schema.Struct({ agent: Schema.String, id: Schema.String }),
      Result: InstanceRecord,
      execute: ({ agent, id }) => sql`SELECT * FROM foundry_instances WHERE agent = ${agent} AND id = ${id}`
    })
    const list = SqlSchema.findAll({
      Request: Schema.Void,
      Result: InstanceRecord,
      execute: () => sql`SELECT * FROM foundry_instances ORDER BY agent, id`
    })
    const provision = (agent: string, id: string, context: Readonly<Record<string, unknown>>) =>
      Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const inserted = yield* sql<{ readonly id: string }>`INSERT INTO foundry_instances ${
          sql.insert({ agent, id, context: JSON.stringify(context), createdAt: now, updatedAt: now })
        } ON CONFLICT (agent, id) DO NOTHING RETURNING id`
        const instance = yield* Effect.flatten(find({ agent, id }))
        return { instance, created: inserted.length > 0 }
      })
    return InstanceStorage.of({
      ensure: (agent, id, context = {}) => Effect.map(provision(agent, id, context), (result) => result.instance).pipe(failAs("ensureInstance")),
      get: (agent, id) => find({ agent, id }).pipe(failAs("getInstance")),
      list: list(undefined).pipe(failAs("listInstances")),
      provision: (agent, id) => provision(agent, id, {}).pipe(failAs("provisionInstance"))
    })
  })
)
