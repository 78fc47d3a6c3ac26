/**
 * What a run's page draws its waterfall from: the spans of the run (model turns, tool calls,
 * approvals, child runs), each with its times, status and details, built from the run's events;
 * and whether the run waits for a build.
 */
import type { FoundryEvent } from "./api.js"

/** One span of the waterfall, built from its events. */
export interface Span {
  readonly id: string
  readonly parent: string | null
  label: string
  kind: string
  start: number
  end: number | undefined
  detail: Record<string, unknown>
  status: "ok" | "failed" | "open"
  /** For a model turn: each compaction step that went before it, as a line. */
  compaction: Array<string>
  /** For a model turn: what its compaction's summary calls took, beside the turn's own tokens. */
  summaryTokens: { input: number; output: number } | undefined
  /** For a model turn: each failed call asked again or handed to the next model, as a line. */
  retries: Array<string>
  fellBack: boolean
  /** For a run: each installation of its instance it left out, and why, as a line. */
  skipped: Array<string>
  /** For a run: the tool results its client sent (`/v1`) that the conversation records cut, each whole. */
  cutResults: ReadonlyArray<{ readonly tool: string; readonly toolCallId: string; readonly output: string }>
}

/** What each compaction step does, as a person says it. */
const compactionStep = {
  elide: "older tool results shortened",
  "elide-earlier": "tool results it had acted on shortened",
  summary: "older turns summarized"
} as const

/** A count with thousands separators, as the waterfall writes tokens and characters. */
export const thousands = (n: number): string => n.toLocaleString("en-US")

/** The spans of a run's waterfall, by id, from its events in order. */
export const spansOf = (events: ReadonlyArray<FoundryEvent>): Map<string, Span> => {
  const spans = new Map<string, Span>()
  // The run's end, once it has one.
  let end: FoundryEvent | undefined
  for (const event of events) {
    let span = spans.get(event.spanId)
    if (span === undefined) {
      span = {
        id: event.spanId,
        parent: event.parentSpanId,
        label: event.type,
        kind: "",
        start: event.time,
        end: undefined,
        detail: {},
        status: "open",
        compaction: [],
        summaryTokens: undefined,
        retries: [],
        fellBack: false,
        skipped: [],
        cutResults: []
      }
      spans.set(event.spanId, span)
    }
    switch (event.type) {
      case "run.queued":
      case "run.started":
        span.kind = "run"
        span.label = `run of ${event.agent}`
        if (event.type === "run.queued") span.cutResults = event.data.cutToolResults ?? []
        break
      case "model.turn.started":
        span.kind = "model"
        span.label = `model turn ${event.data.turn}`
        break
      case "model.turn.completed":
        span.end = event.time
        span.status = "ok"
        span.detail = { ...span.detail, text: event.data.text, toolCalls: event.data.toolCalls, usage: event.data.usage }
        break
      case "tool.call.started":
        span.kind = "tool"
        span.label = `tool ${event.data.tool}`
        span.detail = { ...span.detail, input: event.data.input, ...(event.data.childRunId === undefined ? {} : { childRunId: event.data.childRunId }) }
        break
      case "tool.call.completed":
        span.kind = "tool"
        span.label = `tool ${event.data.tool}`
        span.end = event.time
        span.status = "ok"
        span.detail = { ...span.detail, input: event.data.input, output: event.data.output }
        break
      case "tool.call.failed":
        span.kind = "tool"
        span.label = `tool ${event.data.tool}`
        span.end = event.time
        span.status = "failed"
        span.detail = { ...span.detail, input: event.data.input, error: event.data.error }
        break
      case "timer.armed":
        // The timer call's own span: which of the agent's timers it armed, and when that fires.
        span.detail = { ...span.detail, timerId: event.data.timerId, firesAt: event.data.firesAt }
        break
      case "approval.requested":
        span.kind = "approval"
        span.label = `approval for ${event.data.tool}`
        span.detail = { ...span.detail, approvalId: event.data.approvalId, input: event.data.input }
        break
      case "approval.decided":
        // A call a conversation grant let through has a decision and no request: shown all the same.
        if (span.kind === "") {
          span.kind = "approval"
          span.label = `approval for ${event.data.tool}${"grantedBy" in event.data ? " (granted for the conversation)" : ""}`
        }
        span.end = event.time
        span.status = event.data.status === "approved" ? "ok" : "failed"
        span.detail = { ...span.detail, decision: event.data.status, reason: "reason" in event.data ? event.data.reason : undefined }
        break
      case "model.retry":
        span.retries.push(`${event.data.summary === true ? "a summary call to " : ""}${event.data.model} failed (${event.data.error}); asked again`)
        break
      case "model.fallback":
        span.fellBack = true
        span.retries.push(`${event.data.summary === true ? "a summary call " : ""}fell back from ${event.data.from} to ${event.data.to} (${event.data.error})`)
        break
      case "installation.skipped":
        span.skipped.push(`${event.data.kind} ${event.data.capability}: ${event.data.reason}`)
        break
      case "context.compacted":
        span.compaction.push(`${compactionStep[event.data.method]}: ${thousands(event.data.beforeTokens)} → ${thousands(event.data.afterTokens)} tokens`)
        break
      case "context.uncompacted":
        span.compaction.push(`${compactionStep[event.data.method]}: nothing (${event.data.reason})`)
        break
      case "context.summary.completed": {
        const { inputTokens, outputTokens } = event.data.usage
        span.summaryTokens = { input: (span.summaryTokens?.input ?? 0) + inputTokens, output: (span.summaryTokens?.output ?? 0) + outputTokens }
        span.compaction.push(`summary by ${event.data.model}: ${thousands(inputTokens)}/${thousands(outputTokens)} tokens`)
        break
      }
      case "run.completed":
      case "run.failed":
      case "run.cancelled":
        span.end = event.time
        span.status = event.type === "run.completed" ? "ok" : "failed"
        end = event
        break
      default:
        break
    }
  }
  // A run that ended with a model turn or a call still going (a cancel while the model answered)
  // cut it short: it ends with the run, as what it is, not open for ever.
  if (end !== undefined) {
    const how = end.type === "run.cancelled" ? "was cancelled" : end.type === "run.failed" ? "failed" : "ended"
    for (const span of spans.values()) {
      if (span.end !== undefined || (span.kind !== "model" && span.kind !== "tool")) continue
      span.end = end.time
      span.status = "failed"
      span.detail = { ...span.detail, error: `cut short: the run ${how} before ${span.kind === "model" ? "the model answered" : "the call finished"}` }
    }
  }
  return spans
}

/** Why the run waits for a build, when its latest suspension is that and nothing resumed it since. */
export const buildWaitOf = (events: ReadonlyArray<FoundryEvent>): { readonly file: string; readonly problem: string } | undefined => {
  const latest = events.findLast((event) => event.type === "run.suspended" || event.type === "run.resumed")
  return latest?.type === "run.suspended" && latest.data.reason === "build" ? latest.data : undefined
}
