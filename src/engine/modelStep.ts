/**
 * One model turn of a run: `model.turn.started` committed as the model is asked (with whatever
 * the run did before: its start, the last turn's call results), the turn's request fitted
 * to the context window and its images to the project's `images` budget, retries and fallbacks
 * reported as they happen, and the answer's usage and `model.turn.completed` added to the step
 * that records the assistant message.
 */
import { type Array as Arr, Clock, Effect } from "effect"
import type { ConfigDefinition } from "../definitions/defineConfig.js"
import type { LanguageModel, ModelError, ModelRequest, ToolCall } from "../models/Model.js"
import { newId } from "../durable/ids.js"
import type { StoreError } from "../durable/StoreError.js"
import type { TurnUsage } from "../journal/journalRecords.js"
import type { LeaseLost } from "../journal/RunJournal.js"
import { isContextOverflow } from "./compaction.js"
import type { ContextTooLong } from "./ContextTooLong.js"
import { withinImageBudget } from "./imageBudget.js"
import { modelCallReports } from "./modelCallReports.js"
import { modelTurnWithFallbacks } from "./modelTurn.js"
import { redactArguments } from "./redact.js"
import { turnUsage } from "./turnUsage.js"
import type { StepBuffer } from "./StepBuffer.js"

/** What the turn needs from its run. */
export interface ModelStepInput {
  readonly step: StepBuffer
  /** Commits the run's pending step (the first one also marks the run running). */
  readonly commit: () => Effect.Effect<void, StoreError | LeaseLost>
  /** `commit`, without waiting for a step that holds only the run's progress (`StepBuffer.commitSoon`). */
  readonly commitSoon: () => Effect.Effect<void, StoreError | LeaseLost>
  readonly turn: number
  readonly models: Arr.NonEmptyReadonlyArray<LanguageModel>
  readonly config: ConfigDefinition
  /** The request to send; `overflowed` when the provider refused the last one as too long. */
  readonly request: (overflowed: boolean) => Effect.Effect<ModelRequest, StoreError | LeaseLost | ModelError | ContextTooLong>
  readonly redactionOf: (toolName: string) => ReadonlySet<string>
}

/** The answer of one turn. */
export interface ModelStepResult {
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly usage: TurnUsage
  /** When the answer came (ms since the epoch): its calls wait from then. */
  readonly answeredAt: number
}

/**
 * The turn's tool calls, each with an id of its own in the run: a call's id addresses its result
 * and keys its journal entry and idempotency, so an id that is empty or that the run's turns (the
 * messages since the last user message) or this turn already hold is replaced (OpenAI-compatible
 * servers that send none, or `call_0` every turn).
 */
const ownIds = (calls: ReadonlyArray<ToolCall>, request: ModelRequest): ReadonlyArray<ToolCall> => {
  if (calls.length === 0) return calls
  const taken = new Set<string>()
  for (let index = request.messages.length - 1; index >= 0; index--) {
    const message = request.messages[index]
    if (message === undefined || message._tag === "user") break
    if (message._tag === "assistant") for (const call of message.toolCalls) taken.add(call.id)
  }
  return calls.map((call) => {
    const id = call.id === "" || taken.has(call.id) ? newId("call") : call.id
    taken.add(id)
    return id === call.id ? call : { id, name: call.name, arguments: call.arguments }
  })
}

/** Asks the run's models for turn `turn`. */
export const askModel = (input: ModelStepInput) =>
  Effect.gen(function*() {
    const { config, models, step, turn } = input
    const span = `turn:${turn}`
    const started = yield* Clock.currentTimeMillis
    step.emit("model.turn.started", span, { turn, model: models[0].name })
    yield* input.commitSoon()
    const options = {
      retry: config.modelRetry,
      onDeltas: (texts: ReadonlyArray<string>, from: number) => {
        let at = from
        return step.deltas(span, texts.map((text) => {
          const delta = { turn, text, at }
          at += text.length
          return delta
        }))
      },
      ...modelCallReports(step, input.commit, span, turn)
    }
    // The request the answer came for, to give its calls ids of their own (no Effect of its own: every turn passes here).
    let asked: ModelRequest | undefined
    const ask = (given: ModelRequest) => {
      // The oldest images left out past the project's budget, or the provider refuses the whole request.
      const request = withinImageBudget(given, config.images)
      asked = request
      return modelTurnWithFallbacks(models, request, options)
    }
    const answered = yield* input.request(false).pipe(
      Effect.flatMap(ask),
      // Over the provider's window after all: summarize now and ask once more.
      Effect.catchIf((error): error is ModelError => error._tag === "ModelError" && isContextOverflow(error), () =>
        input.request(true).pipe(Effect.flatMap(ask)))
    )
    const result = asked === undefined ? answered : { ...answered, toolCalls: ownIds(answered.toolCalls, asked) }
    const usage = turnUsage(result, config.prices)
    const answeredAt = yield* Clock.currentTimeMillis
    step.usage(usage)
    step.emit("model.turn.completed", span, {
      turn,
      model: result.model,
      text: result.text,
      toolCalls: result.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: redactArguments(c.arguments, input.redactionOf(c.name)) })),
      usage,
      durationMs: answeredAt - started
    })
    const answer: ModelStepResult = { text: result.text, toolCalls: result.toolCalls, usage, answeredAt }
    return answer
  })
