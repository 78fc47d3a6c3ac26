/**
 * The current build's agents as MCP tools. Listing reads the build at the time of the request (a
 * reload changes it); calling a tool submits a durable run through the Dispatcher, reports its
 * steps as progress (the first naming the run, so that a caller that gives up knows which to
 * cancel, and a heartbeat while a step takes long, so that a caller's timeout reset by progress
 * does not fire), and answers with the run's output and the ids that continue its conversation.
 */
import type { CallToolResult, Tool } from "@modelcontextprotocol/sdk/types.js"
import { Context, Effect, JSONSchema, Layer, Schema } from "effect"
import { CurrentApp } from "../../compiler/CurrentApp.js"
import { formatIssues, readableIssues } from "../../definitions/readableIssues.js"
import { Dispatcher } from "../../dispatch/Dispatcher.js"
import { MessageText } from "../../dispatch/messageText.js"
import type { ApprovalStorage } from "../../durable/ApprovalStorage.js"
import type { RunRecord } from "../../durable/records.js"
import type { Store } from "../../durable/Store.js"
import type { EventLog } from "../../events/EventLog.js"
import type { FoundryEvent } from "../../events/FoundryEvent.js"
import { logStoreError } from "../http/handlers/storeUnavailable.js"
import { followRun, type RunOutcome } from "./followRun.js"
import { toolNamesOf } from "./toolNames.js"

/** What a call of an agent's tool takes. */
export const AgentToolInput = Schema.Struct({
  message: MessageText.annotations({ description: "What to say to the agent" }),
  conversation: Schema.optional(
    Schema.String.annotations({
      description: "The conversation to continue: the `conversation` of an earlier answer of this tool. A new conversation when absent."
    })
  ),
  instance: Schema.optional(
    Schema.String.annotations({
      description: "The agent instance to talk to; when absent, the instance of `conversation` if given, else `default`."
    })
  )
})

/** What a call answers as structured content (besides its text). */
export const AgentToolOutput = Schema.Struct({
  status: Schema.Literal("completed", "awaiting_approval").annotations({
    description: "`completed`: `output` is the agent's answer. `awaiting_approval`: the run waits for a person to decide `approvalId`."
  }),
  output: Schema.String.annotations({ description: "The agent's answer (empty while awaiting approval)" }),
  conversation: Schema.String.annotations({ description: "Pass it as `conversation` to continue this conversation" }),
  instance: Schema.String,
  runId: Schema.String,
  approvalId: Schema.optional(Schema.String)
})

/** No tool of the current build has that name. */
export class UnknownTool extends Schema.TaggedError<UnknownTool>()("UnknownTool", {
  name: Schema.String,
  message: Schema.String
}) {}

/** The ids of the run a call follows: what a caller needs to cancel it or continue its conversation. */
export type RunIds = Pick<typeof AgentToolOutput.Type, "runId" | "conversation" | "instance">

/** Reports one step of a call's run to the caller. */
export type ProgressReporter = (message: string, run: RunIds) => Effect.Effect<void>

/** The agents as tools. */
export class AgentTools extends Context.Tag("foundry/mcp/AgentTools")<AgentTools, {
  /** One tool per agent of the current build, ordered by agent id. */
  readonly list: Effect.Effect<ReadonlyArray<Tool>>
  /**
   * Runs the agent behind tool `name` with `args` and answers when the run ends or waits on a
   * person; its steps go to `progress` when the caller asked for them.
   */
  readonly call: (name: string, args: unknown, progress: ProgressReporter | undefined) => Effect.Effect<CallToolResult, UnknownTool>
}>() {}

/** A Schema as the JSON Schema of an MCP tool's input or output (always an object). */
const objectSchema = (schema: Schema.Schema.AnyNoContext) => {
  const { $schema: _dialect, ...json } = JSONSchema.make(schema)
  return { ...json, type: "object" as const }
}

const inputSchema = objectSchema(AgentToolInput)
const outputSchema = objectSchema(AgentToolOutput)

/** What a step of a run says to a caller following it; `undefined` for steps not worth a message. */
const progressOf = (event: FoundryEvent): string | undefined => {
  switch (event.type) {
    case "run.started":
      return "started"
    case "run.resumed":
      return "resumed"
    case "model.turn.started":
      return `model turn ${event.data.turn}`
    case "tool.call.started":
      return `calling ${event.data.tool}`
    case "tool.call.completed":
      return `${event.data.tool} answered`
    case "tool.call.failed":
      return `${event.data.tool} failed: ${event.data.error}`
    case "approval.requested":
      return `waiting for a person to approve ${event.data.tool}`
    default:
      return undefined
  }
}

/** The line that tells a caller how to continue a run's conversation. */
const continuation = (run: RunRecord) =>
  `conversation: ${run.conversationId} (pass it as "conversation" to continue), instance: ${run.instanceId}, run: ${run.id}`

const failure = (text: string): CallToolResult => ({ content: [{ type: "text", text }], isError: true })

const idsOf = (run: RunRecord): RunIds => ({ conversation: run.conversationId, instance: run.instanceId, runId: run.id })

const resultOf = (outcome: RunOutcome): CallToolResult => {
  const { run } = outcome
  const ids = idsOf(run)
  if (outcome._tag === "AwaitingApproval") {
    const { approval } = outcome
    const text = `The run is waiting for a person to approve the tool "${approval.tool}" (approval ${approval.id}, ` +
      `expires ${new Date(approval.expiresAt).toISOString()}). Decide it with POST /api/approvals/${approval.id} and the body ` +
      `{"decision":"approve"} or {"decision":"deny"}, or in the inspector under /approvals; the run then goes on, and its answer ` +
      `appears in the resource foundry://conversations/${run.conversationId}.`
    return {
      content: [{ type: "text", text }, { type: "text", text: continuation(run) }],
      structuredContent: { status: "awaiting_approval", output: "", ...ids, approvalId: approval.id }
    }
  }
  if (run.status !== "completed") {
    const why = run.status === "failed" ? `The run failed: ${run.error ?? "no reason was recorded"}` : `The run was ${run.status}.`
    return { content: [{ type: "text", text: why }, { type: "text", text: continuation(run) }], isError: true }
  }
  const output = run.output ?? ""
  return {
    content: [{ type: "text", text: output === "" ? "(the agent answered with no text)" : output }, { type: "text", text: continuation(run) }],
    structuredContent: { status: "completed", output, ...ids }
  }
}

/** The agent tools over the current build and the Dispatcher. */
export const layer = Layer.effect(
  AgentTools,
  Effect.gen(function*() {
    const current = yield* CurrentApp
    const dispatcher = yield* Dispatcher
    const context = yield* Effect.context<EventLog | ApprovalStorage | Store>()

    const list = Effect.map(current.get, (app): ReadonlyArray<Tool> => {
      const agents = [...app.agents.values()].sort((a, b) => a.id.localeCompare(b.id))
      const names = toolNamesOf(agents.map((agent) => agent.id)).names
      return agents.map((agent) => ({
        name: names.get(agent.id) ?? agent.id,
        title: agent.id,
        description: `${agent.definition.description}\n\nEach call is one message to the agent "${agent.id}"; ` +
          "the answer names its conversation, to pass back as `conversation` to continue it.",
        inputSchema,
        outputSchema
      }))
    })

    /**
     * Follows the run, reporting its steps; the first report names it. While the run goes on, the
     * last step is reported again at the pace of the server's SSE heartbeat.
     */
    const followReporting = (run: RunRecord, progress: ProgressReporter) =>
      Effect.gen(function*() {
        const ids = idsOf(run)
        let last = "queued"
        const report = (message: string) => progress(message, ids)
        yield* report(`queued: run ${run.id} in conversation ${run.conversationId} (instance ${run.instanceId})`)
        const every = (yield* current.get).table.config.server.sseHeartbeat
        yield* Effect.forkScoped(Effect.forever(Effect.zipRight(Effect.sleep(every), Effect.suspend(() => report(`still running: ${last}`)))))
        return yield* followRun(run.id, (event) => {
          const message = progressOf(event)
          if (message === undefined) return Effect.void
          last = message
          return report(message)
        })
      }).pipe(Effect.scoped)

    const call = Effect.fn("AgentTools.call")(function*(name: string, args: unknown, progress: ProgressReporter | undefined) {
      const app = yield* current.get
      const agent = toolNamesOf(app.agents.keys()).agentOf(name)
      if (agent === undefined) {
        return yield* new UnknownTool({ name, message: `there is no tool "${name}": list the tools again, the agents may have changed` })
      }
      // As its JSON Schema says (`additionalProperties: false`): a misspelt field is named, not dropped.
      const decoded = yield* Effect.either(Schema.decodeUnknown(AgentToolInput, { onExcessProperty: "error", errors: "all" })(args ?? {}))
      if (decoded._tag === "Left") {
        return failure(`The arguments do not match the tool's input schema:\n${formatIssues(readableIssues(decoded.left, { root: "(arguments)" }))}`)
      }
      return yield* dispatcher.submit({ agent, ...decoded.right }).pipe(
        Effect.flatMap((run) => progress === undefined ? followRun(run.id, () => Effect.void) : followReporting(run, progress)),
        Effect.map(resultOf),
        Effect.catchTags({
          AgentNotFound: (error) => Effect.succeed(failure(error.message)),
          ConversationNotFound: (error) => Effect.succeed(failure(error.message)),
          InstanceUnavailable: (error) => Effect.succeed(failure(error.message)),
          // What the store said stays in the server's log: it can hold SQL, for the operator only.
          StoreError: (error) => Effect.as(logStoreError(error), failure("The store is unavailable; try again."))
        }),
        Effect.provide(context)
      )
    })

    return AgentTools.of({ list, call })
  })
)
