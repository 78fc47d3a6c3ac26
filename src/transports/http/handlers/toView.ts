/**
 * Store records as the API shows them: absent instead of `null`.
 */
import type { StoredMessage } from "../../../durable/Store.js"
import type { ApprovalRecord, ConversationSummary, RunRecord } from "../../../durable/records.js"
import type { ConversationView } from "../api/conversationViews.js"
import type { ApprovalView, MessageView, RunView } from "../api/views.js"

/** A run record as the API shows it. */
export const runView = (run: RunRecord): RunView => ({
  id: run.id,
  status: run.status,
  agent: run.agent,
  instanceId: run.instanceId,
  conversationId: run.conversationId,
  input: run.input,
  createdAt: run.createdAt,
  ...(run.output === null ? {} : { output: run.output }),
  ...(run.error === null ? {} : { error: run.error }),
  ...(run.startedAt === null ? {} : { startedAt: run.startedAt }),
  ...(run.finishedAt === null ? {} : { finishedAt: run.finishedAt }),
  ...(run.steeredFrom === null ? {} : { steeredFrom: run.steeredFrom }),
  ...(run.parentRunId === null ? {} : { parentRunId: run.parentRunId }),
  ...(run.source === null ? {} : { source: run.source }),
  ...(run.release === null ? {} : { release: run.release }),
  usage: { inputTokens: run.inputTokens, outputTokens: run.outputTokens, costUsd: run.costUsd, unpricedTurns: run.unpricedTurns }
})

/** An approval record as the API shows it. */
export const approvalView = (approval: ApprovalRecord): ApprovalView => ({
  id: approval.id,
  runId: approval.runId,
  toolCallId: approval.toolCallId,
  agent: approval.agent,
  tool: approval.tool,
  input: approval.input,
  status: approval.status,
  createdAt: approval.createdAt,
  expiresAt: approval.expiresAt,
  scope: approval.scope,
  ...(approval.reason === null ? {} : { reason: approval.reason }),
  ...(approval.decidedAt === null ? {} : { decidedAt: approval.decidedAt })
})

/** A stored message as the API shows it. */
export const messageView = ({ createdAt, message, runId, seq }: StoredMessage): MessageView => {
  switch (message._tag) {
    case "user":
      return { seq, runId, createdAt, role: "user", content: message.content }
    case "assistant":
      return { seq, runId, createdAt, role: "assistant", content: message.content, toolCalls: message.toolCalls }
    case "tool":
      return { seq, runId, createdAt, role: "tool", content: message.content, toolCallId: message.toolCallId, name: message.name }
    case "summary":
      return { seq, runId, createdAt, role: "summary", content: message.content, keepFrom: message.keepFrom }
  }
}

/** A conversation as the API shows it. */
export const conversationView = (conversation: ConversationSummary): ConversationView => ({
  id: conversation.id,
  agent: conversation.agent,
  instanceId: conversation.instanceId,
  createdAt: conversation.createdAt,
  updatedAt: conversation.updatedAt,
  runs: conversation.runs,
  lastRun: conversation.lastRunId === null || conversation.lastRunStatus === null || conversation.lastRunCreatedAt === null
    ? null
    : { id: conversation.lastRunId, status: conversation.lastRunStatus, createdAt: conversation.lastRunCreatedAt, input: conversation.lastRunInput ?? "" }
})
