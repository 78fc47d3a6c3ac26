/**
 * A history an OpenAI-compatible client sends: it asked for page 1, the model called `fetch-page`,
 * the client ran the tool itself and sends its result `output`, then asks `next`.
 */
import type OpenAI from "openai"

export const clientRanFetchPage = (output: string, next: string): Array<OpenAI.Chat.ChatCompletionMessageParam> => [
  { role: "user", content: "read page 1" },
  { role: "assistant", content: null, tool_calls: [{ id: "call_client", type: "function", function: { name: "fetch-page", arguments: "{\"page\":1}" } }] },
  { role: "tool", tool_call_id: "call_client", content: output },
  { role: "user", content: next }
]
