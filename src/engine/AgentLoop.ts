/**
 * The agent loop: model turn, tool calls, results fed back, until a final answer, a suspension
 * (an approval, a child run) or `maxTurns`. The conversation's transcript is the run's journal:
 * every assistant turn and every tool result is committed, with its events, as one step of the
 * run journal before the loop does anything another party could see, so a run picked up again
 * after a crash asks no recorded turn again and runs no recorded tool call again; a call that
 * started but was not recorded runs again (with the same idempotency key).
 */
import { Array as Arr, Cause, Effect, Either, Option } from "effect"
import { type CompiledAgent, type CompiledApp, type CompiledTool, leftOutAgent } from "../compiler/CompiledApp.js"
import { type InstanceInfo, isContext } from "../definitions/defineAgent.js"
import type { RunRecord } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import type { Lease } from "../journal/journalRecords.js"
import { agentTools } from "../mcp/mcpTools.js"
import { overToolLimit } from "./toolLimit.js"
import type { ChatMessage, LanguageModel, ToolCall, ToolSpec } from "../models/Model.js"
import { ModelResolver } from "../models/Model.js"
import { makeBudgetCheck } from "./budgetCheck.js"
import { agentWindow, resolveModels } from "./agentModels.js"
import { failRun, type RunOutcome } from "./failRun.js"
import { askModel } from "./modelStep.js"
import { makeRunContext, redactionOf, type RunContext } from "./RunContext.js"
import { decodeContext, InstanceContextInvalid, makeRunInstance, type RunInstance } from "./RunInstance.js"
import { makeRunTranscript } from "./runTranscript.js"
import { makeStepBuffer, type StepBuffer } from "./StepBuffer.js"
import { outlastStoreOutages } from "./storeOutage.js"
import { toolCallStep } from "./toolCallStep.js"
import type { JournalEntry } from "./transcript.js"
import { entrySpan } from "./entrySpan.js"
import { waitForBuild } from "./waitForBuild.js"

/**
 * The agent's instructions; instructions that are a function of the instance read it first, its
 * context decoded by the agent's `context` schema when it declares one.
 */
const systemPrompt = (agent: CompiledAgent, run: RunRecord, instance: RunInstance) =>
  Effect.gen(function*() {
    const instructions = agent.definition.instructions
    let text: string
    if (typeof instructions === "function") {
      const stored = yield* instance.context
      const schema = agent.definition.context
      const decoded = schema === undefined ? Either.right(stored) : decodeContext(schema, stored, run)
      if (Either.isLeft(decoded)) {
        return yield* new InstanceContextInvalid({
          message: `the context of instance "${run.instanceId}" does not match the context schema of agent "${agent.id}" (${agent.file}):\n${decoded.left}`
        })
      }
      if (!isContext(decoded.right)) {
        return yield* new InstanceContextInvalid({ message: `the context schema of agent "${agent.id}" (${agent.file}) must describe an object` })
      }
      const info: InstanceInfo = { id: instance.id, context: decoded.right }
      try {
        const made: unknown = instructions({ instance: info })
        if (typeof made !== "string") {
          return yield* new InstanceContextInvalid({
            message: `the instructions of agent "${agent.id}" (${agent.file}) returned ${made instanceof Promise ? "a Promise" : made === null ? "null" : typeof made}, not a string: ` +
              "instructions({ instance }) must return the text itself (not async)"
          })
        }
        text = made
      } catch (error) {
        return yield* new InstanceContextInvalid({
          message: `the instructions of agent "${agent.id}" (${agent.file}) threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}: fix instructions({ instance })`
        })
      }
    } else {
      text = instructions
    }
    return text === "" ? agent.definition.description : text
  })

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

/**
 * The execution a run's stored status calls for: none when it has ended (a step the store took
 * after all, only its answer lost); a suspended run is executed again, as when it is woken, so
 * that a wait it was about to check (a child that ended meanwhile) is checked.
 */
const endedAs = (status: RunRecord["status"]): RunOutcome | undefined =>
  status === "completed" ? "completed" : status === "failed" || status === "cancelled" ? "failed" : undefined

/** Runs (or resumes) one run of the compiled app; `lease` fences its writes. */
export const runAgent = Effect.fnUntraced(function*(app: CompiledApp, run: RunRecord, lease?: Lease) {
  const store = yield* Store
  let written = 0
  const stepOf = (of: RunRecord) => makeStepBuffer(of, lease, () => written++)
  let current = { run, step: yield* stepOf(run), journal: new Array<JournalEntry>() }
  const fail = (error: string) => Effect.suspend(() => failRun(current.run, current.step, current.journal, error))
  const agent = app.agents.get(run.agent)
  if (agent === undefined) {
    const leftOut = leftOutAgent(app, run.agent)
    if (leftOut !== undefined) return yield* waitForBuild(current.step, leftOut)
    return yield* fail(`agent "${run.agent}" is not in the current build (was its file removed?)`)
  }
  // After a step the store did not take: the run as stored, and a step buffer that holds nothing of the lost step.
  const reread = Effect.gen(function*() {
    yield* current.step.abandon
    const stored = Option.getOrElse(yield* store.getRun(run.id), () => current.run)
    current = { run: stored, step: yield* stepOf(stored), journal: [] }
    return endedAs(stored.status)
  })
  let attempts = 0
  const executeNow = Effect.suspend(() => executeRun(app, agent, current.run, current.step, current.journal))
  const execute = Effect.suspend(() =>
    attempts++ === 0 ? executeNow : Effect.flatMap(reread, (ended) => ended === undefined ? executeNow : Effect.succeed(ended))
  )
  // Failed by a step of its own, which outlasts a store outage as the run's other steps do.
  const attempt = execute.pipe(
    Effect.catchTag("ModelError", (error) => fail(`model ${error.model} failed (${error.kind}): ${error.message}`)),
    Effect.catchTag("ContextTooLong", (error) => fail(error.message)),
    Effect.catchTag("McpServerUnavailable", (error) => fail(error.message)),
    Effect.catchTag("InstanceContextInvalid", (error) => fail(error.message))
  )
  return yield* outlastStoreOutages({
    runId: run.id,
    attempt,
    written: () => written,
    // Failed with the transcript as stored: the lost step's calls were never asked for.
    giveUp: (error) =>
      Effect.gen(function*() {
        const ended = yield* reread
        if (ended !== undefined) return ended
        // Waiting to be woken (an approval, a child) is not the store's to end.
        if (current.run.status === "suspended") return "suspended" as const
        current.journal.push(...(yield* store.listMessages(current.run.conversationId)))
        return yield* fail(`the store did not take the run's steps for a minute: ${error.message}`)
      })
  }).pipe(
    Effect.catchAllCause((cause) =>
      Cause.isInterruptedOnly(cause) || Cause.failureOption(cause).pipe(Option.exists((e) => e._tag === "LeaseLost"))
        ? Effect.failCause(cause)
        // The run says what failed; the log has where (the stack), for the developer.
        : Effect.zipRight(Effect.logError(`run ${current.run.id} failed on an internal error`, cause), fail(`internal error: ${Cause.pretty(cause).split("\n")[0]}`))
    ),
    // Stopped (or ended any other way but its own last step): whoever stopped the run reads its
    // transcript with the step it handed on. Nothing is handed on after a run's last step.
    Effect.ensuring(Effect.suspend(() => current.step.settle))
  )
}, entrySpan("engine.runAgent"))

type RunTranscript = Effect.Effect.Success<ReturnType<typeof makeRunTranscript>>

/** What the turns of an execution need beside its context (agent, run, step, journal), made once as it starts. */
interface Execution {
  readonly context: RunContext
  readonly models: Arr.NonEmptyReadonlyArray<LanguageModel>
  readonly system: string
  /** The messages this run sends, and a request fitted to the model's context window. */
  readonly transcript: RunTranscript["transcript"]
  readonly fitContext: RunTranscript["fitContext"]
  readonly budget: Effect.Effect.Success<ReturnType<typeof makeBudgetCheck>>
}

/**
 * The loop itself, from the run's transcript to its end or suspension. Its parts are generators
 * this one delegates to: as Effects of their own they cost a run 16 Effect operations more.
 */
const executeRun = (app: CompiledApp, agent: CompiledAgent, run: RunRecord, step: StepBuffer, journal: Array<JournalEntry>) =>
  Effect.gen(function*() {
    return yield* runTurns(yield* startExecution(app, agent, run, step, journal))
  })

/**
 * An execution begun: the conversation's stored messages read, `run.started` (or `run.resumed`) in
 * its first step, and the run's instance, transcript, instructions and budgets made.
 */
function* startExecution(app: CompiledApp, agent: CompiledAgent, run: RunRecord, step: StepBuffer, journal: Array<JournalEntry>) {
  const store = yield* Store
  const resolvedModels = resolveModels(yield* ModelResolver, agent)
  const models = Arr.map(resolvedModels, (m) => m.model)
  const resolved = Arr.headNonEmpty(resolvedModels)
  journal.push(...(yield* store.listMessages(run.conversationId)))
  // A run starts with its first step, which stores its message: one without any has not started,
  // though it may have been suspended (waiting for a build with its agent) before it ever ran.
  const started = journal.some((entry) => entry.runId === run.id)
  step.emit(started ? "run.resumed" : "run.started", "run", {
    input: run.input,
    model: resolved.model.name,
    ...(resolved.fallbackFrom === undefined ? {} : { requestedModel: resolved.fallbackFrom })
  })
  // The run's own messages decide its next step: other runs of the conversation may have
  // added theirs while this one was suspended.
  const instance = yield* makeRunInstance(app, agent, run)
  // Said on the run, not only in the log: whoever reads why the model never called a tool it was sold finds it here.
  for (const skipped of instance.skipped) step.emit("installation.skipped", "run", skipped)
  const seesImages = models.every((model) => model.vision === true)
  const window = agentWindow(app, agent, resolved.model)
  const context = makeRunContext(app, agent, run, instance, seesImages, window, step, journal)
  const budget = yield* makeBudgetCheck(context, models.map((model) => model.name))
  const { admitMessage, fitContext, transcript } = yield* makeRunTranscript(context, models, budget.spent)
  const system = yield* systemPrompt(agent, run, instance)
  if (context.mine.length === 0) {
    yield* admitMessage(run.input, system, Effect.map(agentTools(agent, instance.installed), (listed) => offered(listed, seesImages)))
    context.record({ _tag: "user", content: run.input })
  }
  const execution: Execution = {
    context,
    models,
    transcript,
    fitContext,
    system,
    budget
  }
  return execution
}

/** The run's model turns and tool calls, as its transcript calls for them, until it ends or waits. */
function* runTurns(execution: Execution) {
  const { budget, context } = execution
  const { agent, journal, run, step } = context
  let turn = context.mine.filter((m) => m._tag === "assistant").length
  // A run resumed after its final answer ends with it, as it would have (`afterAnswer`).
  if (turn > 0 && nextStep(context.mine)._tag !== "Final") {
    const resumed = yield* budget.atStart
    if (resumed !== undefined) return resumed
  }
  let consecutiveFailures = 0
  while (true) {
    const next = nextStep(context.mine)
    if (next._tag === "Final") {
      step.emit("run.completed", "run", { output: next.text, turns: turn })
      yield* step.commit({ status: { status: "completed", output: next.text }, releaseLease: true })
      return "completed" as const
    }
    if (next._tag === "ToolCalls") {
      const called = yield* callTools(execution, next.calls, consecutiveFailures)
      if (called._tag === "Ended") return called.outcome
      consecutiveFailures = called.consecutiveFailures
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
    const before = yield* budget.beforeTurn
    if (before !== undefined) return before
    turn++
    const after = yield* modelTurn(execution, turn)
    if (after !== undefined) return after
  }
}

/** After a turn's tool calls: the run ended (or waits), or it goes on with this many failures in a row. */
type Called =
  | { readonly _tag: "Ended"; readonly outcome: RunOutcome }
  | { readonly _tag: "Continue"; readonly consecutiveFailures: number }

/**
 * The open calls of the last assistant turn, in order, each a step of its own; `maxToolFailures`
 * failures in a row (counted on from `failedBefore`) end the run.
 */
function* callTools(execution: Execution, calls: ReadonlyArray<ToolCall>, failedBefore: number) {
  const { app, journal, run, step } = execution.context
  const config = app.table.config
  let consecutiveFailures = failedBefore
  for (const call of calls) {
    const outcome = yield* toolCallStep(execution.context, call)
    if (outcome._tag === "Suspended") return { _tag: "Ended", outcome: "suspended" } satisfies Called
    if (!outcome.ran) continue
    consecutiveFailures = outcome.ranAndFailed === undefined ? 0 : consecutiveFailures + 1
    if (outcome.ranAndFailed !== undefined && consecutiveFailures >= config.maxToolFailures) {
      const why = `${consecutiveFailures} tool calls failed in a row (the limit is maxToolFailures: ${config.maxToolFailures}); the last: ${outcome.ranAndFailed}`
      return { _tag: "Ended", outcome: yield* failRun(run, step, journal, why) } satisfies Called
    }
  }
  return { _tag: "Continue", consecutiveFailures } satisfies Called
}

/** Of the agent's tools as listed (its own, its instance's, its MCP servers'), those its models are offered: `view_image` only to models that see images. */
const offered = (listed: ReadonlyMap<string, CompiledTool>, seesImages: boolean): ReadonlyArray<ToolSpec> =>
  [...listed.values()].flatMap((t) => t.builtin !== "view_image" || seesImages ? [t.spec] : [])

/** Model turn `turn`: the agent's tools listed, the model asked, its answer recorded, the run's budgets checked. */
function* modelTurn(execution: Execution, turn: number) {
  const { budget, context, fitContext, models, system, transcript } = execution
  const { agent, app, seesImages, step } = context
  // Listed every turn: an MCP server's tools change (`list_changed`) while a run goes on.
  const specs = offered(yield* agentTools(agent, context.instance.installed), seesImages)
  const tooMany = overToolLimit(agent, models, specs.length)
  if (tooMany !== undefined) return yield* failRun(context.run, step, context.journal, tooMany)
  const result = yield* askModel({
    step,
    commit: context.commit,
    commitSoon: context.commitSoon,
    turn,
    models,
    config: app.table.config,
    request: (overflowed) =>
      Effect.flatMap(transcript, (messages) => fitContext({ system, messages, tools: specs }, turn, overflowed)),
    redactionOf: (name) => redactionOf(context, name)
  })
  context.record({ _tag: "assistant", content: result.text, toolCalls: result.toolCalls }, result.answeredAt)
  return yield* (result.toolCalls.length === 0 ? budget.afterAnswer(result.usage) : budget.afterTurn(result.usage))
}
