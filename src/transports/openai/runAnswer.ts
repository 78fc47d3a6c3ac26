/**
 * A run followed as an OpenAI client sees it: the text of its model turns as it is written, then
 * how the run ended. The answer's text is every turn's text, turns separated by a blank line (a
 * model may write a sentence before its tool calls); streamed or not, a client gets the same text,
 * but for a turn asked again (a retry, a fallback): a stream cannot take back what it sent of the
 * failed attempt, while the whole answer has only the attempt that counted.
 *
 * Text deltas are live only (never stored): those written before the client started following
 * are lost, so each turn's stored text (`model.turn.completed`) completes what the deltas left
 * out (`turnText.ts`). A run waiting for an approval ends the answer with a note that says which approval, and
 * how to decide it.
 */
import { type Context, Effect, Option, Stream } from "effect"
import type { RunRecord } from "../../durable/records.js"
import type { Store } from "../../durable/Store.js"
import type { StoreError } from "../../durable/StoreError.js"
import type { FoundryEvent } from "../../events/FoundryEvent.js"
import { turnTextReading } from "../../events/turnText.js"
import { approvalsBelow, awaitedApprovalOf, type DescendantSources, firstApprovalBelow } from "../approvalsBelow.js"

/** How the followed part of a run ended. */
export type RunEnd =
  | { readonly _tag: "Completed" }
  | { readonly _tag: "AwaitingApproval"; readonly approvalId: string; readonly tool: string }
  | { readonly _tag: "Failed"; readonly error: string }
  | { readonly _tag: "Cancelled" }

/** A piece of the answer: more text, or the end. */
export type AnswerPiece =
  | { readonly _tag: "Text"; readonly text: string }
  | { readonly _tag: "End"; readonly end: RunEnd }

const turnSeparator = "\n\n"

/** What the approval decides: a budget's (tool `budget:<name>`) whether the run goes on over it. */
const waitsFor = (tool: string) =>
  tool.startsWith("budget:") ? `the run went over its ${tool.slice("budget:".length)} budget, and going on` : `the call to ${tool}`

/** What a client is told when the run stops for an approval. */
const approvalNote = (approvalId: string, tool: string, conversationId: string) =>
  `(Waiting for approval: ${waitsFor(tool)} needs a person's decision, approval ${approvalId}. Decide it in the ` +
  `inspector's Approvals page or with POST /api/approvals/${approvalId} and {"decision": "approve"} or {"decision": "deny"}; ` +
  `the answer then continues conversation ${conversationId}.)`

/** How a run ended whose events ran out before saying so (its end event pruned): its status says. */
const endFromStatus = (run: RunRecord): RunEnd =>
  run.status === "completed"
    ? { _tag: "Completed" }
    : run.status === "cancelled"
    ? { _tag: "Cancelled" }
    : { _tag: "Failed", error: run.error ?? `the run is ${run.status}` }

/**
 * What a run's answer is read from: given as arguments by the handler that made them, rather than
 * provided to each request's answer (a copy of the request's whole context each).
 */
export interface AnswerSources extends DescendantSources {
  readonly store: Context.Tag.Service<Store>
}

/**
 * One reading of a run's answer: each event as the pieces of the answer it adds, in order (the
 * text each turn has sent so far is remembered, so a reading makes its own state), and the answer
 * as a whole so far (`whole`), where a turn asked again has only its last attempt's text.
 */
const answerReading = () => {
  // Per turn, the text sent so far; whether any turn has had text (the next one is set apart).
  const turns = turnTextReading()
  let anyText = false
  // Per turn, the text of its current attempt, and the approval note the answer ends with: the
  // whole answer is made of them, since pieces already sent may hold a failed attempt's text.
  const attempts = new Map<number, string>()
  let note: string | undefined
  /** Text that starts a new part of the answer: set apart from the text before it. */
  const part = (piece: string): AnswerPiece => {
    const lead = anyText ? turnSeparator : ""
    anyText = true
    return { _tag: "Text", text: lead + piece }
  }
  /** `piece`, just read of `turn`, added to its current attempt's text. */
  const attempted = (turn: number, piece: string): string => {
    if (piece.length > 0) attempts.set(turn, (attempts.get(turn) ?? "") + piece)
    return piece
  }
  /** The turn's stored text is what its attempt wrote, whatever deltas were read of it. */
  const settled = (turn: number, stored: string): void => {
    if (stored.length > 0) attempts.set(turn, stored)
  }
  /** `piece`, just read of `turn`: the first of the turn is set apart from the text before it. */
  const text = (turn: number, piece: string): ReadonlyArray<AnswerPiece> => {
    if (piece.length === 0) return []
    return [turns.textOf(turn).length === piece.length ? part(piece) : { _tag: "Text", text: piece }]
  }
  /** The run stops for approval `approvalId` of `tool` (its own, or a subagent's run's). */
  const awaiting = (approvalId: string, tool: string, conversationId: string): ReadonlyArray<AnswerPiece> => {
    note = approvalNote(approvalId, tool, conversationId)
    return [part(note), { _tag: "End", end: { _tag: "AwaitingApproval", approvalId, tool } }]
  }
  const piecesOf = (event: FoundryEvent): ReadonlyArray<AnswerPiece> => {
    switch (event.type) {
      case "model.delta":
        return text(event.data.turn, attempted(event.data.turn, turns.delta(event.data.turn, event.data.at, event.data.text)))
      case "model.turn.completed":
        settled(event.data.turn, event.data.text)
        return text(event.data.turn, turns.completed(event.data.turn, event.data.text))
      case "model.turn.started":
      case "model.retry":
      case "model.fallback":
        // The turn starts again from its first word (asked again after a retry, a fallback, or
        // a step the store did not take); what was sent of it stays sent, but is no part of
        // the whole answer.
        turns.restart(event.data.turn)
        attempts.delete(event.data.turn)
        return []
      case "run.completed":
        return [{ _tag: "End", end: { _tag: "Completed" } }]
      case "run.failed":
        return [{ _tag: "End", end: { _tag: "Failed", error: event.data.error } }]
      case "run.cancelled":
        return [{ _tag: "End", end: { _tag: "Cancelled" } }]
      case "run.suspended": {
        // A call's approval, or a budget's: either way the run waits on a person.
        const awaited = awaitedApprovalOf(event)
        return awaited === undefined ? [] : awaiting(awaited.approvalId, awaited.tool, event.conversationId)
      }
      default:
        return []
    }
  }
  /** The answer as a whole so far: each turn's current attempt in turn order, then the note. */
  const whole = (): string => {
    const texts = [...attempts.entries()].sort(([a], [b]) => a - b).map(([, attempt]) => attempt)
    return [...texts, ...(note === undefined ? [] : [note])].join(turnSeparator)
  }
  return { piecesOf, awaiting, whole }
}

/** The conversation of run `runId` (the one an answer continues). */
const conversationOf = (store: Context.Tag.Service<Store>, runId: string): Effect.Effect<string, StoreError> =>
  Effect.map(store.getRun(runId), Option.match({ onNone: () => "", onSome: (run) => run.conversationId }))

/**
 * The end of a run whose events ran out before saying how it ended (pruned by retention): its
 * stored status says, and a completed run's stored output is the text its events no longer hold.
 */
const endFromStore = (store: Context.Tag.Service<Store>, runId: string): Effect.Effect<{ readonly end: RunEnd; readonly output: string }, StoreError> =>
  Effect.map(store.getRun(runId), Option.match({
    onNone: () => ({ end: { _tag: "Failed", error: `run ${runId} is not in the store` } satisfies RunEnd, output: "" }),
    onSome: (run) => ({ end: endFromStatus(run), output: run.status === "completed" ? run.output ?? "" : "" })
  }))

/** The run's answer as it is written; the last piece is its `End`. */
export const runAnswer = (runId: string, sources: AnswerSources): Stream.Stream<AnswerPiece, StoreError> =>
  Stream.suspend(() => {
    const { events, store } = sources
    const { awaiting, piecesOf, whole } = answerReading()
    let ended = false
    const fromStatus = Effect.suspend(() =>
      ended ? Effect.succeed([]) : Effect.map(endFromStore(store, runId), ({ end, output }): ReadonlyArray<AnswerPiece> => [
        ...(whole() === "" && output !== "" ? [{ _tag: "Text", text: output } satisfies AnswerPiece] : []),
        { _tag: "End", end }
      ])
    )
    const below = approvalsBelow(runId, sources).pipe(
      Stream.mapEffect((approval) => Effect.map(conversationOf(store, runId), (conversation) => awaiting(approval.id, approval.tool, conversation))),
      Stream.flattenIterables
    )
    return Stream.merge(events.runEvents(runId).pipe(Stream.mapConcat(piecesOf)), below, { haltStrategy: "left" }).pipe(
      Stream.takeUntil((piece) => piece._tag === "End"),
      Stream.tap((piece) => Effect.sync(() => {
        if (piece._tag === "End") ended = true
      })),
      Stream.concat(Stream.flattenIterables(Stream.fromEffect(fromStatus)))
    )
  })

/** A run's whole answer: its text and how the run ended. */
export interface WholeAnswer {
  readonly text: string
  readonly end: RunEnd
}

/**
 * The whole answer, once the run has ended or stopped for an approval: the run's events taken
 * from its follower as they are delivered, without a `Stream` (less than half the Effect
 * operations per chat completion; docs/performance.md).
 */
export const wholeAnswer = (runId: string, sources: AnswerSources): Effect.Effect<WholeAnswer, StoreError> =>
  Effect.scoped(Effect.gen(function*() {
    const { events, store } = sources
    const follower = yield* events.followRun(runId)
    // Read for the pieces' ends only: the text is the reading's whole answer, where a turn asked
    // again has only its last attempt (the pieces keep what a stream had sent of a failed one).
    const { awaiting, piecesOf, whole } = answerReading()
    const ownEnd = Option.isNone(follower) ? Effect.succeed(undefined) : Effect.async<RunEnd | undefined>((resume) => {
      let stop = (): void => undefined
      const ask = (): void => {
        stop = follower.value((delivered) => {
          if (delivered === undefined) return resume(Effect.succeed(undefined))
          for (const event of delivered) {
            for (const piece of piecesOf(event)) {
              if (piece._tag === "End") return resume(Effect.succeed(piece.end))
            }
          }
          ask()
        })
      }
      ask()
      return Effect.sync(() => stop())
    })
    // A subagent's run that stops for a person ends the answer too, with the same note.
    const belowEnd = Effect.gen(function*() {
      const approval = yield* firstApprovalBelow(runId, sources)
      let end: RunEnd | undefined
      for (const piece of awaiting(approval.id, approval.tool, yield* conversationOf(store, runId))) {
        if (piece._tag === "End") end = piece.end
      }
      return end
    })
    const end = yield* Effect.raceFirst(ownEnd, belowEnd)
    if (end !== undefined) return { text: whole(), end }
    const text = whole()
    const stored = yield* endFromStore(store, runId)
    return { text: text === "" ? stored.output : text, end: stored.end }
  }))
