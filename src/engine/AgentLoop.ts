/**
 * The agent loop: model turn, tool calls, results fed back, until a final answer, a suspension
 * (an approval) or `maxTurns`. The conversation's transcript is the run's journal: every
 * assistant turn and every tool result is stored before the loop moves on, so a run picked up
 * again after a crash asks no recorded turn again and runs no recorded tool call again; a call
 * that started but was not recorded runs again (with the same idempotency key).
 */
import { Array as Arr, Cause, Clock, Duration, Effect, Option, Schema } from "effect"
import type { CompiledAgent, CompiledApp } from "../compiler/CompiledApp.js"
import { type AgentDefinition, type InstanceInfo, modelsOf } from "../definitions/defineAgent.js"
import { SpawnFailed } from "../definitions/defineTool.js"
import { newId } from "../durable/ids.js"
import { type ApprovalRecord, finalStatuses, type RunRecord } from "../durable/records.js"
import { type Lease, Store } from "../durable/Store.js"
import { type EventDraft, EventLog } from "../events/EventLog.js"
import {
  type ChatMessage,
  type LanguageModel,
  type ModelError,
  type ModelRequest,
  ModelResolver,
  type ResolvedModel,
  type ToolCall
} from "../models/Model.js"
import { costOf, priceOf } from "../models/prices.js"
import { budgetMessage, budgetsOf, type Exceeded, hasDailyBudget, instanceOverBudget, runOverBudget } from "./budgets.js"
import { closeOpenCalls } from "./closeOpenCalls.js"
import { contextWindowOf, elideOldToolResults, estimateTokens, isContextOverflow, summaryRequest } from "./compaction.js"
import { decodeCall, failedOutcome, needsApproval, runTool, type ToolOutcome } from "./executeTool.js"
import { runTimerTool } from "./agentTimers.js"
import { modelTurnWithFallbacks } from "./modelTurn.js"
import { deniedByRule, matchingRule } from "./permissions.js"
import { transcriptProblem } from "../models/validateTranscript.js"
import { redactArguments, redactFields } from "./redact.js"
import { RunStarter } from "./RunStarter.js"
import { eventOf, spanIdOf, traceOfRun } from "./trace.js"
import { foreignOpenCalls, type JournalEntry, modelView } from "./transcript.js"

/** How a run's execution ended (a suspended run continues later). */
export type RunOutcome = "completed" | "failed" | "suspended"

const systemPrompt = (agent: CompiledAgent, instance: InstanceInfo): string => {
  const instructions = agent.definition.instructions
  const text = typeof instructions === "function" ? instructions({ instance }) : instructions
  return text === "" ? agent.definition.description : text
}

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

/** Runs (or resumes) one run of the compiled app; `lease` fences its writes. */
export const runAgent = Effect.fn("engine.runAgent")(function*(app: CompiledApp, run: RunRecord, lease?: Lease) {
  const store = yield* Store
  const events = yield* EventLog
  const config = app.table.config
  const emit = (type: EventDraft["type"], step: string, data: EventDraft["data"], parentStep?: string) =>
    events.emit(eventOf(run, type, data, step, parentStep))

  const fail = (error: string) =>
    closeOpenCalls(run, `not run: the run failed (${error})`).pipe(
      Effect.zipRight(store.updateRun(run.id, { status: "failed", error })),
      Effect.zipRight(emit("run.failed", "run", { error })),
      Effect.as<RunOutcome>("failed")
    )

  const agent = app.agents.get(run.agent)
  if (agent === undefined) {
    return yield* fail(`agent "${run.agent}" is not in the current build (was its file removed?)`)
  }

  const body = Effect.gen(function*() {
    const resumed = run.status !== "queued"
    yield* store.updateRun(run.id, { status: "running" })
    const resolvedModels = yield* resolveModels(agent)
    const models = Arr.map(resolvedModels, (m) => m.model)
    const resolved = Arr.headNonEmpty(resolvedModels)
    const model = resolved.model
    yield* emit(resumed ? "run.resumed" : "run.started", "run", {
      input: run.input,
      model: model.name,
      ...(resolved.fallbackFrom === undefined ? {} : { requestedModel: resolved.fallbackFrom })
    })
    // Every way a run is created makes its instance first, so a read is enough (made here only if it went missing).
    const found = yield* store.getInstance(run.agent, run.instanceId)
    const instance = Option.isSome(found) ? found.value : yield* store.ensureInstance(run.agent, run.instanceId)
    const stored = yield* store.listMessages(run.conversationId)
    const journal: Array<JournalEntry> = [...stored]
    // The run's own messages decide its next step: other runs of the conversation may have
    // added theirs while this one was suspended.
    const mine: Array<ChatMessage> = stored.filter((m) => m.runId === run.id).map((m) => m.message)
    const record = (message: ChatMessage) =>
      Effect.zipRight(
        store.appendMessage(run.conversationId, run.id, message, lease),
        Effect.sync(() => {
          journal.push({ runId: run.id, message })
          mine.push(message)
        })
      )
    /** The transcript this run sends, checked against the strictest provider's rules before it goes. */
    const transcript = Effect.gen(function*() {
      const notes = new Map<string, string>()
      for (const { call, runId } of foreignOpenCalls(journal, run.id)) {
        const approval = yield* store.findApproval(runId, call.id)
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
    if (!stored.some((m) => m.runId === run.id)) yield* record({ _tag: "user", content: run.input })

    /**
     * The request as the context window allows: unchanged under the soft threshold, old tool
     * results shortened over it, older turns summarized (and the summary stored) over the hard
     * one, or when `overflowed` says the provider refused the last request.
     */
    const fitContext = (request: ModelRequest, step: string, overflowed: boolean) =>
      Effect.gen(function*() {
        const window = contextWindowOf(Arr.headNonEmpty(models).name, config.context.windows, agent.definition.contextWindow)
        const before = estimateTokens(request)
        if (!overflowed && (window === undefined || before <= window * config.context.soft)) return request
        const elided: ModelRequest = { ...request, messages: elideOldToolResults(request.messages) }
        const limit = window === undefined ? before : window * config.context.hard
        if (!overflowed && estimateTokens(elided) <= limit) {
          yield* emit("context.compacted", step, { method: "elide", beforeTokens: before, afterTokens: estimateTokens(elided) })
          return elided
        }
        yield* emit("context.compacting", step, { method: "summary", beforeTokens: before, window: window ?? null })
        yield* summarizeOlderTurns
        const compacted: ModelRequest = { ...request, messages: elideOldToolResults(yield* transcript) }
        yield* emit("context.compacted", step, { method: "summary", beforeTokens: before, afterTokens: estimateTokens(compacted) })
        return compacted
      })

    /** Summarizes everything before this run's first message and stores the summary standing for it. */
    const summarizeOlderTurns = Effect.gen(function*() {
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
      yield* record({ _tag: "summary", content: summary.text, keepFrom })
    })

    const system = systemPrompt(agent, { id: instance.id, context: instance.context })
    const tools = [...agent.tools.values()]
    const toolNames = tools.map((t) => t.name)
    const starter = yield* RunStarter
    const redactionOf = (toolName: string): ReadonlySet<string> => new Set(agent.tools.get(toolName)?.definition.redact ?? [])
    /** A tool's input or output as events may show it: its redacted fields replaced. */
    const hide = (toolName: string, value: unknown): unknown => redactFields(value, redactionOf(toolName))

    /** A tool call's `context.spawn`: a run of another agent, started without waiting, under the call's span. */
    const spawnFrom = (callId: string) => (target: AgentDefinition, message: string, options?: { readonly instance?: string }) => {
      const id = app.table.idOf(target)
      return id === undefined
        ? Effect.fail(new SpawnFailed({ message: "spawn: that agent is not a route of this project" }))
        : starter.start({
          agent: id,
          message,
          instance: options?.instance ?? "default",
          parentRunId: run.id,
          traceId: traceOfRun(run),
          parentSpanId: spanIdOf(run.id, `tool:${callId}`)
        }).pipe(
          Effect.map((child) => ({ runId: child.id })),
          Effect.mapError((error) => new SpawnFailed({ message: `spawn: ${error.message}` }))
        )
    }

    /** A tool call's `context.emit`: the playbooks listening for the event start their runs, under the call's span. */
    const emitFrom = (callId: string) => (name: string, payload: unknown) =>
      Effect.gen(function*() {
        const runs: Array<string> = []
        const parentStep = `tool:${callId}`
        for (const route of app.table.playbooks) {
          const on = route.definition.on
          if (on._tag !== "Event" || on.name !== name) continue
          const step = `emit:${callId}:${route.id}`
          const agentId = app.table.idOf(route.definition.agent) ?? ""
          const decoded = yield* Schema.decodeUnknown(on.schema)(payload).pipe(Effect.either)
          if (decoded._tag === "Left" || !route.definition.when(decoded.right)) {
            yield* emit("playbook.skipped", step, {
              event: name,
              playbook: route.id,
              reason: decoded._tag === "Left" ? "the event does not match its schema" : "when(event) is false"
            }, parentStep)
            continue
          }
          const instanceId = route.definition.instance(decoded.right)
          yield* emit("playbook.matched", step, { event: name, playbook: route.id, agent: agentId, instanceId }, parentStep)
          const provisioned = yield* store.provisionInstance(agentId, instanceId)
          if (provisioned.created) yield* emit("instance.provisioned", step, { playbook: route.id, agent: agentId, instanceId }, parentStep)
          const child = yield* starter.start({
            agent: agentId,
            message: route.definition.message(decoded.right),
            instance: instanceId,
            parentRunId: run.id,
            traceId: traceOfRun(run),
            parentSpanId: spanIdOf(run.id, step)
          })
          runs.push(child.id)
          yield* emit("playbook.dispatched", step, { event: name, playbook: route.id, runId: child.id }, parentStep)
        }
        return { runs }
      }).pipe(Effect.mapError((error) => new SpawnFailed({ message: `emit ${name}: ${error.message}` })))

    /** A subagent call: its child run's answer, or a suspension until the child has ended. */
    const awaitChild = (call: ToolCall, subagent: string, input: unknown, rawInput: unknown) =>
      Effect.gen(function*() {
        const message = typeof input === "object" && input !== null && "message" in input ? String(input.message) : ""
        const existing = yield* store.findChildRun(run.id, call.id)
        let childId: string
        if (Option.isSome(existing)) {
          childId = existing.value.id
        } else {
          const started = yield* starter.start({
            agent: subagent,
            message,
            instance: run.instanceId,
            parentRunId: run.id,
            parentToolCallId: call.id,
            traceId: traceOfRun(run),
            parentSpanId: spanIdOf(run.id, `tool:${call.id}`)
          }).pipe(Effect.either)
          if (started._tag === "Left") return failedOutcome(rawInput, `could not start ${subagent}: ${started.left.message}`)
          yield* emit("tool.call.started", `tool:${call.id}`, {
            toolCallId: call.id,
            tool: call.name,
            input: hide(call.name, rawInput),
            childRunId: started.right.id
          })
          childId = started.right.id
        }
        yield* store.updateRun(run.id, { status: "suspended" })
        yield* emit("run.suspended", "run", { reason: "child", childRunId: childId, tool: call.name })
        // The child may have ended before this run was marked suspended, when nobody could wake it.
        const latest = yield* store.getRun(childId)
        if (Option.isNone(latest) || !finalStatuses.has(latest.value.status)) return "suspended" as const
        yield* store.updateRun(run.id, { status: "running" })
        const ended = latest.value
        const outcome: ToolOutcome = ended.status === "completed"
          ? { _tag: "Succeeded", input: rawInput, output: { runId: ended.id, output: ended.output ?? "" }, content: ended.output ?? "" }
          : failedOutcome(rawInput, `the ${subagent} run ${ended.status}${ended.error === null ? "" : `: ${ended.error}`}`)
        return outcome
      })

    /** Records a call's result for the model and says in an event how it ended. */
    const answer = (call: ToolCall, outcome: ToolOutcome, durationMs: number) =>
      Effect.zipRight(
        record({ _tag: "tool", toolCallId: call.id, name: call.name, content: outcome.content }),
        emit(
          outcome._tag === "Succeeded" ? "tool.call.completed" : "tool.call.failed",
          `tool:${call.id}`,
          outcome._tag === "Succeeded"
            ? { toolCallId: call.id, tool: call.name, input: hide(call.name, outcome.input), output: hide(call.name, outcome.output), durationMs }
            : { toolCallId: call.id, tool: call.name, input: hide(call.name, outcome.input), error: outcome.error, durationMs }
        )
      )

    const budgets = budgetsOf(agent.definition.budget, config.budget)
    const configFile = app.table.configFile ?? "foundry.config.ts"
    /** Fails the run for going over a budget, after an event that says which and where it is set. */
    const overBudget = (exceeded: Exceeded) =>
      Effect.zipRight(
        emit("budget.exceeded", "run", {
          budget: exceeded.budget,
          limit: exceeded.limit,
          used: exceeded.used,
          setIn: exceeded.setIn === "agent" ? agent.file : configFile
        }),
        fail(budgetMessage(exceeded, { agentFile: agent.file, configFile, instance: run.instanceId }))
      )
    /** The instance's usage today: its runs started since UTC midnight, this one included. */
    const usedToday = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      store.sumUsage({ agent: run.agent, instanceId: run.instanceId, since: now - (now % 86_400_000) }))

    let turn = stored.filter((m) => m.runId === run.id && m.message._tag === "assistant").length
    let consecutiveFailures = 0

    while (true) {
      const step = nextStep(mine)
      if (step._tag === "Final") {
        yield* store.updateRun(run.id, { status: "completed", output: step.text })
        yield* emit("run.completed", "run", { output: step.text, turns: turn })
        return "completed" as const
      }

      if (step._tag === "ToolCalls") {
        for (const call of step.calls) {
          const toolSpan = `tool:${call.id}`
          const decoded = yield* decodeCall(agent.tools.get(call.name), call, toolNames)
          let outcome: ToolOutcome
          const rule = matchingRule(config.permissions, run.agent, call.name)
          if (decoded._tag === "Right" && rule?.action === "deny") {
            // Refused by the project's rules: never run, nobody asked, the model told the rule's reason.
            yield* answer(call, failedOutcome(decoded.right.rawInput, deniedByRule(rule)), 0)
            continue
          }
          const subagent = decoded._tag === "Right" ? decoded.right.tool.subagent : undefined
          const builtin = decoded._tag === "Right" ? decoded.right.tool.builtin : undefined
          if (decoded._tag === "Right" && (subagent !== undefined || builtin !== undefined)) {
            if (builtin !== undefined) {
              outcome = yield* runTimerTool(builtin, decoded.right.rawInput, run, config.timers)
              if (outcome._tag === "Succeeded") yield* emit("timer.armed", toolSpan, { tool: call.name }, "run")
            } else {
              const waited = yield* awaitChild(call, subagent ?? "", decoded.right.input, decoded.right.rawInput)
              if (waited === "suspended") return "suspended" as const
              outcome = waited
            }
            yield* answer(call, outcome, 0)
            continue
          }
          if (decoded._tag === "Left") {
            outcome = decoded.left
          } else {
            let refused: ApprovalRecord | undefined
            const asks = rule === undefined ? needsApproval(decoded.right) : rule.action === "ask"
            const approval = asks ? yield* store.findApproval(run.id, call.id) : Option.none()
            const grant = asks && Option.isNone(approval) ? yield* store.findGrant(run.conversationId, call.name) : Option.none()
            if (Option.isSome(grant)) {
              // Approved for this conversation earlier: no one is asked again.
              yield* emit("approval.decided", `approval:${call.id}`, {
                toolCallId: call.id,
                tool: call.name,
                status: "approved",
                grantedBy: grant.value.approvalId
              }, toolSpan)
            } else if (asks) {
              if (Option.isNone(approval) || approval.value.status === "pending") {
                const timeout = Duration.toMillis(Duration.decode(config.approvalTimeout))
                const asked = Option.isSome(approval) ? approval.value : yield* store.createApproval({
                  id: newId("apr"),
                  runId: run.id,
                  toolCallId: call.id,
                  agent: run.agent,
                  tool: call.name,
                  input: decoded.right.rawInput,
                  expiresAt: (yield* Clock.currentTimeMillis) + timeout
                })
                if (Option.isNone(approval)) {
                  yield* emit("approval.requested", `approval:${call.id}`, {
                    approvalId: asked.id,
                    toolCallId: call.id,
                    tool: call.name,
                    input: hide(call.name, decoded.right.rawInput),
                    expiresAt: asked.expiresAt
                  }, toolSpan)
                }
                yield* store.updateRun(run.id, { status: "suspended" })
                yield* emit("run.suspended", "run", { reason: "approval", approvalId: asked.id, tool: call.name })
                return "suspended" as const
              }
              if (approval.value.status !== "approved") refused = approval.value
            }
            if (refused !== undefined) {
              outcome = failedOutcome(
                decoded.right.rawInput,
                refused.status === "expired"
                  ? `the approval for ${call.name} expired before anyone decided; the call was not made`
                  : `a person denied this call to ${call.name}${refused.reason === null ? "" : `: ${refused.reason}`}`
              )
            } else {
              const callStarted = yield* Clock.currentTimeMillis
              yield* emit("tool.call.started", toolSpan, { toolCallId: call.id, tool: call.name, input: hide(call.name, decoded.right.rawInput) })
              outcome = yield* runTool(decoded.right, {
                runId: run.id,
                conversationId: run.conversationId,
                instanceId: run.instanceId,
                agent: run.agent,
                toolCallId: call.id,
                spawn: spawnFrom(call.id),
                emit: emitFrom(call.id)
              }, app.services, { timeout: config.toolTimeout, outputLimit: config.toolOutputLimit })
              yield* answer(call, outcome, (yield* Clock.currentTimeMillis) - callStarted)
              consecutiveFailures = outcome._tag === "Succeeded" ? 0 : consecutiveFailures + 1
              if (consecutiveFailures >= config.maxToolFailures && outcome._tag === "Failed") {
                return yield* fail(
                  `${consecutiveFailures} tool calls failed in a row (the limit is maxToolFailures: ${config.maxToolFailures}); the last: ${outcome.error}`
                )
              }
              continue
            }
          }
          // Calls that never ran (bad arguments, unknown tool, refused) are answered without a start event.
          yield* answer(call, outcome, 0)
        }
        continue
      }

      if (turn >= agent.definition.maxTurns) {
        return yield* fail(
          `agent "${agent.id}" used all ${agent.definition.maxTurns} model turns without a final answer; ` +
            `raise maxTurns in ${agent.file} or make its instructions lead to an answer sooner`
        )
      }
      if (hasDailyBudget(budgets)) {
        const exceeded = instanceOverBudget(budgets, yield* usedToday)
        if (exceeded !== undefined) return yield* overBudget(exceeded)
      }
      turn++
      const turnSpan = `turn:${turn}`
      const started = yield* Clock.currentTimeMillis
      yield* emit("model.turn.started", turnSpan, { turn, model: model.name })
      const turnOptions = {
        retry: config.modelRetry,
        onDelta: (text: string) => emit("model.delta", turnSpan, { turn, text }),
        onRetry: (error: ModelError) =>
          emit("model.retry", turnSpan, { turn, model: error.model, status: error.status ?? null, error: error.message }),
        onFallback: (from: LanguageModel, to: LanguageModel, error: ModelError) =>
          emit("model.fallback", turnSpan, { turn, from: from.name, to: to.name, status: error.status ?? null, error: error.message })
      }
      const specs = tools.map((t) => t.spec)
      const result = yield* fitContext({ system, messages: yield* transcript, tools: specs }, turnSpan, false).pipe(
        Effect.flatMap((request) => modelTurnWithFallbacks(models, request, turnOptions)),
        // Over the provider's window after all: summarize now and ask once more.
        Effect.catchIf(isContextOverflow, () =>
          transcript.pipe(
            Effect.flatMap((messages) => fitContext({ system, messages, tools: specs }, turnSpan, true)),
            Effect.flatMap((request) => modelTurnWithFallbacks(models, request, turnOptions))
          ))
      )
      yield* record({ _tag: "assistant", content: result.text, toolCalls: result.toolCalls })
      const price = priceOf(result.model, config.prices)
      const costUsd = price === undefined ? null : costOf(result, price)
      const totals = yield* store.addRunUsage(run.id, { inputTokens: result.inputTokens, outputTokens: result.outputTokens, costUsd })
      yield* emit("model.turn.completed", turnSpan, {
        turn,
        model: result.model,
        text: result.text,
        toolCalls: result.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: redactArguments(c.arguments, redactionOf(c.name)) })),
        usage: { inputTokens: result.inputTokens, outputTokens: result.outputTokens, costUsd },
        durationMs: (yield* Clock.currentTimeMillis) - started
      })
      const exceeded = runOverBudget(budgets, totals)
      if (exceeded !== undefined) return yield* overBudget(exceeded)
    }
  })

  return yield* body.pipe(
    Effect.catchTag("ModelError", (error) => fail(`model ${error.model} failed (${error.kind}): ${error.message}`)),
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause) || Cause.failureOption(cause).pipe(Option.exists((e) => e._tag === "LeaseLost"))
        ? Effect.failCause(cause)
        : fail(`internal error: ${Cause.pretty(cause).split("\n")[0]}`)
    )
  )
})
