/**
 * The scripted model, for tests and benchmarks: each model turn of a run is the next entry of a
 * script. The turn's index is the number of assistant messages since the run's user message, so
 * concurrent runs on one scripted model each walk the script from the start.
 */
import { Duration, Effect, Stream } from "effect"
import { type ChatMessage, type LanguageModel, ModelError, type ModelChunk, type ModelRequest } from "./Model.js"

/** One scripted model turn. */
export type Turn =
  | {
    readonly text?: string
    /** Tool calls; `arguments` is JSON-encoded, `rawArguments` is sent as it is (e.g. broken JSON). */
    readonly toolCalls?: ReadonlyArray<
      { readonly name: string; readonly arguments: unknown } | { readonly name: string; readonly rawArguments: string }
    >
    readonly delay?: Duration.DurationInput
    /** A pause between text deltas, to watch a reply stream. */
    readonly chunkDelay?: Duration.DurationInput
  }
  | {
    readonly error: { readonly kind: "transient" | "permanent"; readonly status?: number; readonly message: string }
  }

/** A script: a list of turns, or a function of the request and the turn's index within the run. */
export type Script = ReadonlyArray<Turn> | ((request: ModelRequest, index: number) => Turn)

/** The index of the turn a request asks for: assistant messages since the last user message. */
export const turnIndex = (messages: ReadonlyArray<ChatMessage>): number => {
  let index = 0
  for (let i = messages.length - 1; i >= 0; i--) {
    const message = messages[i]
    if (message === undefined || message._tag === "user") break
    if (message._tag === "assistant") index++
  }
  return index
}

/** One scripted turn as chunks, with its pacing. */
type Planned =
  | { readonly _tag: "Fail"; readonly error: ModelError }
  | {
    readonly _tag: "Answer"
    readonly chunks: ReadonlyArray<ModelChunk>
    readonly delay: Duration.DurationInput | undefined
    readonly chunkDelay: Duration.DurationInput | undefined
  }

/**
 * A scripted model named `scripted:<name>`. A run that outlives its script gets a permanent error.
 * `vision` says it accepts images (so agents with an environment are offered `view_image`, and MCP
 * tools' images are shown).
 */
export const make = (script: Script, name = "script", options: { readonly vision?: boolean } = {}): LanguageModel => {
  const model = `scripted:${name}`
  // A script function is asked once per request, even when `complete` declines a paced turn and
  // the engine then streams it.
  const planned = new WeakMap<ModelRequest, Planned>()
  const plan = (request: ModelRequest): Planned => {
    const known = planned.get(request)
    // Kept only from a declining `complete` to its `stream`: a retry asks the script again.
    if (known !== undefined) {
      planned.delete(request)
      return known
    }
    const index = turnIndex(request.messages)
    const turn = typeof script === "function" ? script(request, index) : script[index]
    const result: Planned = turn === undefined
      ? { _tag: "Fail", error: new ModelError({ model, kind: "permanent", message: `the script has no turn ${index + 1}` }) }
      : "error" in turn
      ? { _tag: "Fail", error: new ModelError({ model, ...turn.error }) }
      : {
        _tag: "Answer",
        chunks: [
          ...splitText(turn.text ?? "").map((text): ModelChunk => ({ _tag: "TextDelta", text })),
          ...(turn.toolCalls ?? []).map((call, i): ModelChunk => ({
            _tag: "ToolCall",
            call: {
              id: `call_${index + 1}_${i + 1}`,
              name: call.name,
              arguments: "rawArguments" in call ? call.rawArguments : JSON.stringify(call.arguments)
            }
          })),
          { _tag: "Usage", inputTokens: 10, outputTokens: 5 }
        ],
        delay: turn.delay,
        chunkDelay: turn.chunkDelay
      }
    return result
  }
  return {
    name: model,
    vision: options.vision === true,
    stream: (request) => {
      const turn = plan(request)
      if (turn._tag === "Fail") return Stream.fail(turn.error)
      const paced = turn.chunkDelay
      const stream = paced === undefined
        ? Stream.fromIterable(turn.chunks)
        : Stream.fromIterable(turn.chunks).pipe(Stream.tap(() => Effect.sleep(paced)))
      return turn.delay === undefined ? stream : Stream.concat(Stream.fromEffect(Effect.sleep(turn.delay)).pipe(Stream.drain), stream)
    },
    // A paced turn is streamed, so that a reader can watch its deltas arrive.
    complete: (request) => {
      const turn = plan(request)
      if (turn._tag === "Fail") return Effect.fail(turn.error)
      if (turn.chunkDelay !== undefined) {
        planned.set(request, turn)
        return undefined
      }
      return turn.delay === undefined ? Effect.succeed(turn.chunks) : Effect.as(Effect.sleep(turn.delay), turn.chunks)
    }
  }
}

/** Text streamed as a few deltas, the way real models do. */
export const splitText = (text: string): ReadonlyArray<string> => text.match(/\S+\s*|\s+/g) ?? []
