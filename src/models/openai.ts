/**
 * The OpenAI Chat Completions adapter: one streamed `chat.completions.create` call per turn,
 * translated into `ModelChunk`s, with every SDK failure classified into a `ModelError`.
 */
import { Effect, Option, Stream } from "effect"
import type OpenAI from "openai"
import { classifyError } from "./openAiErrors.js"
import { toOpenAiMessages, toOpenAiTool } from "./openAiRequest.js"
import { type LanguageModel, ModelError, type ModelChunk, type ModelRequest, ToolCall } from "./Model.js"

/** How to reach an OpenAI (or OpenAI-compatible) Chat Completions endpoint. */
export interface OpenAiModelOptions {
  readonly model: string
  readonly apiKey: string
  readonly baseURL?: string | undefined
  /** Whether the model accepts images; by default guessed from its name (gpt-4o, gpt-4.1, gpt-5, o-series). */
  readonly vision?: boolean | undefined
  /**
   * The most tools one request may offer: OpenAI's 128 by default; unchecked by default on a
   * compatible server (`baseURL`), whose limit is its own.
   */
  readonly maxTools?: number | undefined
}

/** OpenAI's models that take image input. */
const visionModels = /^(gpt-4o|gpt-4\.1|gpt-4-turbo|gpt-5|o1|o3|o4)/
/**
 * The o-series models that take none: an image stored in a conversation would make every later
 * request to them a 400.
 */
const blindModels = /^(o1-mini|o1-preview|o3-mini)/

const seesImages = (model: string): boolean => visionModels.test(model) && !blindModels.test(model)

/** The most tools OpenAI takes in one request ("array too long" beyond); compatible servers copy its checks. */
const maxOpenAiTools = 128

/** The SDK, imported by the first turn on an OpenAI model: a project on other models never loads it. */
const loadSdk = () => import("openai").then((module) => module.default)

/**
 * An OpenAI-backed `LanguageModel` named `openai:<model>`. The client never retries on its
 * own (`maxRetries: 0`): retrying transient failures is the engine's job.
 */
export const make = (options: OpenAiModelOptions): LanguageModel => {
  const name = `openai:${options.model}`
  let client: OpenAI | undefined

  const stream = (request: ModelRequest): Stream.Stream<ModelChunk, ModelError> => {
    const tools = request.tools.map(toOpenAiTool)
    const body: OpenAI.ChatCompletionCreateParamsStreaming = {
      model: options.model,
      stream: true,
      stream_options: { include_usage: true },
      messages: toOpenAiMessages(request),
      ...(tools.length > 0 ? { tools } : {})
    }
    return Effect.gen(function*() {
      const sdk = yield* Effect.promise(loadSdk)
      const toModelError = classifyError(name, sdk)
      const openai = client ??= new sdk({ apiKey: options.apiKey, baseURL: options.baseURL, maxRetries: 0 })
      // One controller for the whole request, headers and body: the SDK links it to the fetch.
      const abort = new AbortController()
      const chunks = yield* Effect.tryPromise({
        try: (signal) => {
          signal.addEventListener("abort", () => abort.abort(), { once: true })
          return openai.chat.completions.create(body, { signal: abort.signal })
        },
        catch: toModelError
      })
      // A read of the body cannot be interrupted, and the SDK's iterator is an async generator, so
      // `return()` waits behind a pending `next()`: a stalled server (or one sending only keep-alive
      // comments) would hold an interrupted stream, or one an idle timeout ended, until its next
      // byte. Aborting first makes the pending read end at once, and closes the request.
      const iterator = yield* Effect.acquireRelease(
        Effect.sync(() => chunks[Symbol.asyncIterator]()),
        (iterator) =>
          Effect.promise(async () => {
            abort.abort()
            // Ending a request that was aborted may reject with the abort: nothing left to do then.
            await iterator.return?.().catch(() => undefined)
          })
      )
      return Stream.repeatEffectOption(
        Effect.tryPromise({ try: () => iterator.next(), catch: (error) => Option.some(toModelError(error)) }).pipe(
          Effect.flatMap((result) => result.done === true ? Effect.fail(Option.none()) : Effect.succeed(result.value))
        )
      )
    }).pipe(
      Stream.unwrapScoped,
      // A trailing `None` marks the end of the stream, so tool calls still pending get flushed.
      Stream.map(Option.some),
      Stream.concat(Stream.succeed(Option.none<OpenAI.ChatCompletionChunk>())),
      Stream.mapAccumEffect(nothingYet, (state, next) => {
        const [after, out, stopped] = step(state, next)
        return stopped === undefined
          ? Effect.succeed<readonly [Assembly, ReadonlyArray<ModelChunk>]>([after, out])
          : Effect.fail(new ModelError({ model: name, kind: stopped.kind, message: stopped.message }))
      }),
      Stream.flattenIterables
    )
  }

  const maxTools = options.maxTools ?? (options.baseURL === undefined ? maxOpenAiTools : undefined)
  return { name, vision: options.vision ?? seesImages(options.model), ...(maxTools === undefined ? {} : { maxTools }), stream }
}

// ---------------------------------------------------------------------------------------------
// Response mapping
// ---------------------------------------------------------------------------------------------

/** A tool call being assembled from streamed fragments. */
interface PartialToolCall {
  readonly id: string
  readonly name: string
  readonly arguments: string
}

/**
 * What the stream has given so far: its tool calls in flight, in the order they started, and
 * where each `index` streams now (an index is not a call: Ollama streams every parallel call
 * under index 0, each with its own id); and whether any text came.
 */
interface Assembly {
  readonly calls: ReadonlyArray<PartialToolCall>
  /** The position in `calls` of the call last streamed under each `index`. */
  readonly byIndex: ReadonlyMap<number, number>
  readonly text: boolean
  /** Whether a `finish_reason` came: a stream that ends without one was cut short. */
  readonly finished: boolean
}

const nothingYet: Assembly = { calls: [], byIndex: new Map(), text: false, finished: false }

/**
 * A streamed choice as OpenAI-compatible servers send it, wider than the SDK's type: some send a
 * last chunk with only `finish_reason`, no `delta`. `refusal` is what the model said instead of
 * answering.
 */
interface StreamedChoice {
  readonly delta?: {
    readonly content?: string | null | undefined
    readonly refusal?: string | null | undefined
    readonly tool_calls?: ReadonlyArray<ToolCallFragment> | undefined
  } | null | undefined
  readonly finish_reason?: string | null | undefined
}

/** Why a stream gives no answer, and whether asking again may give one. */
interface Stopped {
  readonly kind: "transient" | "permanent"
  readonly message: string
}

/**
 * A streamed tool call fragment as OpenAI-compatible servers send it, wider than the SDK's type:
 * some leave out the `index` it promises, or send `null` for what they do not repeat.
 */
interface ToolCallFragment {
  readonly index?: number | undefined
  readonly id?: string | null | undefined
  readonly function?: {
    readonly name?: string | null | undefined
    readonly arguments?: string | null | undefined
  } | undefined
}

/**
 * Folds one SDK chunk (or the end-of-stream marker) into the assembly: the chunks to emit, and why
 * the answer is no answer when the provider stopped it short (see `stoppedShort`).
 */
const step = (
  assembly: Assembly,
  next: Option.Option<OpenAI.ChatCompletionChunk>
): readonly [Assembly, ReadonlyArray<ModelChunk>, stopped?: Stopped] => {
  if (Option.isNone(next)) {
    // A proxy or load balancer that cuts a stream may end it cleanly: without a `finish_reason`,
    // what came is part of an answer, not a whole one.
    if (!assembly.finished) return [nothingYet, [], { kind: "transient", message: "the answer's stream ended without a finish_reason: it was cut short" }]
    return [nothingYet, flush(assembly)]
  }
  const chunk = next.value
  const out: Array<ModelChunk> = []
  let state = assembly
  // We never ask for `n > 1`, so the first choice is the only one.
  const choice: StreamedChoice | undefined = chunk.choices[0]
  if (choice !== undefined) {
    const delta = choice.delta ?? {}
    // A refusal is what the model said instead of answering: taken as its text, so that the run
    // ends telling it, rather than asking again for an answer it took as none.
    for (const text of [delta.content, delta.refusal]) {
      if (text !== undefined && text !== null && text.length > 0) {
        out.push({ _tag: "TextDelta", text })
        if (!state.text) state = { calls: state.calls, byIndex: state.byIndex, text: true, finished: state.finished }
      }
    }
    for (const fragment of delta.tool_calls ?? []) state = accumulate(state, fragment)
    // Some servers leave `finish_reason` out of every chunk but the last, rather than send `null`.
    const finish = choice.finish_reason
    if (finish !== null && finish !== undefined) {
      const stopped = stoppedShort(finish, state)
      if (stopped !== undefined) return [state, out, { kind: "permanent", message: stopped }]
      out.push(...flush(state))
      state = { calls: [], byIndex: new Map(), text: state.text, finished: true }
    }
  }
  if (chunk.usage !== undefined && chunk.usage !== null) {
    // OpenAI's prompt cache: these input tokens cost the cached rate (a quarter or a tenth of the input's).
    const cached = chunk.usage.prompt_tokens_details?.cached_tokens
    out.push({
      _tag: "Usage",
      inputTokens: chunk.usage.prompt_tokens,
      outputTokens: chunk.usage.completion_tokens,
      ...(typeof cached === "number" && cached > 0 ? { cachedInputTokens: cached } : {})
    })
  }
  return [state, out]
}

/**
 * Why an answer that finished for `reason` must not complete the run, if it must not: a text
 * answer cut off at the output limit would pass for a whole one, and a filtered answer with no
 * text would be asked again and again as if the model had said nothing by chance. Tool calls are
 * handed over whatever the reason: arguments cut off are the engine's to report to the model.
 */
const stoppedShort = (reason: string, assembly: Assembly): string | undefined => {
  if (assembly.calls.length > 0) return undefined
  if (reason === "length") {
    return "the answer was cut off at the model's output limit (finish_reason \"length\": its maximum output " +
      "tokens, or a full context window). Foundry sets no limit of its own, so raise the provider's or " +
      "server's (e.g. llama-server --n-predict, Ollama num_predict), choose a model with a longer output, or " +
      "ask the agent for shorter answers"
  }
  if (reason === "content_filter" && !assembly.text) {
    return "the provider's content filter stopped the answer before any text (finish_reason \"content_filter\")"
  }
  return undefined
}

/** The position of the call `fragment` continues, or `undefined` when it starts a new one. */
const continues = (pending: Assembly, fragment: ToolCallFragment, id: string): number | undefined => {
  if (fragment.index !== undefined) {
    const at = pending.byIndex.get(fragment.index)
    const current = at === undefined ? undefined : pending.calls[at]
    // A different id under an index already in use is another call (Ollama reuses index 0).
    return current === undefined || (id !== "" && current.id !== "" && id !== current.id) ? undefined : at
  }
  // Without an index, a call is known by its id; a fragment with neither continues the last call.
  if (id !== "") {
    const at = pending.calls.findIndex((call) => call.id === id)
    return at === -1 ? undefined : at
  }
  return pending.calls.length === 0 ? undefined : pending.calls.length - 1
}

/** The id and name arrive in a call's first fragment; its arguments arrive in pieces. */
const accumulate = (pending: Assembly, fragment: ToolCallFragment): Assembly => {
  const id = fragment.id ?? ""
  const name = fragment.function?.name ?? ""
  const piece = fragment.function?.arguments ?? ""
  const at = continues(pending, fragment, id)
  const calls = [...pending.calls]
  const previous = at === undefined ? undefined : calls[at]
  const position = at ?? calls.length
  calls[position] = previous === undefined
    ? { id, name, arguments: piece }
    : {
      id: previous.id === "" ? id : previous.id,
      name: name === "" ? previous.name : name,
      arguments: previous.arguments + piece
    }
  if (fragment.index === undefined) return { calls, byIndex: pending.byIndex, text: pending.text, finished: pending.finished }
  const byIndex = new Map(pending.byIndex)
  byIndex.set(fragment.index, position)
  return { calls, byIndex, text: pending.text, finished: pending.finished }
}

/** The calls in the order they started (for OpenAI, the order of their indexes). */
const flush = (pending: Assembly): ReadonlyArray<ModelChunk> =>
  pending.calls.map((call) => ({ _tag: "ToolCall", call: ToolCall.make(call) }))

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------
