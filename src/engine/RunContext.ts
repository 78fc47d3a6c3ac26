/**
 * What one execution of a run carries from step to step: the run, its agent and app, its instance
 * (and so the tools it installed), the step being written, the conversation's transcript as this
 * execution knows it, and how to add to it.
 */
import { Effect } from "effect"
import type { CompiledAgent, CompiledApp } from "../compiler/CompiledApp.js"
import type { RunRecord } from "../durable/records.js"
import type { ChatMessage, ToolCall } from "../models/Model.js"
import { type ContextWindow, type ResultLimit, resultLimitOf } from "./compaction.js"
import { type ToolOutcome, truncateForModel } from "./executeTool.js"
import { redactFields, redactInput } from "./redact.js"
import type { RunInstance } from "./RunInstance.js"
import type { StepBuffer } from "./StepBuffer.js"
import type { JournalEntry } from "./transcript.js"
import type { StoreError } from "../durable/StoreError.js"
import type { LeaseLost } from "../journal/RunJournal.js"

/** One execution of a run. */
export interface RunContext {
  readonly app: CompiledApp
  readonly agent: CompiledAgent
  readonly run: RunRecord
  /** Its instance: the model turns and the tool calls of this execution offer the same tools. */
  readonly instance: RunInstance
  /**
   * Every model of the agent's fallback list accepts images: `view_image` is offered, and a tool's
   * answer with images shows them (a model that cannot see reads them described).
   */
  readonly seesImages: boolean
  /** The context window of the agent's first model; `undefined` when unknown. */
  readonly window: ContextWindow | undefined
  /** The most of one tool result the conversation records (`resultLimitOf` the window). */
  readonly resultLimit: ResultLimit
  readonly step: StepBuffer
  /** The conversation's messages, stored and added by this execution. */
  readonly journal: Array<JournalEntry>
  /** This run's own messages: they decide its next step. */
  readonly mine: Array<ChatMessage>
  /**
   * Adds a message to the pending step and to the transcript; `at`, when it came (a model's
   * answer), times the calls it makes should the run end before their results.
   */
  readonly record: (message: ChatMessage, at?: number) => void
  /** Commits the pending step (the first of an execution also marks the run running). */
  readonly commit: () => Effect.Effect<void, StoreError | LeaseLost>
  /** `commit` as the step buffer's `commitSoon`: for a model turn about to be asked. */
  readonly commitSoon: () => Effect.Effect<void, StoreError | LeaseLost>
}

/** A run's execution context over `journal`, the stored messages it starts from. */
export const makeRunContext = (
  app: CompiledApp,
  agent: CompiledAgent,
  run: RunRecord,
  instance: RunInstance,
  seesImages: boolean,
  window: ContextWindow | undefined,
  step: StepBuffer,
  journal: Array<JournalEntry>
): RunContext => {
  const mine = journal.filter((m) => m.runId === run.id).map((m) => m.message)
  let starting = true
  /** How the execution's next step ends: its first marks the run running. */
  const startingEnd = () => {
    const end = starting ? { status: { status: "running" as const } } : undefined
    starting = false
    return end
  }
  return {
    app,
    agent,
    run,
    instance,
    seesImages,
    window,
    resultLimit: resultLimitOf(app.table.config.toolOutputLimit, window),
    step,
    journal,
    mine,
    record: (message, at) => {
      step.message(message)
      journal.push(at === undefined ? { runId: run.id, message } : { runId: run.id, message, createdAt: at })
      mine.push(message)
    },
    commit: () => Effect.suspend(() => step.commit(startingEnd())),
    commitSoon: () => Effect.suspend(() => step.commitSoon(startingEnd()))
  }
}

/** What decides a tool's redactions: the agent's own tools, then those its run's instance installed. */
type ToolOwners = Pick<RunContext, "agent" | "instance">

/** The names of fields a tool's events hide. */
export const redactionOf = ({ agent, instance }: ToolOwners, toolName: string): ReadonlySet<string> =>
  new Set((agent.tools.get(toolName) ?? instance.installed.tools.get(toolName))?.definition.redact ?? [])

/** A tool's output as events may show it: its redacted fields replaced. */
export const hide = (owners: ToolOwners, toolName: string) => (value: unknown): unknown => redactFields(value, redactionOf(owners, toolName))

/**
 * A tool call's input as events may show it: its redacted fields replaced, and for a tool that
 * redacts, arguments that did not parse as a JSON object replaced whole (`redactInput`).
 */
export const hideInput = (owners: ToolOwners, toolName: string) => (value: unknown): unknown => redactInput(value, redactionOf(owners, toolName))

/**
 * Records a call's result for the model, cut to the result limit (a subagent's answer as much as a
 * tool's), and says in an event how it ended, with all of it.
 */
export const answer = (context: RunContext, call: ToolCall, outcome: ToolOutcome, durationMs: number) => {
  const images = outcome._tag === "Succeeded" ? outcome.images : undefined
  const content = truncateForModel(outcome.content, context.resultLimit.characters, context.resultLimit.why)
  context.record({ _tag: "tool", toolCallId: call.id, name: call.name, content, ...(images === undefined ? {} : { images }) })
  const shownInput = hideInput(context, call.name)
  const span = `tool:${call.id}`
  if (outcome._tag === "Succeeded") {
    const output = hide(context, call.name)(outcome.output)
    context.step.emit("tool.call.completed", span, { toolCallId: call.id, tool: call.name, input: shownInput(outcome.input), output, durationMs })
  } else {
    context.step.emit("tool.call.failed", span, { toolCallId: call.id, tool: call.name, input: shownInput(outcome.input), error: outcome.error, durationMs })
  }
}
