/**
 * An MCP server that speaks for Foundry's agents: tools (one per agent) and resources (the
 * conversations' transcripts). One is made per session, each answering through the same
 * `AgentTools` and `ConversationResources`; this module is where MCP's Promise-based handlers meet
 * their Effects.
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js"
import type { RequestHandlerExtra } from "@modelcontextprotocol/sdk/shared/protocol.js"
import {
  CallToolRequestSchema,
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type ServerNotification,
  type ServerRequest
} from "@modelcontextprotocol/sdk/types.js"
import { Cause, Data, Effect, Exit, Runtime } from "effect"
import packageJson from "../../../package.json" with { type: "json" }
import type { StoreError } from "../../durable/StoreError.js"
import { logStoreError } from "../http/handlers/storeUnavailable.js"
import { AgentTools, type ProgressReporter } from "./AgentTools.js"
import { ConversationResources } from "./ConversationResources.js"

/** What the handlers run with. */
export type AgentServerServices = AgentTools | ConversationResources

type Extra = RequestHandlerExtra<ServerRequest, ServerNotification>

/**
 * A JSON-RPC error as the SDK answers it (`code`, `message`, `data`). Not the SDK's `McpError`,
 * whose message already starts with "MCP error <code>:", which the client's own `McpError` then
 * puts in front again.
 */
class RpcError extends Data.TaggedError("RpcError")<{ readonly code: number; readonly message: string; readonly data?: unknown }> {}

/** The MCP code for a resource that does not exist. */
const resourceNotFound = -32002

/** A store failure, told the client in the same words every time: what the store said (it can hold SQL) goes to the log. */
const storeUnavailable = (error: StoreError) =>
  Effect.zipRight(logStoreError(error), Effect.fail(new RpcError({ code: ErrorCode.InternalError, message: "the store is unavailable; try again" })))

const instructions = "Each tool is one of Foundry's agents: a call sends it one message and answers with its reply and the id " +
  "of the conversation; pass that id as `conversation` to continue the conversation. Conversations' transcripts are " +
  "resources at foundry://conversations/<conversation id>."

/**
 * Reports progress to the caller when it asked for it (by a progress token), each report counting
 * one up and naming the run in `_meta` too, for a client that reads ids rather than words.
 */
const reporterFor = (extra: Extra): ProgressReporter | undefined => {
  const progressToken = extra._meta?.progressToken
  if (progressToken === undefined) return undefined
  let progress = 0
  return (message, run) =>
    Effect.suspend(() => {
      progress++
      const _meta = { "foundry/runId": run.runId, "foundry/conversation": run.conversation, "foundry/instance": run.instance }
      return Effect.tryPromise(() =>
        extra.sendNotification({ method: "notifications/progress", params: { progressToken, progress, message, _meta } })
      )
    }).pipe(Effect.ignore)
}

/** A new server, its handlers running on `runtime`. */
export const makeAgentServer = (runtime: Runtime.Runtime<AgentServerServices>): Server => {
  // A failure becomes the JSON-RPC error the SDK answers with: its `code` and `message`. A request
  // the client cancels (or a session that closes) interrupts its Effect through `signal`.
  const run = async <A>(effect: Effect.Effect<A, RpcError, AgentServerServices>, signal: AbortSignal): Promise<A> => {
    const exit = await Runtime.runPromiseExit(runtime)(effect, { signal })
    if (Exit.isSuccess(exit)) return exit.value
    throw Cause.squash(exit.cause)
  }

  const server = new Server(
    { name: "foundry", title: "Foundry", version: packageJson.version },
    { capabilities: { tools: { listChanged: true }, resources: {} }, instructions }
  )

  server.setRequestHandler(ListToolsRequestSchema, (_request, extra) =>
    run(Effect.map(Effect.flatMap(AgentTools, (tools) => tools.list), (tools) => ({ tools: [...tools] })), extra.signal))

  server.setRequestHandler(CallToolRequestSchema, (request, extra) =>
    run(
      Effect.flatMap(AgentTools, (tools) => tools.call(request.params.name, request.params.arguments, reporterFor(extra))).pipe(
        Effect.catchTag("UnknownTool", (error) => Effect.fail(new RpcError({ code: ErrorCode.InvalidParams, message: error.message })))
      ),
      extra.signal
    ))

  server.setRequestHandler(ListResourcesRequestSchema, (_request, extra) =>
    run(
      Effect.flatMap(ConversationResources, (resources) => resources.list).pipe(
        Effect.map((resources) => ({ resources: [...resources] })),
        Effect.catchTag("StoreError", storeUnavailable)
      ),
      extra.signal
    ))

  server.setRequestHandler(ListResourceTemplatesRequestSchema, (_request, extra) =>
    run(Effect.map(ConversationResources, (resources) => ({ resourceTemplates: [...resources.templates] })), extra.signal))

  server.setRequestHandler(ReadResourceRequestSchema, (request, extra) =>
    run(
      Effect.flatMap(ConversationResources, (resources) => resources.read(request.params.uri)).pipe(
        Effect.catchTags({
          ResourceNotFound: (error) => Effect.fail(new RpcError({ code: resourceNotFound, message: error.message, data: { uri: error.uri } })),
          StoreError: storeUnavailable
        })
      ),
      extra.signal
    ))

  return server
}
