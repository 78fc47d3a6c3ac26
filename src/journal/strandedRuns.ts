/**
 * Adoption: the conversations a running executor takes over because nobody else is about to go on
 * with them (their runs in flight under a lease no live executor holds, or suspended runs that wait
 * on nothing any more whose last holder is dead, or that nobody woke ten lease lifetimes after they
 * came to wait on nothing). `RunJournal.takeOverStranded` is this on its database.
 */
import { Clock, type Context, Effect } from "effect"
import type { Database, Row, Statement } from "../durable/Database.js"
import type { StoreError } from "../durable/StoreError.js"
import * as statements from "./journalStatements.js"
import type { Stranded } from "./journalRecords.js"

/** Who holds what, as the adopting executor can tell: `dead` and `alive` are its verdicts on a holder's process. */
export interface Holders {
  readonly dead: (holder: string) => boolean
  readonly alive: (holder: string) => boolean
}

/** What the adopting executor goes by. */
export interface Adopting {
  readonly holders: Holders
  /** Whether the conversation has runs in the adopting process: they are its own business. */
  readonly here: (conversationId: string) => boolean
  /** Whether the adopting process's build runs the agent: a suspended run of one it leaves out is not woken. */
  readonly wakes: (agent: string) => boolean
  /**
   * The executor is starting: it wakes every suspended run that waits on nothing and that nobody
   * holds, whoever held it last (one that went on running would have woken it), not only a dead
   * holder's.
   */
  readonly starting: boolean
}

/** How many lease lifetimes a run is given to be woken by whoever decided or ended what it waits on. */
const wakeGrace = 10

/**
 * Whether a suspended run that waits on nothing was left so: what it was suspended for came to
 * pass (its approval decided, its child ended) after it was last suspended or resumed, `wakeGrace`
 * lease lifetimes ago, and its lease is as its suspension released it. The process that decided or
 * ended it wakes it at once (a decision that came while the suspension was written is found by the
 * run itself), so one still waiting by now was left by a process that died first, in a third
 * process or on another host, where nobody else would wake it. A run suspended after that (for a
 * build with its agent) waits on something else; a run taken since holds a lease of its
 * taker's, and one resumed since is its resumer's business. Waking it twice is safe: the lease
 * keeps two executions apart, and the second finds the run going on or ended.
 */
const leftWaiting = (row: Row, now: number, ttlMillis: number): boolean => {
  const since = Math.max(Number(row.decided_at ?? 0), Number(row.child_ended_at ?? 0))
  return Number(row.expires_at) === 0 && since > Number(row.moved_at ?? Number.MAX_SAFE_INTEGER) && since + wakeGrace * ttlMillis < now
}

/** `RunJournal.takeOverStranded` on `database`. */
export const takeOverStranded = (
  database: Context.Tag.Service<Database>,
  time: statements.LeaseTime,
  owner: string,
  ttlMillis: number,
  { here, holders, starting, wakes }: Adopting
): Effect.Effect<Stranded, StoreError> =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* database.read(statements.adoptionCandidates(time, owner, now))
    // A holder's process is looked at once a pass, however many conversations it holds.
    const verdicts = new Map<string, "dead" | "alive" | "unknown">()
    const verdict = (holder: string) => {
      let found = verdicts.get(holder)
      if (found === undefined) {
        found = holders.dead(holder) ? "dead" : holders.alive(holder) ? "alive" : "unknown"
        verdicts.set(holder, found)
      }
      return found
    }
    /** How the row's conversation is taken, if it is. */
    const takeover = (row: Row, conversationId: string, suspended: boolean): Statement | undefined => {
      if (row.owner === null || row.owner === undefined) return statements.acquireLease(time, conversationId, owner, now, ttlMillis)
      const holder = String(row.owner)
      // By the clock leases are judged by (the database's, on PostgreSQL), read with the row.
      const expired = Number(row.expired) === 1
      const token = Number(row.token)
      // Its own lease, given up, of a conversation with no run here: a run queued by a process that
      // stopped while this one held the lease, which nobody else would take up. Fenced by the token
      // read, as the others: a submission here since has claimed it.
      if (holder === owner) {
        return expired && !suspended ? statements.takeOverExpiredLease(time, conversationId, token, owner, now, ttlMillis) : undefined
      }
      const found = verdict(holder)
      // Fenced by the token read: a claim or takeover since leaves the lease alone.
      if (found === "dead" || (suspended && expired && (starting || leftWaiting(row, now, ttlMillis)))) {
        return statements.takeOverLease(time, conversationId, token, owner, now, ttlMillis)
      }
      if (found === "unknown" && !suspended && expired) return statements.takeOverExpiredLease(time, conversationId, token, owner, now, ttlMillis)
      return undefined
    }
    // One takeover per conversation, whether it has runs in flight, suspended ones, or both.
    const taking = new Map<string, { readonly statement: Statement; inFlight: boolean; readonly suspended: Array<string> }>()
    for (const row of rows) {
      const conversationId = String(row.conversation_id)
      const runId = row.run_id === null || row.run_id === undefined ? undefined : String(row.run_id)
      if (here(conversationId) || (runId !== undefined && !wakes(String(row.agent)))) continue
      const statement = takeover(row, conversationId, runId !== undefined)
      if (statement === undefined) continue
      const take = taking.get(conversationId) ?? { statement, inFlight: false, suspended: [] }
      taking.set(conversationId, take)
      if (runId === undefined) take.inFlight = true
      else take.suspended.push(runId)
    }
    if (taking.size === 0) return { conversations: [], suspended: [] }
    const takes = [...taking]
    const result = yield* database.write({ statements: takes.map(([, take]) => take.statement) })
    if (result._tag !== "Written") return { conversations: [], suspended: [] }
    const taken = takes.filter((_, at) => (result.rows[at]?.length ?? 0) > 0)
    return {
      conversations: taken.filter(([, take]) => take.inFlight).map(([conversationId]) => conversationId),
      suspended: taken.flatMap(([, take]) => take.suspended)
    }
  })
