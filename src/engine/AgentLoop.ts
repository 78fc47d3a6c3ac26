/**
 * The agent loop: model turn, tool calls, results fed back, until a final answer or `maxTurns`.
 * Every assistant turn and tool result is stored as a message before the loop moves on, so a run
 * picked up again after a restart continues from its transcript.
 */
import { Cause, Clock, Duration, Effect, Schedule, Stream } from "effect"
import type { CompiledAgent, CompiledApp } from "../compiler/CompiledApp.js"
import type { InstanceInfo } from "../definitions/defineAgent.js"
import type { RunRecord } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import { type EventDraft, EventLog } from "../events/EventLog.js"
import { type ChatMessage, type LanguageModel, ModelError, ModelResolver, type ToolCall } from "../models/Model.js"
import { executeTool } from "./executeTool.js"
import { spanIdOf, traceIdOf } from "./trace.js"

/** What one model turn produced. */
interface TurnResult {
  readonly text: string
  readonly toolCalls: ReadonlyArray<ToolCall>
  readonly inputTokens: number
  readonly outputTokens: number
}

const systemPrompt = (agent: CompiledAgent, instance: InstanceInfo): string => {
  const instructions = agent.definition.instructions
  const text = typeof instructions === "function" ? instructions({ instance }) : instructions
  return text === "" ? agent.definition.description : text
}

const modelOf = (agent: CompiledAgent) =>
  Effect.map(ModelResolver, (resolver) => {
    const spec = agent.definition.model
    return typeof spec === "string" ? resolver.resolve(spec) : { model: spec }
  })

// Transient model failures (429, 5xx, network) are retried a few times with jittered backoff.
const transientRetry = Schedule.exponential(Duration.millis(200)).pipe(
  Schedule.jittered,
  Schedule.intersect(Schedule.recurs(3))
)

/** Runs one queued run of the compiled app to its end and records the outcome. */
export const runAgent = Effect.fn("engine.runAgent")(function*(app: CompiledApp, run: RunRecord) {
  const store = yield* Store
  const events = yield* EventLog
  const traceId = traceIdOf(run.id)
  const rootSpan = spanIdOf(run.id, "run")
  const emit = (type: EventDraft["type"], spanId: string, data: EventDraft["data"]) =>
    events.emit({
      type,
      traceId,
      spanId,
      parentSpanId: spanId === rootSpan ? null : rootSpan,
      runId: run.id,
      conversationId: run.conversationId,
      instanceId: run.instanceId,
      agent: run.agent,
      data
    })

  const fail = (error: string) =>
    Effect.zipRight(store.updateRun(run.id, { status: "failed", error }), emit("run.failed", rootSpan, { error }))

  const agent = app.agents.get(run.agent)
  if (agent === undefined) {
    return yield* fail(`agent "${run.agent}" is not in the current build (was its file removed?)`)
  }

  const body = Effect.gen(function*() {
    yield* store.updateRun(run.id, { status: "running" })
    const resolved = yield* modelOf(agent)
    const model = resolved.model
    yield* emit("run.started", rootSpan, {
      input: run.input,
      model: model.name,
      ...(resolved.fallbackFrom === undefined ? {} : { requestedModel: resolved.fallbackFrom })
    })
    const instance = yield* store.ensureInstance(run.agent, run.instanceId)
    const stored = yield* store.listMessages(run.conversationId)
    const messages: Array<ChatMessage> = stored.map((m) => m.message)
    if (!stored.some((m) => m.runId === run.id)) {
      const user: ChatMessage = { _tag: "user", content: run.input }
      yield* store.appendMessage(run.conversationId, run.id, user)
      messages.push(user)
    }
    const system = systemPrompt(agent, { id: instance.id, context: instance.context })
    const tools = [...agent.tools.values()]
    const turnsTaken = stored.filter((m) => m.runId === run.id && m.message._tag === "assistant").length

    for (let turn = turnsTaken + 1; turn <= agent.definition.maxTurns; turn++) {
      const turnSpan = spanIdOf(run.id, `turn:${turn}`)
      const started = yield* Clock.currentTimeMillis
      yield* emit("model.turn.started", turnSpan, { turn, model: model.name })
      const result = yield* modelTurn(model, { system, messages, tools: tools.map((t) => t.spec) }, (text) =>
        emit("model.delta", turnSpan, { turn, text }))
      const assistant: ChatMessage = { _tag: "assistant", content: result.text, toolCalls: result.toolCalls }
      yield* store.appendMessage(run.conversationId, run.id, assistant)
      messages.push(assistant)
      const finished = yield* Clock.currentTimeMillis
      yield* emit("model.turn.completed", turnSpan, {
        turn,
        model: model.name,
        text: result.text,
        toolCalls: result.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
        usage: { inputTokens: result.inputTokens, outputTokens: result.outputTokens },
        durationMs: finished - started
      })

      if (result.toolCalls.length === 0) {
        yield* store.updateRun(run.id, { status: "completed", output: result.text })
        yield* emit("run.completed", rootSpan, { output: result.text, turns: turn })
        return
      }

      for (const call of result.toolCalls) {
        const toolSpan = spanIdOf(run.id, `tool:${call.id}`)
        const tool = agent.tools.get(call.name)
        const callStarted = yield* Clock.currentTimeMillis
        yield* emit("tool.call.started", toolSpan, { toolCallId: call.id, tool: call.name, arguments: call.arguments })
        const outcome = yield* executeTool(tool, call, tools.map((t) => t.name), {
          runId: run.id,
          conversationId: run.conversationId,
          instanceId: run.instanceId,
          agent: run.agent,
          toolCallId: call.id
        }, app.services)
        const toolMessage: ChatMessage = { _tag: "tool", toolCallId: call.id, name: call.name, content: outcome.content }
        yield* store.appendMessage(run.conversationId, run.id, toolMessage)
        messages.push(toolMessage)
        const durationMs = (yield* Clock.currentTimeMillis) - callStarted
        yield* outcome._tag === "Succeeded"
          ? emit("tool.call.completed", toolSpan, {
            toolCallId: call.id,
            tool: call.name,
            input: outcome.input,
            output: outcome.output,
            durationMs
          })
          : emit("tool.call.failed", toolSpan, {
            toolCallId: call.id,
            tool: call.name,
            input: outcome.input,
            error: outcome.error,
            durationMs
          })
      }
    }
    yield* fail(
      `agent "${agent.id}" used all ${agent.definition.maxTurns} model turns without a final answer; ` +
        `raise maxTurns in ${agent.file} or make its instructions lead to an answer sooner`
    )
  })

  yield* body.pipe(
    Effect.catchTag("ModelError", (error) => fail(`model ${error.model} failed (${error.kind}): ${error.message}`)),
    Effect.onInterrupt(() => store.updateRun(run.id, { status: "cancelled" }).pipe(Effect.ignore)),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause) ? Effect.failCause(cause) : fail(`internal error: ${Cause.pretty(cause).split("\n")[0]}`)
    )
  )
})

const emptyTurn: TurnResult = { text: "", toolCalls: [], inputTokens: 0, outputTokens: 0 }

/** Streams one model turn, forwarding text deltas, and collects what it produced. */
const modelTurn = (
  model: LanguageModel,
  request: Parameters<LanguageModel["stream"]>[0],
  onDelta: (text: string) => Effect.Effect<unknown, unknown>
): Effect.Effect<TurnResult, ModelError> =>
  model.stream(request).pipe(
    Stream.runFoldEffect(
      emptyTurn,
      (acc, chunk): Effect.Effect<TurnResult> => {
        switch (chunk._tag) {
          case "TextDelta":
            return Effect.as(Effect.ignore(onDelta(chunk.text)), { ...acc, text: acc.text + chunk.text })
          case "ToolCall":
            return Effect.succeed({ ...acc, toolCalls: [...acc.toolCalls, chunk.call] })
          case "Usage":
            return Effect.succeed({ ...acc, inputTokens: chunk.inputTokens, outputTokens: chunk.outputTokens })
        }
      }
    ),
    Effect.retry({ schedule: transientRetry, while: (error) => error.kind === "transient" }),
    Effect.catchAllDefect((defect) =>
      Effect.fail(
        new ModelError({
          model: model.name,
          kind: "permanent",
          message: `the model adapter crashed: ${defect instanceof Error ? defect.message : String(defect)}`
        })
      )
    )
  )

