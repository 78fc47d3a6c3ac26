/**
 * Durable timers: schedule routes and the timers agents arm for their own instance, each an
 * activation with a typed spec (what to run, and when). Writers save and remove them (a run's step
 * writes an agent's timer with the answer of the call that set it, by the statements below); the
 * scheduler sleeps until the soonest is due and is woken by `changes` when one is saved or removed.
 */
import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Option, PubSub, type Queue, Schema, type Scope } from "effect"
import { ScheduleTimingSchema } from "../definitions/scheduleTiming.js"
import { Database, type Statement } from "./Database.js"
import { failAs, type StoreError } from "./StoreError.js"

/** What an activation runs: a message to an agent's instance; `conversation` is set for a sleeping conversation. */
export const ActivationSpec = Schema.Struct({
  schedule: Schema.String,
  agent: Schema.String,
  instance: Schema.String,
  message: Schema.String,
  timing: ScheduleTimingSchema,
  overlap: Schema.Literal("skip", "queue", "allow"),
  misfire: Schema.Literal("skip", "run-once", "catch-up"),
  conversation: Schema.optional(Schema.String)
})
export type ActivationSpec = typeof ActivationSpec.Type

/** The kinds of activation: schedule routes, and timers agents set for their own instance. */
export const ActivationKind = Schema.Literal("schedule", "agent")
export type ActivationKind = typeof ActivationKind.Type

/** Whether an activation fires: active, paused, or done (an `at` whose one time has come or passed). */
export const ActivationStatus = Schema.Literal("active", "paused", "done")
export type ActivationStatus = typeof ActivationStatus.Type

/** A durable timer: when it fires next, when it fired last, and what it runs. */
export class ActivationRecord extends Schema.Class<ActivationRecord>("ActivationRecord")({
  id: Schema.String,
  kind: ActivationKind,
  spec: Schema.parseJson(ActivationSpec),
  status: ActivationStatus,
  nextFire: Schema.NullOr(Schema.Number),
  lastFire: Schema.NullOr(Schema.Number),
  lastRunId: Schema.NullOr(Schema.String),
  updatedAt: Schema.Number
}) {}

/** A timer to keep: its spec says what to run; `nextFire` when. */
export interface ActivationUpdate {
  readonly id: string
  readonly kind: ActivationKind
  readonly spec: ActivationSpec
  readonly status: ActivationStatus
  readonly nextFire: number | null
}

/** Activations saved and removed together (see `ActivationStorage.write`). */
export interface ActivationChange {
  readonly saves: ReadonlyArray<ActivationUpdate>
  readonly removes?: ReadonlyArray<string>
  /** The release the change is for: written only while it is the store's current one (or none is). */
  readonly whileCurrent?: string
}

/**
 * A firing of an activation, as the scheduler records it: the time it stood for and the run it
 * started, and, for a firing of its timing (not one a person asked for), when it fires next
 * (`null`: never again, it is done) by the activation as read before the firing (`readAt`, its
 * `updatedAt` then).
 */
export interface Firing {
  readonly lastFire: number | null
  readonly lastRunId: string | null
  readonly next?: { readonly readAt: number; readonly nextFire: number | null }
}

/** Activation storage. */
export class ActivationStorage extends Context.Tag("foundry/ActivationStorage")<ActivationStorage, {
  readonly list: (kind: ActivationKind) => Effect.Effect<ReadonlyArray<ActivationRecord>, StoreError>
  /** The activations of `kind` for `agent`'s instance `instance` (an instance's own timers), by id. */
  readonly listFor: (kind: ActivationKind, agent: string, instance: string) => Effect.Effect<ReadonlyArray<ActivationRecord>, StoreError>
  readonly get: (id: string) => Effect.Effect<Option.Option<ActivationRecord>, StoreError>
  /**
   * Activations due by `now`, soonest first (by time, then id), at most `limit`: those after
   * `after` in that order when given, the next page of them.
   */
  readonly due: (
    now: number,
    limit: number,
    after?: { readonly nextFire: number; readonly id: string }
  ) => Effect.Effect<ReadonlyArray<ActivationRecord>, StoreError>
  /** The soonest `nextFire` of an active activation after `after`. */
  readonly nextFireAfter: (after: number) => Effect.Effect<number | null, StoreError>
  /**
   * Stores `saves` and removes `removes` in one transaction: each saved activation made, or its
   * spec, status and next time changed in place, on the row as stored then (paused, it stays paused
   * unless it is done, and its last firing stays). With `whileCurrent` (a release's schedules),
   * only while the store's current release is that one, or none was ever deployed: false, writing
   * nothing, when another is (a deploy made since, whose own sync writes its schedules).
   */
  readonly write: (change: ActivationChange) => Effect.Effect<boolean, StoreError>
  readonly remove: (id: string) => Effect.Effect<void, StoreError>
  /**
   * Records a firing on the activation as it is stored now, not as the scheduler read it before the
   * firing: removed meanwhile it stays removed, and changed meanwhile (paused, resumed, given
   * another spec by a reload or a deploy) it keeps the status and next firing that change gave it.
   */
  readonly fired: (id: string, firing: Firing) => Effect.Effect<void, StoreError>
  /** Pauses or resumes activation `id` as it is stored now (resumed, it fires next at `nextFire`); a removed one stays removed. */
  readonly setStatus: (id: string, status: ActivationStatus, nextFire: number | null) => Effect.Effect<void, StoreError>
  /**
   * Deletes the agents' timers done before `doneBefore` and not changed since: fired for good, they
   * are kept only for a while, to show why they fire no more. Schedule routes stay (their files say
   * what there is).
   */
  readonly pruneDone: (doneBefore: number) => Effect.Effect<void, StoreError>
  /** Signals `changes` for timers another writer of this process saved or removed (a run's step). */
  readonly changed: Effect.Effect<void>
  /** A signal after every save or remove in this process, for as long as the scope lasts. */
  readonly changes: Effect.Effect<Queue.Dequeue<void>, never, Scope.Scope>
}>() {}

const encodeSpec = Schema.encodeSync(Schema.parseJson(ActivationSpec))

/**
 * The `updated_at` a change writes, for a change at `?` (the time, given twice): later than the one
 * it replaces even within one millisecond, as a firing knows the row it read by it (`fired`).
 */
const changedAt = "CASE WHEN foundry_activations.updated_at >= ? THEN foundry_activations.updated_at + 1 ELSE ? END"

/** `activation` stored as of `now`: made, or changed in place (see `ActivationStorage.write`). */
export const saveActivation = (activation: ActivationUpdate, now: number): Statement => ({
  sql: `INSERT INTO foundry_activations (id, kind, spec, agent, instance_id, status, next_fire, last_fire, last_run_id, updated_at)
    VALUES (?, ?, ?, ?, ?, ?, ?, NULL, NULL, ?) ON CONFLICT (id) DO UPDATE SET
    spec = excluded.spec, agent = excluded.agent, instance_id = excluded.instance_id, next_fire = excluded.next_fire,
    status = CASE WHEN foundry_activations.status = 'paused' AND excluded.status <> 'done' THEN 'paused' ELSE excluded.status END,
    updated_at = ${changedAt}`,
  params: [
    activation.id,
    activation.kind,
    encodeSpec(activation.spec),
    activation.spec.agent,
    activation.spec.instance,
    activation.status,
    activation.nextFire,
    now,
    now,
    now
  ]
})

/** A firing recorded on activation `id` (see `ActivationStorage.fired`). */
const firedActivation = (id: string, firing: Firing, now: number): Statement => {
  const next = firing.next
  if (next === undefined) {
    return {
      sql: `UPDATE foundry_activations SET last_fire = ?, last_run_id = ?, updated_at = ${changedAt} WHERE id = ?`,
      params: [firing.lastFire, firing.lastRunId, now, now, id]
    }
  }
  // Every column reads the row as it was before this update: `updated_at` the one read before the firing, or a change's since.
  return {
    sql: `UPDATE foundry_activations SET last_fire = ?, last_run_id = ?,
      next_fire = CASE WHEN updated_at = ? THEN ? ELSE next_fire END,
      status = CASE WHEN updated_at = ? AND ? = 1 THEN 'done' ELSE status END, updated_at = ${changedAt} WHERE id = ?`,
    params: [firing.lastFire, firing.lastRunId, next.readAt, next.nextFire, next.readAt, next.nextFire === null ? 1 : 0, now, now, id]
  }
}

/** Activation `id` paused or resumed as stored now (see `ActivationStorage.setStatus`). */
export const activationStatus = (id: string, status: ActivationStatus, nextFire: number | null, now: number): Statement => ({
  sql: `UPDATE foundry_activations SET status = ?, next_fire = ?, updated_at = ${changedAt} WHERE id = ?`,
  params: [status, nextFire, now, now, id]
})

/** Activation `id` gone. */
export const removeActivation = (id: string): Statement => ({ sql: "DELETE FROM foundry_activations WHERE id = ?", params: [id] })

/** The agents' timers done before `doneBefore` gone (see `ActivationStorage.pruneDone`). */
const pruneDoneTimers = (doneBefore: number): Statement => ({
  sql: "DELETE FROM foundry_activations WHERE status = 'done' AND kind = 'agent' AND updated_at < ?",
  params: [doneBefore]
})

/**
 * The guards of a change for `release`: no other release is the store's current one. On
 * PostgreSQL the current release's row is first locked against a deploy's switch (which waits
 * until the change commits, and syncs its own schedules after it); the second guard, a statement of
 * its own, sees a switch that committed while the first waited. SQLite writes one transaction at a
 * time, the guard's read included.
 */
const whileCurrent = (dialect: "sqlite" | "pg", release: string): ReadonlyArray<Statement> => [
  ...(dialect === "pg"
    ? [{
      sql: "SELECT 1 AS locked FROM (SELECT COUNT(*) AS found FROM (SELECT 1 FROM foundry_release_current WHERE name = 'current' FOR SHARE) AS current_row) AS counted",
      params: []
    }]
    : []),
  { sql: "SELECT 1 AS ok WHERE NOT EXISTS (SELECT 1 FROM foundry_release_current WHERE name = 'current' AND release_id <> ?)", params: [release] }
]

/** Activation storage on the database's `SqlClient`. */
export const layer = Layer.scoped(
  ActivationStorage,
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const database = yield* Database
    const changed = yield* Effect.acquireRelease(PubSub.sliding<void>(1), PubSub.shutdown)
    const decode = Schema.decodeUnknown(Schema.Array(ActivationRecord))
    const signal = Effect.asVoid(PubSub.publish(changed, undefined))
    const written = (statement: Statement) => Effect.zipRight(database.write({ statements: [statement] }), signal)
    /** The statement a change made now writes, written. */
    const writtenNow = (change: (now: number) => Statement) => Effect.flatMap(Clock.currentTimeMillis, (now) => written(change(now)))
    return ActivationStorage.of({
      list: (kind) => sql`SELECT * FROM foundry_activations WHERE kind = ${kind} ORDER BY id`.pipe(Effect.flatMap(decode), failAs("listActivations")),
      listFor: (kind, agent, instance) =>
        sql`SELECT * FROM foundry_activations WHERE kind = ${kind} AND agent = ${agent} AND instance_id = ${instance} ORDER BY id`.pipe(
          Effect.flatMap(decode),
          failAs("listActivations")
        ),
      get: (id) =>
        sql`SELECT * FROM foundry_activations WHERE id = ${id}`.pipe(
          Effect.flatMap(decode),
          Effect.map((rows) => Option.fromNullable(rows[0])),
          failAs("getActivation")
        ),
      due: (now, limit, after) =>
        (after === undefined
          ? sql`SELECT * FROM foundry_activations WHERE status = 'active' AND next_fire <= ${now} ORDER BY next_fire, id LIMIT ${limit}`
          : sql`SELECT * FROM foundry_activations WHERE status = 'active' AND next_fire <= ${now}
              AND (next_fire > ${after.nextFire} OR (next_fire = ${after.nextFire} AND id > ${after.id})) ORDER BY next_fire, id LIMIT ${limit}`).pipe(
          Effect.flatMap(decode),
          failAs("dueActivations")
        ),
      nextFireAfter: (after) =>
        sql<{ readonly next: number | null }>`SELECT MIN(next_fire) AS next FROM foundry_activations WHERE status = 'active' AND next_fire > ${after}`.pipe(
        Effect.map((rows) => rows[0]?.next === null || rows[0]?.next === undefined ? null : Number(rows[0].next)),
        failAs("nextActivationTime")
      ),
      write: ({ removes = [], saves, whileCurrent: release }) =>
        Effect.gen(function*() {
          if (saves.length === 0 && removes.length === 0) return true
          const now = yield* Clock.currentTimeMillis
          const result = yield* database.write({
            ...(release === undefined ? {} : { guards: whileCurrent(database.dialect, release) }),
            statements: [...saves.map((activation) => saveActivation(activation, now)), ...removes.map(removeActivation)]
          })
          if (result._tag === "Refused") return false
          yield* signal
          return true
        }),
      remove: (id) => written(removeActivation(id)),
      fired: (id, firing) => writtenNow((now) => firedActivation(id, firing, now)),
      setStatus: (id, status, nextFire) => writtenNow((now) => activationStatus(id, status, nextFire, now)),
      // No signal: a done timer has no firing for the scheduler to look at again.
      pruneDone: (doneBefore) => Effect.asVoid(database.write({ statements: [pruneDoneTimers(doneBefore)] })),
      changed: signal,
      changes: PubSub.subscribe(changed)
    })
  })
)
