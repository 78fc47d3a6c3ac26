/**
 * What a run sends its model: the transcript as the strictest provider's rules allow (checked
 * before it goes), fitted to the context window: unchanged under the soft threshold, old tool
 * results shortened over it, older turns summarized (and the summary stored) over the hard one, in
 * pieces that fit the summarizer's window, each step announced and then reported as done or not;
 * a request over the whole window even then is not sent, nor a run's message that makes one alone.
 */
import { Array as Arr, Clock, Effect, Option } from "effect"
import { ApprovalStorage } from "../durable/ApprovalStorage.js"
import { Store } from "../durable/Store.js"
import type { StoreError } from "../durable/StoreError.js"
import type { TurnUsage } from "../journal/journalRecords.js"
import type { LeaseLost } from "../journal/RunJournal.js"
import { type ChatMessage, type LanguageModel, type ModelError, type ModelRequest, ModelResolver, type ToolSpec } from "../models/Model.js"
import { transcriptProblem } from "../models/validateTranscript.js"
import { type ContextWindow, contextWindowOf, elideEarlierToolResults, elideOldToolResults, estimateTokens, isContextOverflow, linesWithin, requestCharacters, summaryLines, summaryRequest } from "./compaction.js"
import { type ContextTooLong, contextTooLong, messageTooLong } from "./ContextTooLong.js"
import { modelCallReports } from "./modelCallReports.js"
import { modelTurnWithFallbacks } from "./modelTurn.js"
import type { RunContext } from "./RunContext.js"
import { foreignOpenCalls, modelView } from "./transcript.js"
import { turnUsage } from "./turnUsage.js"

/** The span of model turn `turn`: its compaction and its summary calls are told on it too. */
const turnSpan = (turn: number): string => `turn:${turn}`

/** A request and its estimated tokens. */
interface Sized {
  readonly request: ModelRequest
  readonly tokens: number
}

/** A summary, and the model that wrote it. */
interface Summary {
  readonly text: string
  readonly model: string
}

/**
 * The transcript of `context`'s run and the request fitting for its models; `spent` is told the
 * usage of each summary call (added to the run's as a turn's is).
 */
export const makeRunTranscript = (context: RunContext, models: Arr.NonEmptyReadonlyArray<LanguageModel>, spent: (usage: TurnUsage) => void) =>
  Effect.gen(function*() {
    const store = yield* Store
    const approvals = yield* ApprovalStorage
    const resolver = yield* ModelResolver
    const { agent, journal, run, step, window } = context
    const config = context.app.table.config
    const model = Arr.headNonEmpty(models).name

    /**
     * Refuses the run's message when, with the instructions and the tools (`tools`, listed only
     * when the window is known) that every request of the run carries, it is over the whole
     * window: no compaction could make a turn fit, and once in the conversation it would put every
     * later run's turns over it too.
     */
    const admitMessage = <E>(content: string, system: string, tools: Effect.Effect<ReadonlyArray<ToolSpec>, E>): Effect.Effect<void, ContextTooLong | E> =>
      window === undefined ? Effect.void : Effect.flatMap(tools, (listed) => {
        const refusal = messageTooLong(content, { system, tools: listed }, window, model, agent)
        return refusal === undefined ? Effect.void : Effect.fail(refusal)
      })

    /** The transcript this run sends, checked against the strictest provider's rules before it goes. */
    const transcript = Effect.gen(function*() {
      const notes = new Map<string, string>()
      for (const { call, runId } of foreignOpenCalls(journal, run.id)) {
        const approval = yield* approvals.find(runId, call.id)
        // Keyed by run as well: call ids are unique within a run only (scripted models number them per turn).
        notes.set(
          `${runId}:${call.id}`,
          Option.isSome(approval) && approval.value.status === "pending"
            ? `no result yet: this call to ${call.name} waits for a person's approval; its result will be added here once it is decided`
            : `no result: this call to ${call.name} was interrupted before it finished`
        )
      }
      const view = modelView(journal, run.id, (call, owner) => notes.get(`${owner}:${call.id}`) ?? `no result for ${call.name}`)
      const problem = transcriptProblem(view)
      if (problem !== undefined) return yield* Effect.dieMessage(`the transcript of run ${run.id} breaks the tool-call rules: ${problem}`)
      return view
    })

    /**
     * One summary call of turn `turn` (on its span): its usage added to the run's, as a turn's is
     * (the provider bills it the same), and told by `context.summary.completed`; its retries and
     * fallbacks told as a turn's are, marked `summary`, as they happen.
     */
    const summaryCall = (summarizers: Arr.NonEmptyReadonlyArray<LanguageModel>, request: ModelRequest, turn: number) =>
      Effect.gen(function*() {
        const span = turnSpan(turn)
        const started = yield* Clock.currentTimeMillis
        const options = { retry: config.modelRetry, onDeltas: () => Effect.void, ...modelCallReports(step, context.commit, span, turn, "summary") }
        const result = yield* modelTurnWithFallbacks(summarizers, request, options)
        const usage = turnUsage(result, config.prices)
        step.usage(usage)
        spent(usage)
        step.emit("context.summary.completed", span, { model: result.model, usage, durationMs: (yield* Clock.currentTimeMillis) - started })
        return result
      })

    /**
     * The summary of `older`, asked in pieces that each fit `budget` characters (one request when
     * there is none), each piece's request carrying the summary of those before it; an empty text
     * when a summarizer gave none (a piece with no summary would lose everything before it).
     */
    const summaryWithin = (summarizers: Arr.NonEmptyReadonlyArray<LanguageModel>, older: ReadonlyArray<ChatMessage>, budget: number | undefined, turn: number) =>
      Effect.gen(function*() {
        // A line is at most half a request, so that a piece has room for the summary before it.
        const lines = summaryLines(older, budget === undefined ? Infinity : Math.floor(budget / 2))
        let summary: Summary = { text: "", model: Arr.headNonEmpty(summarizers).name }
        for (let from = 0; from < lines.length;) {
          const earlier = from === 0 ? undefined : summary.text
          const count = budget === undefined ? lines.length : linesWithin(lines, from, earlier, budget)
          summary = yield* summaryCall(summarizers, summaryRequest(lines.slice(from, from + count), earlier), turn)
          if (summary.text.trim() === "") return summary
          from += count
        }
        return summary
      })

    /**
     * The summary of `older` by `summarizers`, each request within `tokens` (at the hard threshold,
     * leaving room for the answer); a provider that says one is still too long (its window is
     * smaller than Foundry knows, or unknown) is asked again in pieces of half the size, up to three times.
     */
    const summarize = (summarizers: Arr.NonEmptyReadonlyArray<LanguageModel>, older: ReadonlyArray<ChatMessage>, tokens: number | undefined, turn: number) => {
      // Halving a budget larger than the whole request would send the same request again.
      const whole = () => requestCharacters(summaryRequest(summaryLines(older, Infinity), undefined))
      const attempt = (budget: number | undefined, halvings: number): Effect.Effect<Summary, ModelError> =>
        summaryWithin(summarizers, older, budget, turn).pipe(
          Effect.catchIf((error) => halvings > 0 && isContextOverflow(error), () =>
            attempt(Math.floor(Math.min(budget ?? Infinity, whole()) / 2), halvings - 1))
        )
      return attempt(tokens === undefined ? undefined : Math.floor(tokens * config.context.hard * 4), 3)
    }

    /**
     * Summarizes everything before this run's first message (its calls told as turn `turn`'s) and stores the
     * summary standing for it; why nothing was summarized when nothing was.
     */
    const summarizeOlderTurns = (turn: number): Effect.Effect<string | undefined, StoreError | LeaseLost | ModelError> => Effect.gen(function*() {
      yield* context.commit()
      const stored = yield* store.listMessages(run.conversationId)
      const keepFrom = stored.find((m) => m.runId === run.id)?.seq
      const older = keepFrom === undefined ? [] : modelView(stored.filter((m) => m.seq < keepFrom), "", () => "no result")
      if (keepFrom === undefined || older.length === 0) return "nothing comes before this run's message to summarize"
      // A summary model of its own (a cheaper one) goes first; the agent's models stand behind it, so
      // a summary request is sized for the smaller window of the two.
      const summaryModel = config.context.summaryModel === undefined ? undefined : resolver.resolve(config.context.summaryModel).model
      const summarizers: Arr.NonEmptyReadonlyArray<LanguageModel> = summaryModel === undefined ? models : [summaryModel, ...models]
      const windows = [window, summaryModel === undefined ? undefined : contextWindowOf(summaryModel.name, config.context.windows)]
        .flatMap((known) => known === undefined ? [] : [known.tokens])
      const summary = yield* summarize(summarizers, older, windows.length === 0 ? undefined : Math.min(...windows), turn)
      // A summary with no text in it (only tool calls, a refusal) would stand for the older messages
      // with nothing: they stay as they are, and the turn goes as long as it is.
      if (summary.text.trim() === "") {
        yield* Effect.logWarning(`run ${run.id}: the summary model (${summary.model}) gave no summary; the conversation is not compacted`)
        return `the summary model (${summary.model}) gave no summary`
      }
      context.record({ _tag: "summary", content: summary.text, keepFrom })
      return undefined
    })

    /**
     * The `elide-earlier` step: tool results the model has acted on shortened, as few as bring
     * `request` (`tokens`) under the hard threshold; the request, and its tokens now.
     */
    const elideEarlier = (request: ModelRequest, tokens: number, known: ContextWindow, span: string): Sized => {
      step.emit("context.compacting", span, { method: "elide-earlier", beforeTokens: tokens, window: known.tokens })
      const elided = elideEarlierToolResults(request, Math.floor(known.tokens * config.context.hard))
      const after = estimateTokens(elided)
      if (after < tokens) step.emit("context.compacted", span, { method: "elide-earlier", beforeTokens: tokens, afterTokens: after })
      else step.emit("context.uncompacted", span, { method: "elide-earlier", tokens, reason: "no tool result before the last assistant message is long enough to shorten" })
      return { request: elided, tokens: after }
    }

    /**
     * The request of turn `turn` as the context window allows (its steps told on the turn's span);
     * `overflowed` when the provider refused the last one as too long. Fails, before anything is sent, when even compacted it is over the whole window.
     */
    const fitContext = (
      request: ModelRequest,
      turn: number,
      overflowed: boolean
    ): Effect.Effect<ModelRequest, StoreError | LeaseLost | ModelError | ContextTooLong> => {
      // An unknown window is never compacted: nothing to count (a long conversation's every message).
      if (!overflowed && window === undefined) return Effect.succeed(request)
      const before = estimateTokens(request)
      const span = turnSpan(turn)
      // Within the window, as nearly every turn is: the request as it is, without a generator.
      if (!overflowed && window !== undefined && before <= window.tokens * config.context.soft) return Effect.succeed(request)
      return Effect.gen(function*() {
        const windowTokens = window?.tokens ?? null
        step.emit("context.compacting", span, { method: "elide", beforeTokens: before, window: windowTokens })
        const elided: ModelRequest = { ...request, messages: elideOldToolResults(request.messages) }
        const shortened = estimateTokens(elided)
        // Every result it shortens ends shorter: an unchanged count is a step that found nothing to shorten.
        if (shortened < before) step.emit("context.compacted", span, { method: "elide", beforeTokens: before, afterTokens: shortened })
        else step.emit("context.uncompacted", span, { method: "elide", tokens: before, reason: "no tool result before the last two user messages is long enough to shorten" })
        if (!overflowed && window !== undefined && shortened <= window.tokens * config.context.hard) return elided
        // A run that outgrows the window by itself: what it has acted on goes before the older
        // turns are summarized, so a long run does not ask for a summary at every turn.
        const earlier = overflowed || window === undefined ? { request: elided, tokens: shortened } : elideEarlier(elided, shortened, window, span)
        const trimmed = earlier.tokens
        if (!overflowed && window !== undefined && trimmed <= window.tokens * config.context.hard) return earlier.request
        step.emit("context.compacting", span, { method: "summary", beforeTokens: trimmed, window: windowTokens })
        const notSummarized = yield* summarizeOlderTurns(turn)
        const summarized: ModelRequest = { ...request, messages: elideOldToolResults(yield* transcript) }
        const after = estimateTokens(summarized)
        if (notSummarized === undefined) step.emit("context.compacted", span, { method: "summary", beforeTokens: trimmed, afterTokens: after })
        else step.emit("context.uncompacted", span, { method: "summary", tokens: trimmed, reason: notSummarized })
        const compacted = window === undefined || after <= window.tokens * config.context.hard
          ? { request: summarized, tokens: after }
          : elideEarlier(summarized, after, window, span)
        if (window !== undefined && compacted.tokens > window.tokens) return yield* contextTooLong(compacted.request, window, model, agent)
        return compacted.request
      })
    }

    return { admitMessage, transcript, fitContext }
  })
