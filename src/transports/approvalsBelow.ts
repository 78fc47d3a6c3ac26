/**
 * The approvals a run waits on through the runs it started: while a run is suspended on a child
 * (a subagent), the child, or a child of the child, may stop for a person. A caller that answers
 * when its run stops for an approval (`/v1`, `/mcp`) answers on these too, rather than waiting
 * until the approval expires.
 */
import { type Context, Effect, Option, Stream } from "effect"
import type { ApprovalStorage } from "../durable/ApprovalStorage.js"
import type { ApprovalRecord } from "../durable/records.js"
import type { StoreError } from "../durable/StoreError.js"
import type { EventLog } from "../events/EventLog.js"
import type { FoundryEvent } from "../events/FoundryEvent.js"

/** What following a run's descendants reads. */
export interface DescendantSources {
  readonly events: Context.Tag.Service<EventLog>
  readonly approvals: Context.Tag.Service<ApprovalStorage>
}

/** The runs `event` says its run now waits on. */
const childOf = (event: FoundryEvent): string | undefined =>
  event.type === "run.suspended" && event.data.reason === "child" ? event.data.childRunId : undefined

/**
 * The approval a `run.suspended` event waits on, if it waits on a person, and its tool: a tool
 * call's approval, or a budget's (a run over a budget with `onExceeded: "ask"`, tool `budget:<name>`).
 */
export const awaitedApprovalOf = (event: FoundryEvent): { readonly approvalId: string; readonly tool: string } | undefined =>
  event.type === "run.suspended" && (event.data.reason === "approval" || event.data.reason === "budget")
    ? { approvalId: event.data.approvalId, tool: event.data.tool }
    : undefined

/**
 * The approval a `run.suspended` event waits on, while it is still pending: a suspension in a
 * replayed history may have been decided since.
 */
export const pendingApprovalOf = (event: FoundryEvent, approvals: Context.Tag.Service<ApprovalStorage>): Effect.Effect<Option.Option<ApprovalRecord>, StoreError> => {
  const awaited = awaitedApprovalOf(event)
  return awaited === undefined
    ? Effect.succeed(Option.none())
    : Effect.map(approvals.get(awaited.approvalId), Option.filter((approval) => approval.status === "pending"))
}

/** Pending approvals of run `runId` and of the runs it waits on, as they are asked for. */
const approvalsOf = (runId: string, sources: DescendantSources): Stream.Stream<ApprovalRecord, StoreError> =>
  sources.events.runEvents(runId).pipe(
    Stream.flatMap((event): Stream.Stream<ApprovalRecord, StoreError> => {
      const child = childOf(event)
      return child !== undefined
        ? approvalsOf(child, sources)
        : Stream.fromEffect(pendingApprovalOf(event, sources.approvals)).pipe(Stream.filterMap((pending) => pending))
    }, { concurrency: "unbounded" })
  )

/** Pending approvals of the runs that run `runId` waits on (not its own), as they are asked for. */
export const approvalsBelow = (runId: string, sources: DescendantSources): Stream.Stream<ApprovalRecord, StoreError> =>
  sources.events.runEvents(runId).pipe(
    Stream.flatMap((event) => {
      const child = childOf(event)
      return child === undefined ? Stream.empty : approvalsOf(child, sources)
    }, { concurrency: "unbounded" })
  )

/** The first approval below run `runId`; never, when none comes (its caller races it with the run's own end). */
export const firstApprovalBelow = (runId: string, sources: DescendantSources): Effect.Effect<ApprovalRecord, StoreError> =>
  Effect.flatMap(Stream.runHead(approvalsBelow(runId, sources)), Option.match({ onNone: () => Effect.never, onSome: Effect.succeed }))
