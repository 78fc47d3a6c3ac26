/**
 * What a chat completion request asks of an agent: which agent and instance (`model`), the new
 * message (the last one, a user message), and where it goes.
 *
 * - With a conversation (the `x-foundry-conversation` header), the server holds the history: only
 *   the last message is new, the earlier ones are not read. A conversation id that does not exist
 *   yet is created under that id.
 * - Without one (stateless), the request's messages are the history, as OpenAI takes them: a new
 *   conversation starts with the earlier messages, and the last one is the run's message. System
 *   and developer messages become user messages that say they are the client's instructions: the
 *   agent's own instructions stay its system prompt. OpenAI's `user` names the end user and nothing
 *   more, as there: an app that sends it with each request (for abuse tracking, or with the whole
 *   history it keeps) must not find its requests joined into one conversation the server keeps.
 */
import { Either } from "effect"
import { instanceIdForm, isInstanceId } from "../../definitions/instanceId.js"
import type { ChatMessage } from "../../models/Model.js"
import { transcriptProblem } from "../../models/validateTranscript.js"
import { type ChatCompletionRequest, contentText, type RequestMessage } from "./ChatCompletionRequest.js"
import { invalidRequest, type OpenAiError } from "./OpenAiError.js"

/** The header that names a conversation, in requests and responses. */
export const conversationHeader = "x-foundry-conversation"

/** What the dispatcher is asked. */
export interface ChatTurn {
  readonly agent: string
  readonly instance: string
  readonly message: string
  /** The conversation continued (created under that id when new), or none: a new one, seeded with `history`. */
  readonly conversation: string | undefined
  readonly history: ReadonlyArray<ChatMessage>
}

const conversationPattern = /^[A-Za-z0-9][A-Za-z0-9._:@-]{0,199}$/

/** `<agent>` or `<agent>@<instance>`; the instance is `default` when absent. */
export const parseModel = (model: string): Either.Either<{ readonly agent: string; readonly instance: string }, OpenAiError> => {
  const at = model.indexOf("@")
  const agent = at < 0 ? model : model.slice(0, at)
  const instance = at < 0 ? "default" : model.slice(at + 1)
  if (agent.length === 0) return Either.left(invalidRequest(`model "${model}" names no agent: send "<agent>" or "<agent>@<instance>"`, "model"))
  if (!isInstanceId(instance)) {
    return Either.left(invalidRequest(
      `model "${model}": the instance after "@" must be ${instanceIdForm}`,
      "model"
    ))
  }
  return Either.right({ agent, instance })
}

/** The request as a turn of a conversation; `header` is the `x-foundry-conversation` header. */
export const chatTurn = (body: ChatCompletionRequest, header: string | undefined): Either.Either<ChatTurn, OpenAiError> =>
  Either.gen(function*() {
    const { agent, instance } = yield* parseModel(body.model)
    const last = body.messages[body.messages.length - 1]
    if (last === undefined || last.role !== "user") {
      return yield* Either.left(invalidRequest(
        `messages[${body.messages.length - 1}]: the last message must be the user's (role "user"), the message the agent answers`,
        `messages[${body.messages.length - 1}].role`
      ))
    }
    const message = contentText(last.content)
    if (message.trim().length === 0) {
      return yield* Either.left(invalidRequest(`messages[${body.messages.length - 1}].content: the user's message is empty`, `messages[${body.messages.length - 1}].content`))
    }
    if (header !== undefined) {
      if (!conversationPattern.test(header)) {
        return yield* Either.left(invalidRequest(
          `header ${conversationHeader}: expected a conversation id of 1-200 letters, digits, '.', '_', ':', '@' or '-'`,
          conversationHeader
        ))
      }
      return { agent, instance, message, conversation: header, history: [] }
    }
    const history = historyOf(body.messages.slice(0, -1))
    const problem = transcriptProblem([...history, { _tag: "user", content: message }])
    if (problem !== undefined) {
      return yield* Either.left(invalidRequest(
        `messages: ${problem} (every assistant message with tool_calls must be followed by one tool message per call)`,
        "messages"
      ))
    }
    return { agent, instance, message, conversation: undefined, history }
  })

/**
 * The request's earlier messages as transcript messages, one for one. A client may reuse a tool
 * call id in a later assistant message (OpenAI scopes ids to their message): the later call and
 * its results get an id of their own, since the transcript pairs a result with its call by id.
 */
const historyOf = (messages: ReadonlyArray<RequestMessage>): ReadonlyArray<ChatMessage> => {
  const toolNames = new Map<string, string>()
  const used = new Set<string>()
  // Where the search for a free suffix of each id goes on from: many calls of one id (a request may
  // hold thousands) each cost one step, not one for every suffix taken before.
  const nextSuffix = new Map<string, number>()
  // The ids of the last assistant message's calls, as the client sent them, to the ids they get.
  let renamed = new Map<string, string>()
  const idOf = (id: string): string => {
    let own = id
    let n = nextSuffix.get(id) ?? 2
    while (used.has(own)) own = `${id}~${n++}`
    nextSuffix.set(id, n)
    used.add(own)
    return own
  }
  return messages.map((message): ChatMessage => {
    switch (message.role) {
      case "system":
      case "developer":
        return { _tag: "user", content: `Instructions from the client (${message.role} message):\n${contentText(message.content)}` }
      case "user":
        return { _tag: "user", content: contentText(message.content) }
      case "assistant": {
        renamed = new Map()
        const toolCalls = (message.tool_calls ?? []).map((call) => {
          const id = idOf(call.id)
          renamed.set(call.id, id)
          toolNames.set(id, call.function.name)
          return { id, name: call.function.name, arguments: call.function.arguments }
        })
        const text = contentText(message.content)
        return { _tag: "assistant", content: text === "" ? message.refusal ?? "" : text, toolCalls }
      }
      case "tool": {
        const toolCallId = renamed.get(message.tool_call_id) ?? message.tool_call_id
        return { _tag: "tool", toolCallId, name: toolNames.get(toolCallId) ?? "", content: contentText(message.content) }
      }
    }
  })
}
