/**
 * The agent loop: model turn, tool calls, results fed back, until a final answer, a suspension
 * (an approval, a child run) or `maxTurns`. The conversation's transcript is the run's journal:
 * every assistant turn and every tool result is committed, with its events, as one step of the
 * run journal before the loop does anything another party could see, so a run picked up again
 * after a crash asks no recorded turn again and runs no recorded tool call again; a call that
 * started but was not recorded runs again (with the same idempotency key).
 */
import { Array as Arr, Cause, Clock, Effect, Option } from "effect"
import type { CompiledAgent, CompiledApp } from "../compiler/CompiledApp.js"
import { type InstanceInfo, modelsOf } from "../definitions/defineAgent.js"
import { type RunRecord, UsageSums } from "../durable/records.js"
import { ApprovalStorage } from "../durable/ApprovalStorage.js"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import { Store } from "../durable/Store.js"
import type { Lease } from "../journal/journalRecords.js"
import type { ChatMessage, ModelRequest, ResolvedModel, ToolCall } from "../models/Model.js"
import { ModelResolver } from "../models/Model.js"
import { transcriptProblem } from "../models/validateTranscript.js"
import { approvalGate } from "./approvalGate.js"
import { budgetMessage, budgetsOf, type Exceeded, hasDailyBudget, instanceOverBudget, runOverBudget } from "./budgets.js"
import { awaitChild, emitFrom, spawnFrom } from "./childRuns.js"
import { closeOpenCalls } from "./closeOpenCalls.js"
import { contextWindowOf, elideOldToolResults, estimateTokens, summaryRequest } from "./compaction.js"
import { decodeCall, failedOutcome, runTool, type ToolOutcome } from "./executeTool.js"
import { runTimerTool } from "./agentTimers.js"
import { askModel } from "./modelStep.js"
import { modelTurnWithFallbacks } from "./modelTurn.js"
import { deniedByRule, matchingRule } from "./permissions.js"
import { redactFields } from "./redact.js"
import { RunStarter } from "./RunStarter.js"
import { makeStepBuffer, type StepBuffer } from "./StepBuffer.js"
import { foreignOpenCalls, type JournalEntry, modelView } from "./transcript.js"

/** How a run's execution ended (a suspended run continues later). */
export type RunOutcome = "completed" | "failed" | "suspended"

/** The agent's instructions; instructions that are a function of the instance read the instance first. */
const systemPrompt = (agent: CompiledAgent, run: RunRecord) =>
  Effect.gen(function*() {
    const instructions = agent.definition.instructions
    let text: string
    if (typeof instructions === "function") {
      // Every way a run is created makes its instance first, so a read is enough (made here only if it went missing).
      const instances = yield* InstanceStorage
      const found = yield* instances.get(run.agent, run.instanceId)
      const instance = Option.isSome(found) ? found.value : yield* instances.ensure(run.agent, run.instanceId)
      const info: InstanceInfo = { id: instance.id, context: instance.context }
      text = instructions({ instance: info })
    } else {
      text = instructions
    }
    return text === "" ? agent.definition.description : text
  })

/** The agent's models, in fallback order, resolved. */
const resolveModels = (agent: CompiledAgent) =>
  Effect.map(ModelResolver, (resolver) =>
    Arr.map(modelsOf(agent.definition), (spec): ResolvedModel => typeof spec === "string" ? resolver.resolve(spec) : { model: spec })
  )

/** What the transcript says comes next for this run. */
type NextStep =
  | { readonly _tag: "ModelTurn" }
  | { readonly _tag: "ToolCalls"; readonly calls: ReadonlyArray<ToolCall> }
  | { readonly _tag: "Final"; readonly text: string }

const nextStep = (messages: ReadonlyArray<ChatMessage>): NextStep => {
  const index = messages.findLastIndex((m) => m._tag === "assistant" || m._tag === "user")
  const last = messages[index]
  if (last === undefined || last._tag !== "assistant") return { _tag: "ModelTurn" }
  if (last.toolCalls.length === 0) return { _tag: "Final", text: last.content }
  const answered = new Set(messages.slice(index + 1).flatMap((m) => m._tag === "tool" ? [m.toolCallId] : []))
  const calls = last.toolCalls.filter((call) => !answered.has(call.id))
  return calls.length === 0 ? { _tag: "ModelTurn" } : { _tag: "ToolCalls", calls }
}

/** Ends the run as failed: its open calls answered, its status and `run.failed` in the step that ends it. */
const failRun = (run: RunRecord, step: StepBuffer, journal: ReadonlyArray<JournalEntry>, error: string) =>
  Effect.gen(function*() {
    const closing = closeOpenCalls(run, journal, `not run: the run failed (${error})`)
    for (const message of closing.messages) step.message(message)
    for (const event of closing.events) step.push(event)
    yield* step.emit("run.failed", "run", { error })
    yield* step.commit({ status: { status: "failed", error }, releaseLease: true })
    return "failed" as const
  })

/** Runs (or resumes) one run of the compiled app; `lease` fences its writes. */
export const runAgent = Effect.fn("engine.runAgent")(function*(app: CompiledApp, run: RunRecord, lease?: Lease) {
  const step = yield* makeStepBuffer(run, lease)
  const journal: Array<JournalEntry> = []
  const agent = app.agents.get(run.agent)
  if (agent === undefined) {
    return yield* failRun(run, step, journal, `agent "${run.agent}" is not in the current build (was its file removed?)`)
  }
  return yield* executeRun(app, agent, run, step, journal).pipe(
    Effect.catchTag("ModelError", (error) => failRun(run, step, journal, `model ${error.model} failed (${error.kind}): ${error.message}`)),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause) || Cause.failureOption(cause).pipe(Option.exists((e) => e._tag === "LeaseLost"))
        ? Effect.failCause(cause)
        : failRun(run, step, journal, `internal error: ${Cause.pretty(cause).split("\n")[0]}`)
    )
  )
})

/** The loop itself, from the run's transcript to its end or suspension. */
const executeRun = (app: CompiledApp, agent: CompiledAgent, run: RunRecord, step: StepBuffer, journal: Array<JournalEntry>) =>
  Effect.gen(function*() {
    const store = yield* Store
    const approvals = yield* ApprovalStorage
    const instances = yield* InstanceStorage
    const starter = yield* RunStarter
    const config = app.table.config
    const resolvedModels = yield* resolveModels(agent)
    const models = Arr.map(resolvedModels, (m) => m.model)
    const resolved = Arr.headNonEmpty(resolvedModels)
    yield* step.emit(run.status === "queued" ? "run.started" : "run.resumed", "run", {
      input: run.input,
      model: resolved.model.name,
      ...(resolved.fallbackFrom === undefined ? {} : { requestedModel: resolved.fallbackFrom })
    })
    const stored = yield* store.listMessages(run.conversationId)
    journal.push(...stored)
    // The run's own messages decide its next step: other runs of the conversation may have
    // added theirs while this one was suspended.
    const mine: Array<ChatMessage> = stored.filter((m) => m.runId === run.id).map((m) => m.message)
    const record = (message: ChatMessage) => {
      step.message(message)
      journal.push({ runId: run.id, message })
      mine.push(message)
    }
    if (mine.length === 0) record({ _tag: "user", content: run.input })
    // The first step of an execution marks the run running, with whatever it does first.
    let status: "running" | undefined = "running"
    const commit = () => Effect.suspend(() => {
      const end = status === undefined ? undefined : { status: { status } }
      status = undefined
      return step.commit(end)
    })

    /** The transcript this run sends, checked against the strictest provider's rules before it goes. */
    const transcript = Effect.gen(function*() {
      const notes = new Map<string, string>()
      for (const { call, runId } of foreignOpenCalls(journal, run.id)) {
        const approval = yield* approvals.find(runId, call.id)
        notes.set(
          call.id,
          Option.isSome(approval) && approval.value.status === "pending"
            ? `no result yet: this call to ${call.name} waits for a person's approval; its result will be added here once it is decided`
            : `no result: this call to ${call.name} was interrupted before it finished`
        )
      }
      const view = modelView(journal, run.id, (call) => notes.get(call.id) ?? `no result for ${call.name}`)
      const problem = transcriptProblem(view)
      if (problem !== undefined) return yield* Effect.dieMessage(`the transcript of run ${run.id} breaks the tool-call rules: ${problem}`)
      return view
    })

    /**
     * The request as the context window allows: unchanged under the soft threshold, old tool
     * results shortened over it, older turns summarized (and the summary stored) over the hard
     * one, or when `overflowed` says the provider refused the last request.
     */
    const fitContext = (request: ModelRequest, span: string, overflowed: boolean) =>
      Effect.gen(function*() {
        const window = contextWindowOf(Arr.headNonEmpty(models).name, config.context.windows, agent.definition.contextWindow)
        const before = estimateTokens(request)
        if (!overflowed && (window === undefined || before <= window * config.context.soft)) return request
        const elided: ModelRequest = { ...request, messages: elideOldToolResults(request.messages) }
        const limit = window === undefined ? before : window * config.context.hard
        if (!overflowed && estimateTokens(elided) <= limit) {
          yield* step.emit("context.compacted", span, { method: "elide", beforeTokens: before, afterTokens: estimateTokens(elided) })
          return elided
        }
        yield* step.emit("context.compacting", span, { method: "summary", beforeTokens: before, window: window ?? null })
        yield* summarizeOlderTurns
        const compacted: ModelRequest = { ...request, messages: elideOldToolResults(yield* transcript) }
        yield* step.emit("context.compacted", span, { method: "summary", beforeTokens: before, afterTokens: estimateTokens(compacted) })
        return compacted
      })

    /** Summarizes everything before this run's first message and stores the summary standing for it. */
    const summarizeOlderTurns = Effect.gen(function*() {
      yield* commit()
      const stored = yield* store.listMessages(run.conversationId)
      const keepFrom = stored.find((m) => m.runId === run.id)?.seq
      if (keepFrom === undefined) return
      const older = modelView(stored.filter((m) => m.seq < keepFrom), "", () => "no result")
      if (older.length === 0) return
      const summary = yield* modelTurnWithFallbacks(models, summaryRequest(older), {
        retry: config.modelRetry,
        onDelta: () => Effect.void,
        onRetry: () => Effect.void,
        onFallback: () => Effect.void
      })
      record({ _tag: "summary", content: summary.text, keepFrom })
    })

    const system = yield* systemPrompt(agent, run)
    const tools = [...agent.tools.values()]
    const toolNames = tools.map((t) => t.name)
    const specs = tools.map((t) => t.spec)
    const redactionOf = (toolName: string): ReadonlySet<string> => new Set(agent.tools.get(toolName)?.definition.redact ?? [])
    /** A tool's input or output as events may show it: its redacted fields replaced. */
    const hide = (toolName: string) => (value: unknown): unknown => redactFields(value, redactionOf(toolName))

    /** Records a call's result for the model and says in an event how it ended. */
    const answer = (call: ToolCall, outcome: ToolOutcome, durationMs: number) => {
      record({ _tag: "tool", toolCallId: call.id, name: call.name, content: outcome.content })
      const shown = hide(call.name)
      const span = `tool:${call.id}`
      return outcome._tag === "Succeeded"
        ? step.emit("tool.call.completed", span, { toolCallId: call.id, tool: call.name, input: shown(outcome.input), output: shown(outcome.output), durationMs })
        : step.emit("tool.call.failed", span, { toolCallId: call.id, tool: call.name, input: shown(outcome.input), error: outcome.error, durationMs })
    }

    const budgets = budgetsOf(agent.definition.budget, config.budget)
    const configFile = app.table.configFile ?? "foundry.config.ts"
    /** Fails the run for going over a budget, after an event that says which and where it is set. */
    const overBudget = (exceeded: Exceeded) =>
      Effect.zipRight(
        step.emit("budget.exceeded", "run", {
          budget: exceeded.budget,
          limit: exceeded.limit,
          used: exceeded.used,
          setIn: exceeded.setIn === "agent" ? agent.file : configFile
        }),
        failRun(run, step, journal, budgetMessage(exceeded, { agentFile: agent.file, configFile, instance: run.instanceId }))
      )
    /** The instance's usage today: its runs started since UTC midnight, this one included. */
    const usedToday = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      store.sumUsage({ agent: run.agent, instanceId: run.instanceId, since: now - (now % 86_400_000) }))
    // The run's totals, kept here as each turn adds to them (the store holds them from earlier executions).
    let totals = new UsageSums({
      runs: 1,
      inputTokens: run.inputTokens,
      outputTokens: run.outputTokens,
      costUsd: run.costUsd,
      unpricedTurns: run.unpricedTurns
    })

    let turn = mine.filter((m) => m._tag === "assistant").length
    let consecutiveFailures = 0

    while (true) {
      const next = nextStep(mine)
      if (next._tag === "Final") {
        yield* step.emit("run.completed", "run", { output: next.text, turns: turn })
        yield* step.commit({ status: { status: "completed", output: next.text }, releaseLease: true })
        return "completed" as const
      }

      if (next._tag === "ToolCalls") {
        for (const call of next.calls) {
          const toolSpan = `tool:${call.id}`
          const decoded = yield* decodeCall(agent.tools.get(call.name), call, toolNames)
          if (decoded._tag === "Left") {
            // Calls that never ran (bad arguments, unknown tool) are answered without a start event.
            yield* answer(call, decoded.left, 0)
            continue
          }
          const rule = matchingRule(config.permissions, run.agent, call.name)
          if (rule?.action === "deny") {
            // Refused by the project's rules: never run, nobody asked, the model told the rule's reason.
            yield* answer(call, failedOutcome(decoded.right.rawInput, deniedByRule(rule)), 0)
            continue
          }
          const { builtin, subagent } = decoded.right.tool
          if (builtin !== undefined) {
            const outcome = yield* runTimerTool(builtin, decoded.right.rawInput, run, config.timers)
            if (outcome._tag === "Succeeded") yield* step.emit("timer.armed", toolSpan, { tool: call.name }, "run")
            yield* answer(call, outcome, 0)
            continue
          }
          if (subagent !== undefined) {
            yield* commit()
            const waited = yield* awaitChild(run, step, call, subagent, decoded.right.input, decoded.right.rawInput, hide(call.name))
            if (waited === "suspended") return "suspended" as const
            yield* answer(call, waited, 0)
            continue
          }
          const gate = yield* approvalGate(run, step, call, decoded.right, rule, config.approvalTimeout, hide(call.name))
          if (gate._tag === "Wait") {
            yield* step.emit("run.suspended", "run", { reason: "approval", approvalId: gate.approvalId, tool: call.name })
            yield* step.commit({ status: { status: "suspended" }, releaseLease: true })
            return "suspended" as const
          }
          if (gate._tag === "Refused") {
            yield* answer(call, failedOutcome(decoded.right.rawInput, gate.reason), 0)
            continue
          }
          const callStarted = yield* Clock.currentTimeMillis
          yield* step.emit("tool.call.started", toolSpan, { toolCallId: call.id, tool: call.name, input: hide(call.name)(decoded.right.rawInput) })
          yield* commit()
          const outcome = yield* runTool(decoded.right, {
            runId: run.id,
            conversationId: run.conversationId,
            instanceId: run.instanceId,
            agent: run.agent,
            toolCallId: call.id,
            spawn: spawnFrom(app, run, starter, call.id),
            emit: (name, payload) => emitFrom(app, run, starter, step, call.id)(name, payload).pipe(Effect.provideService(InstanceStorage, instances))
          }, app.services, { timeout: config.toolTimeout, outputLimit: config.toolOutputLimit })
          yield* answer(call, outcome, (yield* Clock.currentTimeMillis) - callStarted)
          consecutiveFailures = outcome._tag === "Succeeded" ? 0 : consecutiveFailures + 1
          if (consecutiveFailures >= config.maxToolFailures && outcome._tag === "Failed") {
            return yield* failRun(
              run,
              step,
              journal,
              `${consecutiveFailures} tool calls failed in a row (the limit is maxToolFailures: ${config.maxToolFailures}); the last: ${outcome.error}`
            )
          }
        }
        continue
      }

      if (turn >= agent.definition.maxTurns) {
        return yield* failRun(
          run,
          step,
          journal,
          `agent "${agent.id}" used all ${agent.definition.maxTurns} model turns without a final answer; ` +
            `raise maxTurns in ${agent.file} or make its instructions lead to an answer sooner`
        )
      }
      if (hasDailyBudget(budgets)) {
        const exceeded = instanceOverBudget(budgets, yield* usedToday)
        if (exceeded !== undefined) return yield* overBudget(exceeded)
      }
      turn++
      const result = yield* askModel({
        step,
        commit,
        turn,
        models,
        config,
        request: (overflowed) =>
          Effect.flatMap(transcript, (messages) => fitContext({ system, messages, tools: specs }, `turn:${turn}`, overflowed)),
        redactionOf
      })
      record({ _tag: "assistant", content: result.text, toolCalls: result.toolCalls })
      totals = new UsageSums({
        runs: 1,
        inputTokens: totals.inputTokens + result.usage.inputTokens,
        outputTokens: totals.outputTokens + result.usage.outputTokens,
        costUsd: totals.costUsd + (result.usage.costUsd ?? 0),
        unpricedTurns: totals.unpricedTurns + (result.usage.costUsd === null ? 1 : 0)
      })
      const exceeded = runOverBudget(budgets, totals)
      if (exceeded !== undefined) return yield* overBudget(exceeded)
    }
  })
