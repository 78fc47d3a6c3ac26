/**
 * One tool call of a run, from the model's call to its recorded answer: decoded against the
 * tool's schema, checked against the project's permission rules and the approval gate, then run
 * (a timer tool, a subagent's child run, or the tool itself under its timeout). A call that never
 * runs is answered all the same, so that the transcript stays valid.
 */
import { Clock, Context, Effect, Either } from "effect"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import type { CompiledTool, EnvironmentRoute } from "../compiler/CompiledApp.js"
import { type InstanceInfo, isContext } from "../definitions/defineAgent.js"
import { Environments } from "../environments/Environments.js"
import { Instances } from "../instances/Instances.js"
import { agentTools, ownAndInstalled } from "../mcp/mcpTools.js"
import type { ToolCall } from "../models/Model.js"
import { runTimerTool } from "./agentTimers.js"
import { approvalGate } from "./approvalGate.js"
import { awaitChild, emitFrom, spawnFrom } from "./childRuns.js"
import { decodeCall, type DecodedCall, failedOutcome, runTool, type ToolOutcome } from "./executeTool.js"
import { deniedByRule, matchingRule } from "./permissions.js"
import type { PermissionRule } from "../definitions/configFields.js"
import { answer, hideInput, type RunContext } from "./RunContext.js"
import { decodeContext } from "./RunInstance.js"
import { RunStarter } from "./RunStarter.js"
import { suspendOnApproval } from "./suspendOnApproval.js"

/** How a call left the run: answered (and whether it ran and failed), or the run waits. */
export type CallOutcome =
  | { readonly _tag: "Answered"; readonly ranAndFailed: string | undefined; readonly ran: boolean }
  | { readonly _tag: "Suspended" }

const answered = (ran = false, ranAndFailed?: string): CallOutcome => ({ _tag: "Answered", ran, ranAndFailed })

/**
 * The instance as `tool` reads it: its context decoded by the tool's `context` schema when it
 * declares one (else as stored); `Left` says which field is wrong and how to set it.
 */
const instanceFor = (context: RunContext, tool: CompiledTool) =>
  Effect.map(context.instance.context, (stored): Either.Either<InstanceInfo, string> => {
    const schema = tool.definition.context
    if (schema === undefined) return Either.right({ id: context.instance.id, context: stored })
    const where = `${tool.name} cannot run: the context of instance "${context.run.instanceId}" does not match the tool's context schema` +
      (tool.file === undefined ? "" : ` (${tool.file})`)
    return decodeContext(schema, stored, context.run, { file: context.agent.file, schema: context.agent.definition.context }).pipe(
      Either.mapLeft((problem) => `${where}:\n${problem}`),
      Either.flatMap((decoded) => isContext(decoded) ? Either.right({ id: context.instance.id, context: decoded }) : Either.left(`${where}: it must describe an object`))
    )
  })

/**
 * Takes `call` of `context`'s run to its answer, or to a suspension. Its parts below are
 * generators it delegates to, not Effects of their own: no operations added to every call.
 */
export const toolCallStep = (context: RunContext, call: ToolCall) =>
  Effect.gen(function*() {
    const { agent, app, run, step } = context
    const config = app.table.config
    const shown = hideInput(context, call.name)
    const listed = yield* Effect.either(agentTools(agent, context.instance.installed))
    const withoutServers = ownAndInstalled(agent, context.instance.installed)
    if (Either.isLeft(listed) && !withoutServers.has(call.name)) {
      // An MCP server cannot be reached: the other tools still run, its own are answered why not.
      answer(context, call, failedOutcome(call.arguments, listed.left.message), 0)
      return answered()
    }
    const all = Either.getOrElse(listed, () => withoutServers)
    // `view_image` is offered only to models that see: one that cannot is answered as for any tool it was not offered.
    const tools = context.seesImages ? all : new Map([...all].filter(([, tool]) => tool.builtin !== "view_image"))
    const decoded = yield* decodeCall(tools.get(call.name), call, [...tools.keys()])
    if (decoded._tag === "Left") {
      // Calls that never ran (bad arguments, unknown tool) are answered without a start event.
      answer(context, call, decoded.left, 0)
      return answered()
    }
    const rule = matchingRule(config.permissions, run.agent, call.name)
    if (rule?.action === "deny") {
      // Refused by the project's rules: never run, nobody asked, the model told the rule's reason.
      answer(context, call, failedOutcome(decoded.right.rawInput, deniedByRule(rule)), 0)
      return answered()
    }
    const { builtin, environment, subagent } = decoded.right.tool
    if (builtin === "view_image" && environment !== undefined) return yield* viewImage(context, call, decoded.right.rawInput, environment)
    if (builtin !== undefined && builtin !== "view_image") {
      // The timers as the answers before this call left them (its limit, its list): stored first.
      yield* context.commit()
      const { armed, change, outcome } = yield* runTimerTool(builtin, decoded.right.rawInput, run, call.id, config.timers)
      // A timer outlives the run: it is armed, paused or cancelled with the step that stores this
      // answer, so that the timers are always as the conversation's answers say.
      if (change !== undefined) step.timer(change)
      if (armed !== undefined) step.emit("timer.armed", `tool:${call.id}`, { tool: call.name, timerId: armed.id, firesAt: armed.firesAt }, "run")
      answer(context, call, outcome, 0)
      return answered()
    }
    if (subagent !== undefined) {
      yield* context.commit()
      const waited = yield* awaitChild(run, step, call, subagent, decoded.right.input, decoded.right.rawInput, shown)
      if (waited === "suspended") return { _tag: "Suspended" } satisfies CallOutcome
      answer(context, call, waited, 0)
      return answered()
    }
    return yield* callTool(context, call, decoded.right, rule, shown)
  })

/** An environment's `view_image`: the image at the call's path, for a model that sees. */
function* viewImage(context: RunContext, call: ToolCall, input: unknown, environment: EnvironmentRoute) {
  const { run } = context
  const path = typeof input === "object" && input !== null && "path" in input && typeof input.path === "string" ? input.path : ""
  const scope = { ...environment, context: { agent: run.agent, instanceId: run.instanceId, conversationId: run.conversationId } }
  const shownImage = yield* Effect.either((yield* Environments).viewImage(scope, path))
  answer(context, call, Either.match(shownImage, {
    onLeft: (error) => failedOutcome(input, `view_image failed: ${error.message}`),
    onRight: ({ content, image }): ToolOutcome => ({ _tag: "Succeeded", input, output: content, content, images: [image] })
  }), 0)
  return answered(true, Either.isLeft(shownImage) ? shownImage.left.message : undefined)
}

/**
 * A call of the tool itself: the instance's context checked against the tool's schema, the
 * approval gate passed (or the run suspended at it), then the tool run under its time limit.
 */
function* callTool(context: RunContext, call: ToolCall, decoded: DecodedCall, rule: PermissionRule | undefined, shown: (value: unknown) => unknown) {
  const { agent, app, run, step } = context
  const config = app.table.config
  const instance = yield* instanceFor(context, decoded.tool)
  if (Either.isLeft(instance)) {
    // Nothing the model can change: counted as a failed call, so that a model retrying it is stopped by maxToolFailures.
    answer(context, call, failedOutcome(decoded.rawInput, instance.left), 0)
    return answered(true, instance.left)
  }
  let gate = yield* approvalGate(run, step, call, decoded, rule, config.approvalTimeout, shown)
  while (gate._tag === "Wait") {
    const waited = yield* suspendOnApproval(step, { reason: "approval", approvalId: gate.approvalId, tool: call.name })
    if (waited === "suspended") return { _tag: "Suspended" } satisfies CallOutcome
    // Decided while the suspension was written: through the gate again, which finds the decision.
    gate = yield* approvalGate(run, step, call, decoded, rule, config.approvalTimeout, shown)
  }
  if (gate._tag === "Refused") {
    answer(context, call, failedOutcome(decoded.rawInput, gate.reason), 0)
    return answered()
  }
  const starter = yield* RunStarter
  // An environment's verbs are tools whose run needs the environments service.
  const services = agent.definition.environment === undefined ? app.services : Context.add(app.services, Environments, yield* Environments)
  const storage = yield* InstanceStorage
  const instances = yield* Instances
  const started = yield* Clock.currentTimeMillis
  step.emit("tool.call.started", `tool:${call.id}`, { toolCallId: call.id, tool: call.name, input: shown(decoded.rawInput) })
  yield* context.commit()
  const outcome = yield* runTool(decoded, {
    runId: run.id,
    conversationId: run.conversationId,
    instanceId: run.instanceId,
    agent: run.agent,
    toolCallId: call.id,
    instance: instance.right,
    config: context.instance.configOf(decoded.tool),
    resultLimit: context.resultLimit.characters,
    spawn: spawnFrom(app, run, starter, call.id),
    emit: (name, payload) =>
      emitFrom(app, run, starter, step, call.id)(name, payload).pipe(
        Effect.provideService(InstanceStorage, storage),
        Effect.provideService(Instances, instances)
      )
  }, services, { timeout: config.toolTimeout, seesImages: context.seesImages })
  answer(context, call, outcome, (yield* Clock.currentTimeMillis) - started)
  return answered(true, outcome._tag === "Failed" ? outcome.error : undefined)
}
