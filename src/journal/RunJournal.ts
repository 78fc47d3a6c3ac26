/**
 * The run journal: the one module that writes a run's lifecycle. A step of a run (its submission,
 * a model turn, a tool result, its end) is one write unit: the transcript messages, the status
 * change, the usage and the events of that step commit together or not at all, fenced by the
 * conversation's lease, and steps of concurrent runs share the database's group commit. Nothing
 * else writes a run's status. Events are published to live subscribers once committed.
 */
import { Clock, Context, Data, Effect, FiberRef, Layer, Schema } from "effect"
import { Database, type Row, type Statement, type UnitResult, type WriteUnit } from "../durable/Database.js"
import { finalStatuses, RunRecord, RunStatus } from "../durable/records.js"
import type { StoreError } from "../durable/StoreError.js"
import { type EventDraft, EventLog } from "../events/EventLog.js"
import { insertEvents, sequenced, type UnsequencedEvent } from "../events/EventStorage.js"
import type { FoundryEvent } from "../events/FoundryEvent.js"
import type { ChatMessage } from "../models/Model.js"
import { eventRelease } from "./eventRelease.js"
import * as statements from "./journalStatements.js"
import { submissionFingerprint } from "./submissionFingerprint.js"
import { type Adopting, takeOverStranded } from "./strandedRuns.js"
import { type Claim, historyOwner, type InLine, type Lease, type NewRun, type Step, type Stranded, usageAdded } from "./journalRecords.js"

/** What a lease's renewal found (`RunJournal.renew`). */
export type Renewal = "Renewed" | "Released" | "Taken"

/**
 * A write was fenced off: the conversation's lease belongs to a newer grant (another executor), or
 * the run was ended by another process.
 */
export class LeaseLost extends Schema.TaggedError<LeaseLost>()("LeaseLost", {
  conversationId: Schema.String,
  token: Schema.Number
}) {
  override get message(): string {
    return `the lease on conversation ${this.conversationId} (token ${this.token}) was taken over by another executor, or its run ended elsewhere`
  }
}

/** The submission's instance is paused or archived: nothing was written. */
export class InstanceClosed extends Data.TaggedError("InstanceClosed")<{ readonly agent: string; readonly instanceId: string }> {}

/** The run journal. */
export class RunJournal extends Context.Tag("foundry/RunJournal")<RunJournal, {
  /**
   * Queues a run in one transaction: its instance (made on first use), its conversation when
   * `newConversation`, the run and its `run.queued` event (built by `queued` from the new record).
   * An instance that is paused or archived takes nothing (`InstanceClosed`).
   */
  readonly submit: (run: NewRun, options: SubmitOptions) => Effect.Effect<RunRecord, StoreError | InstanceClosed>
  /**
   * `submit`, taking the conversation's lease for `claim.owner` in the same transaction if it is
   * free, expired or already the owner's: a run that will execute at once needs no transaction of
   * its own for the lease. `lease` is `undefined` when another executor holds it.
   */
  readonly submitAndClaim: (
    run: NewRun,
    options: SubmitOptions,
    claim: { readonly owner: string; readonly ttlMillis: number }
  ) => Effect.Effect<{ readonly run: RunRecord; readonly lease: Lease | undefined }, StoreError | InstanceClosed>
  /**
   * Takes the conversation's lease for `owner` if it is free, expired or already `owner`'s, and
   * reads the run's status in the same transaction; while another executor holds it, when that
   * lease expires. A lease whose holder `deadHolder` says is dead is taken over at once. The token
   * grows with every new grant, so a stale holder can be told apart.
   */
  readonly claim: (
    run: RunRecord,
    owner: string,
    ttlMillis: number,
    deadHolder?: (holder: string) => boolean
  ) => Effect.Effect<Claim, StoreError>
  /**
   * Takes over, for `owner`, the leases of conversations with queued or running runs that no live
   * executor holds: none, one whose holder `holders.dead` says is dead, one expired whose holder
   * `holders.alive` does not vouch for (an expired lease of a process that still runs is left to
   * it: its run waits there for its turn), or `owner`'s own given up, of a conversation with no run
   * `here` (a process that stopped had queued its run while `owner` held the lease). And the leases
   * of suspended runs that wait on nothing any more, of an agent `wakes` says this build runs, when
   * their conversation's last holder is dead or there never was one (their leases are released, so
   * expiry tells nothing, and only a dead holder says that nobody is about to resume them), or,
   * `starting`, whoever held them last. Conversations `here` says have runs in this process are
   * left alone. One read and at most one write for all of them.
   */
  readonly takeOverStranded: (owner: string, ttlMillis: number, adopting: Adopting) => Effect.Effect<Stranded, StoreError>
  /**
   * Extends a lease held for `runId`: `Renewed`; `Released` when a step of the run released it here
   * (its end, its suspension: nothing to renew, nothing taken); `Taken` when the lease is no longer
   * this grant's, or that run has ended elsewhere (another process cancelled it): its executor stops.
   */
  readonly renew: (lease: Lease, runId: string, ttlMillis: number) => Effect.Effect<Renewal, StoreError>
  /** Gives the lease up; nothing is written for a lease already released (here, or by a step). */
  readonly release: (lease: Lease) => Effect.Effect<void, StoreError>
  /**
   * Writes one step of `run` in one transaction; with a `lease`, only while that lease is the
   * current grant and the run has not ended (else `LeaseLost`, and nothing of the step is
   * written). Without one, a step that ends the run (a cancel) is written only while the run has
   * not ended either (else `LeaseLost`). Returns its events as stored, already published.
   */
  readonly record: (run: RunRecord, step: Step, lease?: Lease) => Effect.Effect<ReadonlyArray<FoundryEvent>, StoreError | LeaseLost>
  /**
   * The run executes on `release` from now on, instead of the release its record names: that one
   * cannot be loaded any more (a build of sources that changed since).
   */
  readonly moveToRelease: (runId: string, release: string) => Effect.Effect<void, StoreError>
  /**
   * Where the run stands in its conversation as stored now (read by the holder of the
   * conversation's lease); `undefined` for a run that is not there.
   */
  readonly inLine: (run: RunRecord) => Effect.Effect<InLine | undefined, StoreError>
  /**
   * The `submissionFingerprint` of the submission that queued the run with an idempotency key;
   * `null` for a run queued without one.
   */
  readonly idempotencyFingerprint: (runId: string) => Effect.Effect<string | null, StoreError>
  /** The clock leases are judged by, for a statement outside the journal that reads them (a cluster's sweep). */
  readonly leaseTime: statements.LeaseTime
}>() {}

/** How a run is queued: in a new conversation or an existing one, and its `run.queued` event (built from the new record). */
export interface SubmitOptions {
  readonly newConversation: boolean
  readonly queued: (record: RunRecord) => EventDraft
}

/**
 * A message as stored: its JSON. `ChatMessage` transforms nothing, so its encoded form is the
 * message itself (tsc checks that here); the schema's encoder re-checked every field the types
 * already guarantee, about 10 µs a message on every step. Reading a message still decodes it.
 */
const encodeMessage = (message: ChatMessage): string => JSON.stringify(message)
type Same<A, B> = [A] extends [B] ? [B] extends [A] ? true : false : false
const encodedAsIs: Same<typeof ChatMessage.Encoded, ChatMessage> = true
void encodedAsIs

const noWrite = { rows: [], stored: [] }

/** The lease granted to `owner` when a statement that takes it returned its token (`rows`), else `undefined`. */
const grantedIn = (rows: ReadonlyArray<Row> | undefined, conversationId: string, owner: string): Lease | undefined => {
  const token = rows?.[0]?.token
  return token === undefined ? undefined : { conversationId, owner, token: Number(token) }
}

/**
 * The run journal on the `Database`, publishing through the `EventLog`, judging leases by `clock`:
 * the database's on PostgreSQL (`database`, the process's on SQLite), or the process's (`process`:
 * for tests that drive the journal's clock).
 */
const make = (clock: "database" | "process") =>
  Effect.gen(function*() {
    const database = yield* Database
    const events = yield* EventLog
    const time = clock === "database" && database.dialect === "pg" ? statements.databaseTime : statements.processTime
    const fence = statements.leaseGuard(database.dialect)
    const notEnded = statements.notEndedGuard(database.dialect)
    // Leases a step already released: releasing one again would be a wasted transaction.
    const released = new WeakSet<Lease>()

    /**
     * Writes `unit` and publishes its events once committed, stamped at `time` with the release of
     * the run's work: the one the executing fiber works for, else the run's own, else the current one.
     */
    const writeWithEvents = Effect.fnUntraced(function*(
      unit: WriteUnit,
      drafts: ReadonlyArray<EventDraft>,
      lease: Lease | undefined,
      stamp: { readonly time: number; readonly release: string | null }
    ) {
      let stamped: ReadonlyArray<UnsequencedEvent> = []
      if (drafts.length > 0) {
        const release = (yield* FiberRef.get(eventRelease)) ?? stamp.release
        stamped = yield* events.stamp(drafts, release === null ? undefined : { time: stamp.time, release })
      }
      const all = stamped.length === 0 ? unit.statements : [...unit.statements, insertEvents(stamped)]
      if (all.length === 0) return noWrite
      const result = yield* database.write({ guards: unit.guards, statements: all })
      if (result._tag === "Refused") {
        return yield* new LeaseLost({ conversationId: lease?.conversationId ?? "", token: lease?.token ?? 0 })
      }
      if (stamped.length === 0) return { rows: result.rows, stored: [] }
      const stored = sequenced(stamped, result.rows[result.rows.length - 1] ?? [])
      yield* events.publish(stored)
      return { rows: result.rows, stored }
    })

    /** Queues `run`, with `extraAt(now)` (a lease to take) last in its unit; the rows of those. */
    const queue = Effect.fnUntraced(function*(
      run: NewRun,
      options: SubmitOptions,
      extraAt: (now: number) => ReadonlyArray<Statement>
    ) {
      const now = yield* Clock.currentTimeMillis
      const extra = extraAt(now)
      const record = new RunRecord({
        id: run.id,
        agent: run.agent,
        instanceId: run.instanceId,
        conversationId: run.conversationId,
        input: run.input,
        steeredFrom: run.steeredFrom ?? null,
        parentRunId: run.parentRunId ?? null,
        parentToolCallId: run.parentToolCallId ?? null,
        traceId: run.traceId ?? null,
        parentSpanId: run.parentSpanId ?? null,
        source: run.source ?? null,
        release: run.release,
        status: "queued",
        output: null,
        error: null,
        createdAt: now,
        startedAt: null,
        finishedAt: null,
        // Every field given: a default the constructor adds makes it about four times as slow.
        inputTokens: 0,
        outputTokens: 0,
        costUsd: 0,
        unpricedTurns: 0
      }, { disableValidation: true })
      const unit = [
        statements.ensureInstance(run.agent, run.instanceId, now),
        options.newConversation
          ? statements.insertConversation(run.conversationId, run.agent, run.instanceId, now)
          : statements.touchConversation(run.conversationId, now),
        ...statements.appendMessages(run.conversationId, historyOwner(run.id), (run.history ?? []).map(encodeMessage), now),
        statements.insertRun(
          run,
          now,
          run.idempotencyKey === undefined ? null : submissionFingerprint({
            agent: run.agent,
            instanceId: run.instanceId,
            input: run.input,
            history: run.submittedHistory,
            conversation: options.newConversation ? null : run.conversationId
          })
        )
      ]
      // The extra statements' rows follow the unit's own (the events' insert comes after them).
      const written = yield* writeWithEvents(
        { guards: [statements.instanceTakesRuns(run.agent, run.instanceId)], statements: [...unit, ...extra] },
        [options.queued(record)],
        undefined,
        { time: now, release: run.release }
      ).pipe(
        Effect.catchTag("LeaseLost", () => Effect.fail(new InstanceClosed({ agent: run.agent, instanceId: run.instanceId })))
      )
      return { record, rows: written.rows.slice(unit.length, unit.length + extra.length) }
    })

    return RunJournal.of({
      leaseTime: time,
      submit: (run, options) => Effect.map(queue(run, options, () => []), ({ record }) => record),

      submitAndClaim: (run, options, claim) =>
        Effect.gen(function*() {
          const { record, rows } = yield* queue(run, options, (now) => [
            statements.acquireLease(time, run.conversationId, claim.owner, now, claim.ttlMillis)
          ])
          return { run: record, lease: grantedIn(rows[0], run.conversationId, claim.owner) }
        }),

      claim: (run, owner, ttlMillis, deadHolder) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const claimed = (result: UnitResult): Claim | undefined => {
            if (result._tag !== "Written") return undefined
            const lease = grantedIn(result.rows[0], run.conversationId, owner)
            const inLine = inLineOf(run.id, result.rows[1] ?? [])
            return lease !== undefined && inLine !== undefined ? { _tag: "Claimed", lease, inLine } : undefined
          }
          const taken = claimed(yield* database.write({
            statements: [statements.acquireLease(time, run.conversationId, owner, now, ttlMillis), statements.runInLine(run)]
          }))
          if (taken !== undefined) return taken
          const [row] = yield* database.read(statements.leaseHolder(time, run.conversationId, now))
          const held: Claim = {
            _tag: "Held",
            owner: String(row?.owner ?? ""),
            token: Number(row?.token ?? 0),
            expiresAt: Number(row?.expires_at ?? now),
            expiresIn: Number(row?.expires_in ?? 0)
          }
          if (deadHolder === undefined || !deadHolder(held.owner)) return held
          // Its holder is known to be dead: taken over now, not after the expiry.
          const takenOver = claimed(yield* database.write({
            statements: [statements.takeOverLease(time, run.conversationId, held.token, owner, now, ttlMillis), statements.runInLine(run)]
          }))
          return takenOver ?? held
        }),

      renew: (lease, runId, ttlMillis) =>
        Effect.gen(function*() {
          if (released.has(lease)) return "Released"
          const now = yield* Clock.currentTimeMillis
          // The lease as the renewal left it, read in its transaction: released by a step of this
          // grant's run (its token kept, expired) however the two were ordered, or not this grant's
          // any more (a takeover, a cancel's revoke: a new token), or its run ended elsewhere.
          const result = yield* database.write({
            statements: [statements.renewLease(time, lease, runId, now, ttlMillis), statements.leaseHolder(time, lease.conversationId, now)]
          })
          if (result._tag === "Written" && (result.rows[0]?.length ?? 0) > 0) return "Renewed"
          const after = result._tag === "Written" ? result.rows[1]?.[0] : undefined
          return after !== undefined && Number(after.token) === lease.token && Number(after.expires_at) === 0 ? "Released" : "Taken"
        }),

      takeOverStranded: (owner, ttlMillis, adopting) => takeOverStranded(database, time, owner, ttlMillis, adopting),

      release: (lease) =>
        Effect.suspend(() =>
          released.has(lease)
            ? Effect.void
            : Effect.tap(database.write({ statements: [statements.releaseLease(lease)] }), () => released.add(lease))
        ),

      moveToRelease: (runId, release) => Effect.asVoid(database.write({ statements: [statements.moveToRelease(runId, release)] })),

      inLine: (run) => Effect.map(database.read(statements.runInLine(run)), (rows) => inLineOf(run.id, rows)),

      idempotencyFingerprint: (runId) =>
        Effect.map(database.read(statements.idempotencyFingerprint(runId)), (rows) => {
          const value = rows[0]?.idempotency_fingerprint
          return typeof value === "string" ? value : null
        }),

      record: (run, step, lease) =>
        Effect.gen(function*() {
          const now = yield* Clock.currentTimeMillis
          const writes: Array<Statement> = []
          // The lease's row first, as the steps the cancel fences lock it first (their guard): no two
          // transactions wait for each other's row of the run and of its conversation's lease.
          if (step.revokeLeaseFor !== undefined) writes.push(statements.revokeLease(time, run.conversationId, step.revokeLeaseFor, now))
          writes.push(...statements.appendMessages(run.conversationId, run.id, (step.messages ?? []).map(encodeMessage), now))
          for (const approval of step.approvals ?? []) writes.push(statements.askApproval(approval, now))
          for (const timer of step.timers ?? []) writes.push(statements.timerStatement(timer, now))
          // One statement for the run's row, not one for its status and one per turn: each is SQLite's
          // time on the thread every run shares.
          const usage = usageAdded(step.usage ?? [])
          if (step.status !== undefined) writes.push(statements.updateRun(run.id, step.status, now, step.starts === true, usage))
          else if (usage !== undefined) writes.push(statements.addUsage(run.id, usage))
          if (step.releaseLease === true && lease !== undefined) writes.push(statements.releaseLease(lease))
          // Without a lease, a step that ends the run does so only once: a second cancel finds it ended.
          const guard = lease !== undefined
            ? fence(lease, run.id)
            : step.status !== undefined && finalStatuses.has(step.status.status)
            ? notEnded(run, step.revokeLeaseFor !== undefined)
            : undefined
          const guards = guard === undefined ? [] : [guard]
          if (step.messagesThrough !== undefined) guards.push(statements.runMessagesEndAt(run.conversationId, run.id, step.messagesThrough))
          const { stored } = yield* writeWithEvents(
            { guards, statements: writes },
            step.events ?? [],
            lease,
            { time: now, release: run.release }
          )
          if (step.releaseLease === true && lease !== undefined) released.add(lease)
          return stored
        })
    })
  })

export const layer = Layer.effect(RunJournal, make("database"))

/** The run journal judging leases by the process's clock on PostgreSQL too: for tests that set the time (`TestClock`). */
export const layerOnProcessClock = Layer.effect(RunJournal, make("process"))

const isRunStatus = Schema.is(RunStatus)

/** Where run `runId` stands, from `runInLine`'s rows; `undefined` for a run that is not there. */
const inLineOf = (runId: string, rows: ReadonlyArray<Row>): InLine | undefined => {
  const status = rows.find((row) => row.id === runId)?.status
  if (!isRunStatus(status)) return undefined
  const ahead = rows.filter((row) => row.id !== runId).sort((a, b) => Number(a.seq) - Number(b.seq)).map((row) => String(row.id))
  return { status, ahead }
}
