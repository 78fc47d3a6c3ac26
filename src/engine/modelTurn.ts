/**
 * One model turn: the model's stream folded into text and tool calls, text deltas forwarded as
 * they arrive, transient failures retried with exponential backoff and jitter, and, when an agent
 * names several models, the next one asked once a model's retries are used up.
 */
import { Cause, Duration, Effect, Either, Option, Random, Stream } from "effect"
import type { NonEmptyReadonlyArray } from "effect/Array"
import { type ChatMessage, type LanguageModel, type ModelChunk, ModelError, type ModelRequest, type ToolCall } from "../models/Model.js"
import { estimateTokens, tokensOf } from "./compaction.js"

/** What one model turn produced. */
export interface TurnResult {
  /** The name of the model that produced the turn. */
  readonly model: string
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly inputTokens: number
  readonly outputTokens: number
  /** Of `inputTokens`, those read from the provider's prompt cache (0 when it says none). */
  readonly cachedInputTokens: number
}

/** How transient model failures are retried. */
export interface RetryPolicy {
  readonly times: number
  readonly base: Duration.DurationInput
  readonly max: Duration.DurationInput
  /** How long an attempt may wait for the model's next chunk before it counts as failed. */
  readonly idle: Duration.DurationInput
}

/** What a turn reports while it runs. */
export interface TurnOptions {
  readonly retry: RetryPolicy
  /**
   * Text deltas as they arrive: each streamed one alone, a whole answer's together; `from` is
   * where the first starts in the attempt's text (an attempt asked again starts again at 0).
   */
  readonly onDeltas: (texts: ReadonlyArray<string>, from: number) => Effect.Effect<void>
  /** Called once per retry, as it starts (after its backoff), with the failure being retried. */
  readonly onRetry: (error: ModelError) => Effect.Effect<unknown, unknown>
}

const emptyTurn = (model: LanguageModel): TurnResult => ({ model: model.name, text: "", toolCalls: [], inputTokens: 0, outputTokens: 0, cachedInputTokens: 0 })

/** The wait before retry `index` (from 0): exponential from `base`, jittered by ±20%, at most `max`. */
const backoff = (policy: RetryPolicy, index: number): Effect.Effect<Duration.Duration> =>
  Effect.map(Random.next, (random) => {
    const exponential = Duration.toMillis(Duration.decode(policy.base)) * 2 ** index
    const jittered = exponential * (0.8 + random * 0.4)
    return Duration.millis(Math.min(jittered, Duration.toMillis(Duration.decode(policy.max))))
  })

/** The longest wait a provider's `retry-after` (or reset header, or "try again in") is obeyed for: a turn does not hang on a provider that asks for an hour. */
const maxProviderWait = Duration.seconds(60)

/**
 * The wait a provider asked for (a 429's `retry-after`, its reset header or its message's "try
 * again in 20s", at most a minute), when it is longer than
 * the backoff's `wait`, and the failure as the retry tells it, saying how long it waited and why:
 * retries spent sooner fail the same way, and a run would fail in 3 s on a "try again in 20s".
 */
const providerWait = (error: ModelError, wait: Duration.Duration): { readonly wait: Duration.Duration; readonly told: ModelError } | undefined => {
  if (error.retryAfter === undefined) return undefined
  const requested = Duration.millis(Math.ceil(error.retryAfter))
  const asked = Duration.min(requested, maxProviderWait)
  if (Duration.lessThanOrEqualTo(asked, wait)) return undefined
  const capped = Duration.greaterThan(requested, maxProviderWait)
    ? `; it asked for ${Duration.format(requested)}, Foundry waits at most ${Duration.format(maxProviderWait)}`
    : ""
  return { wait: asked, told: saying(error, `retried after ${Duration.format(asked)}, as the provider's ${error.retryAfterFrom ?? "retry-after"} asked${capped}`) }
}

/** `error` with `note` added to its message, in brackets: how a retry (or its absence) tells the failure. */
const saying = (error: ModelError, note: string): ModelError => {
  const { code, kind, model, retryAfter, retryAfterFrom, status } = error
  return new ModelError({ model, kind, status, code, retryAfter, retryAfterFrom, message: `${error.message} (${note})` })
}

/**
 * Whether the wait a provider asked for is longer than the retries left could wait at most (a 429
 * of a daily limit: "x-ratelimit-reset-requests: 6h"): waiting the most each time would only fail
 * later, and a fallback model could take the turn now.
 */
const beyondRetries = (error: ModelError, retriesLeft: number): boolean =>
  error.retryAfter !== undefined && error.retryAfter > retriesLeft * Duration.toMillis(maxProviderWait)

/** The failure of a turn whose provider asked for a wait beyond its retries, saying so. */
const waitedInVain = (error: ModelError): ModelError => {
  const asked = Duration.format(Duration.millis(Math.ceil(error.retryAfter ?? 0)))
  return saying(
    error,
    `not retried: the provider's ${error.retryAfterFrom ?? "retry-after"} asked for ${asked}, ` +
      `longer than the retries left wait at most, ${Duration.format(maxProviderWait)} each`
  )
}

/**
 * Adds one chunk to the turn so far. The next turn is built field by field: spreading the last
 * one with a field changed (`{ ...acc, text }`) costs V8 twenty times as much.
 */
const addChunk = (acc: TurnResult, chunk: ModelChunk): TurnResult => {
  const { cachedInputTokens, inputTokens, model, outputTokens, text, toolCalls } = acc
  switch (chunk._tag) {
    case "TextDelta":
      return { model, text: text + chunk.text, toolCalls, inputTokens, outputTokens, cachedInputTokens }
    case "ToolCall":
      return { model, text, toolCalls: [...toolCalls, chunk.call], inputTokens, outputTokens, cachedInputTokens }
    case "Usage":
      return { model, text, toolCalls, inputTokens: chunk.inputTokens, outputTokens: chunk.outputTokens, cachedInputTokens: chunk.cachedInputTokens ?? 0 }
  }
}

const hasImages = (message: ChatMessage): boolean => message._tag === "tool" && message.images !== undefined && message.images.length > 0

/**
 * The request as `model` can take it: a model that takes no images is sent none, each result that
 * had some saying so. A conversation holds the images tools showed an earlier model that saw (its
 * agent's model changed since, or the conversation moved on to a fallback that does not see), and
 * a model that takes none refuses the whole request for them: the conversation would be stuck.
 */
const forModel = (model: LanguageModel, request: ModelRequest): ModelRequest => {
  if (model.vision === true || !request.messages.some(hasImages)) return request
  const messages = request.messages.map((message): ChatMessage =>
    message._tag !== "tool" || !hasImages(message)
      ? message
      : {
        _tag: "tool",
        toolCallId: message.toolCallId,
        name: message.name,
        content: `${message.content}\n(the image${message.images?.length === 1 ? "" : "s"} this tool showed ${message.images?.length === 1 ? "is" : "are"} not shown: ${model.name} takes no images)`
      }
  )
  return { ...request, messages }
}

/**
 * The turn's chunks folded into what it produced, text deltas forwarded as they arrive: from the
 * whole answer when the model has it at once, else from its stream.
 */
const foldTurn = (model: LanguageModel, given: ModelRequest, options: TurnOptions): Effect.Effect<TurnResult, ModelError> => {
  const request = forModel(model, given)
  const whole = model.complete?.(request)
  if (whole === undefined) {
    // A model that accepted the request and then says nothing (a hung connection) is a failure to
    // retry, not a run that waits for as long as the HTTP client does. (An in-process model that
    // has its whole answer at once has no connection to hang.)
    const silent = () =>
      new ModelError({ model: model.name, kind: "transient", message: `the model sent nothing for ${Duration.format(Duration.decode(options.retry.idle))} (modelRetry.idle)` })
    const fold = (acc: TurnResult, chunk: ModelChunk): Effect.Effect<TurnResult> =>
      chunk._tag === "TextDelta" ? Effect.as(options.onDeltas([chunk.text], acc.text.length), addChunk(acc, chunk)) : Effect.succeed(addChunk(acc, chunk))
    return Effect.flatMap(
      Stream.runFoldEffect(Stream.timeoutFail(model.stream(request), silent, options.retry.idle), emptyTurn(model), fold),
      (turn) => isEmpty(turn) ? Effect.fail(answeredNothing(model)) : Effect.succeed(counted(turn, request))
    )
  }
  // The whole answer at once: folded in one go, its text deltas then forwarded together.
  return Effect.flatMap(whole, (chunks) => {
    const turn = counted(chunks.reduce(addChunk, emptyTurn(model)), request)
    if (isEmpty(turn)) return Effect.fail(answeredNothing(model))
    const texts = chunks.flatMap((chunk) => chunk._tag === "TextDelta" ? [chunk.text] : [])
    return texts.length === 0 ? Effect.succeed(turn) : Effect.as(options.onDeltas(texts, 0), turn)
  })
}

/**
 * A turn whose provider reported no usage (a compatible server that ignores `stream_options`, a
 * proxy that drops the stream's last chunk) counted by estimate, four characters a token, as
 * compaction counts: counted as nothing, it would pass every token budget and cost nothing. An
 * answer with text or a call has at least one token, so none reported means none was.
 */
const counted = (turn: TurnResult, request: ModelRequest): TurnResult => {
  if (turn.inputTokens > 0 || turn.outputTokens > 0) return turn
  const { model, text, toolCalls } = turn
  const written = toolCalls.reduce((sum, call) => sum + call.name.length + call.arguments.length, text.length)
  return { model, text, toolCalls, inputTokens: estimateTokens(request), outputTokens: tokensOf(written), cachedInputTokens: 0 }
}

/**
 * Nothing at all is no answer (a proxy's page where the API should be, a stream that ended early):
 * a transient failure, so it is asked again, and a run that ends on it fails saying so rather than
 * completing with an empty answer.
 */
const isEmpty = (turn: TurnResult): boolean => turn.toolCalls.length === 0 && turn.text.trim() === ""
const answeredNothing = (model: LanguageModel) =>
  new ModelError({ model: model.name, kind: "transient", message: "the model answered nothing: no text and no tool call" })

/** What an adapter that crashed (a defect in its code, not a failure it reported) is told as. */
const crashed = (model: LanguageModel, defect: unknown) =>
  new ModelError({
    model: model.name,
    kind: "permanent",
    message: `the model adapter crashed: ${defect instanceof Error ? defect.message : String(defect)}`
  })

/**
 * One model turn, text deltas forwarded, transient failures retried after a backoff, up to
 * `retry.times` times. `onRetry` is called as a retry starts, after its backoff, with the failure
 * it retries: a failure that no attempt follows (the last one, or one the turn is interrupted
 * after, e.g. a cancel during the backoff) is no retry, so every report matches a call the model
 * saw. A crash of the adapter is a permanent failure. One handler for all of it: a turn that
 * succeeds (nearly every one) passes through it once.
 */
export const modelTurn = (
  model: LanguageModel,
  request: ModelRequest,
  options: TurnOptions
): Effect.Effect<TurnResult, ModelError> => {
  // Suspended, so that every retry asks the model again, whatever the adapter does eagerly.
  const attempt = Effect.suspend(() => foldTurn(model, request, options))
  const tried = (retries: number): Effect.Effect<TurnResult, ModelError> =>
    Effect.catchAllCause(attempt, (cause) => {
      const failure = Cause.failureOrCause(cause)
      if (Either.isLeft(failure)) return retryAfter(failure.left, retries)
      return Option.match(Cause.dieOption(cause), {
        onNone: () => Effect.failCause(failure.right),
        onSome: (defect) => Effect.fail(crashed(model, defect))
      })
    })
  const retryAfter = (error: ModelError, retries: number): Effect.Effect<TurnResult, ModelError> =>
    error.kind !== "transient" || retries >= options.retry.times
      ? Effect.fail(error)
      : beyondRetries(error, options.retry.times - retries)
      ? Effect.fail(waitedInVain(error))
      : Effect.flatMap(backoff(options.retry, retries), (wait) => {
        const asked = providerWait(error, wait)
        return Effect.sleep(asked?.wait ?? wait).pipe(
          Effect.zipRight(Effect.ignore(options.onRetry(asked === undefined ? error : asked.told))),
          Effect.zipRight(tried(retries + 1))
        )
      })
  return tried(0)
}

/**
 * Whether a failure hands the turn to the next model: one that outlasted its retries, and one the
 * model itself refused (403: no access to it; 404: no such model, as a retired one), which another
 * model may not. The request's own fault (400, 401) would fail on any of them.
 */
const handsOn = (error: ModelError): boolean => error.kind === "transient" || error.status === 403 || error.status === 404

/**
 * One model turn on the first of `models` that answers. A model whose transient failures outlast
 * its retries hands the turn to the next one (`onFallback` says so); a permanent failure is the
 * request's fault, which another model would not fix, so it ends the turn at once.
 */
export const modelTurnWithFallbacks = (
  models: NonEmptyReadonlyArray<LanguageModel>,
  request: ModelRequest,
  options: TurnOptions & {
    readonly onFallback: (from: LanguageModel, to: LanguageModel, error: ModelError) => Effect.Effect<unknown, unknown>
  }
): Effect.Effect<TurnResult, ModelError> => {
  const [first, ...rest] = models
  // One model: nothing to fall back to, so nothing to catch.
  if (rest.length === 0) return modelTurn(first, request, options)
  const attempt = (current: LanguageModel, next: ReadonlyArray<LanguageModel>): Effect.Effect<TurnResult, ModelError> =>
    modelTurn(current, request, options).pipe(
      Effect.catchAll((error) => {
        const [following, ...others] = next
        return following === undefined || !handsOn(error)
          ? Effect.fail(error)
          : Effect.zipRight(Effect.ignore(options.onFallback(current, following, error)), attempt(following, others))
      })
    )
  return attempt(first, rest)
}
