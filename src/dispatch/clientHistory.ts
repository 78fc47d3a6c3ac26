/**
 * A history a client submits with its message (an OpenAI-compatible client's earlier messages),
 * as the conversation records it: its tool results cut to the result limit of the agent's model,
 * as the engine cuts the results of its own calls as it records them, so that a result the window
 * cannot hold does not put every later request of the conversation over it.
 */
import type { CompiledAgent, CompiledApp } from "../compiler/CompiledApp.js"
import { Array as Arr } from "effect"
import { agentWindow, resolveModels } from "../engine/agentModels.js"
import { resultLimitOf } from "../engine/compaction.js"
import { truncateForModel } from "../engine/executeTool.js"
import type { ChatMessage, ModelResolver } from "../models/Model.js"

/** A client's tool result that was cut, whole: the `run.queued` event keeps it for people. */
export interface CutToolResult {
  readonly toolCallId: string
  readonly tool: string
  readonly output: string
}

/** `history` as recorded for `agent`, and the whole of each tool result it cut. */
export const clientHistory = (
  app: CompiledApp,
  agent: CompiledAgent,
  models: ModelResolver["Type"],
  history: ReadonlyArray<ChatMessage>
): { readonly history: ReadonlyArray<ChatMessage>; readonly cut: ReadonlyArray<CutToolResult> } => {
  if (!history.some((message) => message._tag === "tool")) return { history, cut: [] }
  const window = agentWindow(app, agent, Arr.headNonEmpty(resolveModels(models, agent)).model)
  const limit = resultLimitOf(app.table.config.toolOutputLimit, window)
  const cut: Array<CutToolResult> = []
  const recorded = history.map((message): ChatMessage => {
    if (message._tag !== "tool" || message.content.length <= limit.characters) return message
    cut.push({ toolCallId: message.toolCallId, tool: message.name, output: message.content })
    return { ...message, content: truncateForModel(message.content, limit.characters, limit.why) }
  })
  return { history: recorded, cut }
}
