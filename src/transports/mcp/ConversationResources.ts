/**
 * Conversations as MCP resources: `foundry://conversations/<id>` is a conversation's transcript
 * in Markdown, what a host can hand its model as context. The recent conversations are listed;
 * any conversation is readable through the URI template.
 */
import type { ReadResourceResult, Resource, ResourceTemplate } from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, Layer, Option, Schema } from "effect"
import type { ConversationRecord } from "../../durable/records.js"
import { Store, type StoredMessage } from "../../durable/Store.js"
import type { StoreError } from "../../durable/StoreError.js"

/** How many recent conversations `resources/list` names. */
export interface ConversationResourcesOptions {
  readonly listed: number
}

/** No conversation (or no resource at all) has that URI. */
export class ResourceNotFound extends Schema.TaggedError<ResourceNotFound>()("ResourceNotFound", {
  uri: Schema.String,
  message: Schema.String
}) {}

/** Conversation transcripts as resources. */
export class ConversationResources extends Context.Tag("foundry/mcp/ConversationResources")<ConversationResources, {
  /** The most recently active conversations, newest first. */
  readonly list: Effect.Effect<ReadonlyArray<Resource>, StoreError>
  /** The URI template any conversation's transcript is read by. */
  readonly templates: ReadonlyArray<ResourceTemplate>
  /** A conversation's transcript. */
  readonly read: (uri: string) => Effect.Effect<ReadResourceResult, ResourceNotFound | StoreError>
}>() {}

const prefix = "foundry://conversations/"

const mimeType = "text/markdown"

/** The resource URI of a conversation. */
export const conversationUri = (conversationId: string) => `${prefix}${encodeURIComponent(conversationId)}`

const decodeSegment = Option.liftThrowable(decodeURIComponent)

/** The conversation id in a resource URI, when it is one of ours. */
const conversationIdOf = (uri: string): Option.Option<string> =>
  uri.startsWith(prefix)
    ? Option.filter(decodeSegment(uri.slice(prefix.length)), (id) => id !== "" && !id.includes("/"))
    : Option.none()

const clip = (text: string, length: number) => text.length <= length ? text : `${text.slice(0, length - 1)}…`

/** One message of a transcript as Markdown. */
const messageMarkdown = ({ message }: StoredMessage): string => {
  switch (message._tag) {
    case "user":
      return `**User:** ${message.content}`
    case "assistant": {
      const calls = message.toolCalls.map((call) => `- calls \`${call.name}\` with \`${call.arguments}\``)
      return [`**Assistant:** ${message.content}`, ...calls].join("\n")
    }
    case "tool":
      return `**Tool \`${message.name}\` answered:** ${message.content}`
    case "summary":
      return `**Summary of the earlier messages:** ${message.content}`
  }
}

/** A conversation's transcript as Markdown. */
const transcript = (conversation: ConversationRecord, messages: ReadonlyArray<StoredMessage>): string =>
  [
    `# Conversation ${conversation.id}`,
    `Agent \`${conversation.agent}\`, instance \`${conversation.instanceId}\`. ` +
    `To continue it, call the agent's tool with "conversation": "${conversation.id}".`,
    ...messages.map(messageMarkdown)
  ].join("\n\n")

/** The resources over the store. */
export const layer = (options: ConversationResourcesOptions) =>
  Layer.effect(
    ConversationResources,
    Effect.gen(function*() {
      const store = yield* Store

      // The store lists runs, not conversations: the recent runs name the recent conversations.
      // A conversation usually has several runs, so several times as many runs are looked through.
      const list = Effect.map(store.listRuns({ limit: options.listed * 4 }), (runs) => {
        const seen = new Map<string, Resource>()
        for (const run of runs) {
          if (seen.size >= options.listed) break
          if (seen.has(run.conversationId)) continue
          seen.set(run.conversationId, {
            uri: conversationUri(run.conversationId),
            name: run.conversationId,
            title: `${run.agent} · ${clip(run.input, 60)}`,
            description: `A conversation with agent "${run.agent}" (instance "${run.instanceId}"); its latest message: ${clip(run.input, 200)}`,
            mimeType
          })
        }
        return [...seen.values()]
      })

      const templates: ReadonlyArray<ResourceTemplate> = [{
        uriTemplate: `${prefix}{conversation}`,
        name: "conversation",
        title: "A conversation's transcript",
        description: "The messages of a conversation with an agent, by the conversation id an agent tool answered with",
        mimeType
      }]

      const read = Effect.fn("ConversationResources.read")(function*(uri: string) {
        const found = conversationIdOf(uri)
        if (Option.isNone(found)) {
          return yield* new ResourceNotFound({ uri, message: `"${uri}" is not a resource of this server: read ${prefix}<conversation id>` })
        }
        const id = found.value
        const conversation = yield* store.getConversation(id)
        if (conversation._tag === "None") {
          return yield* new ResourceNotFound({ uri, message: `there is no conversation "${id}"` })
        }
        const messages = yield* store.listMessages(id)
        const result: ReadResourceResult = { contents: [{ uri, mimeType, text: transcript(conversation.value, messages) }] }
        return result
      })

      return ConversationResources.of({ list, templates, read })
    })
  )
