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

/** A scripted model named `scripted:<name>`. A run that outlives its script gets a permanent error. */
export const make = (script: Script, name = "script"): LanguageModel => ({
  name: `scripted:${name}`,
  stream: (request) => {
    const index = turnIndex(request.messages)
    const turn = typeof script === "function" ? script(request, index) : script[index]
    if (turn === undefined) {
      return Stream.fail(
        new ModelError({ model: `scripted:${name}`, kind: "permanent", message: `the script has no turn ${index + 1}` })
      )
    }
    if ("error" in turn) return Stream.fail(new ModelError({ model: `scripted:${name}`, ...turn.error }))
    const chunks: Array<ModelChunk> = [
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
    ]
    const paced = turn.chunkDelay
    const stream = paced === undefined
      ? Stream.fromIterable(chunks)
      : Stream.fromIterable(chunks).pipe(Stream.tap(() => Effect.sleep(paced)))
    return turn.delay === undefined ? stream : Stream.concat(Stream.fromEffect(Effect.sleep(turn.delay)).pipe(Stream.drain), stream)
  }
})

/** Text streamed as a few deltas, the way real models do. */
export const splitText = (text: string): ReadonlyArray<string> => text.match(/\S+\s*|\s+/g) ?? []
