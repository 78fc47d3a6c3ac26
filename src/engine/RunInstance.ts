/**
 * The instance a run executes for, as the run's steps use it: its context, read once per execution
 * when a step first needs it and decoded by the schema that asks for it (the agent's for its
 * instructions, a tool's for its call), and what it installed, as tools of this run. An installed
 * tool is offered under its own name and runs with the installation's config; an installed MCP
 * server is mounted under the last segment of its id, with a connection of this instance's own.
 * The agent's own tools win a name clash; an installation that cannot be used is left out, with an
 * `installation.skipped` event on the run and a warning, and the run goes on without it.
 */
import { Array as Arr, Data, Effect, Either, Option, Schema, SchemaAST } from "effect"
import type { CompiledAgent, CompiledApp, CompiledTool } from "../compiler/CompiledApp.js"
import type { AnyContext, AnySchema } from "../definitions/defineAgent.js"
import { formatIssues, readableIssues } from "../definitions/readableIssues.js"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import type { CapabilityKind, RunRecord } from "../durable/records.js"
import type { StoreError } from "../durable/StoreError.js"
import type { InstalledCapability } from "../instances/installedCapabilities.js"
import { Instances } from "../instances/Instances.js"
import { toolNames, type ToolNames } from "../instances/toolNameClashes.js"
import type { McpMount } from "../mcp/McpMount.js"
import { McpServerSchema } from "../mcp/McpServerSpec.js"
import { type InstalledTools, nothingInstalled } from "../mcp/mcpTools.js"

/** The instance of one execution of a run. */
export interface RunInstance {
  readonly id: string
  /** The context as stored (its encoded form), read on first use. */
  readonly context: Effect.Effect<AnyContext, StoreError>
  /** What it installed that this run offers. */
  readonly installed: InstalledTools
  /** The config an installed tool runs with; `undefined` for every other tool. */
  readonly configOf: (tool: CompiledTool) => unknown
  /** The installations this run leaves out, each with why, for the run's events to say. */
  readonly skipped: ReadonlyArray<SkippedInstallation>
}

/** An installation a run leaves out: which capability, and why (the fix in it). */
export interface SkippedInstallation {
  readonly kind: CapabilityKind
  readonly capability: string
  readonly reason: string
}

/**
 * The agent's instructions cannot be made for this instance: its stored context does not match the
 * schema the agent declares, or `instructions({ instance })` threw. The run cannot go on.
 */
export class InstanceContextInvalid extends Data.TaggedError("InstanceContextInvalid")<{ readonly message: string }> {}

/**
 * The context decoded by `schema`; `Left` is what is wrong with it, field by field, and how to
 * set it right.
 */
export const decodeContext = (
  schema: AnySchema,
  stored: AnyContext,
  run: RunRecord,
  agent?: { readonly file: string; readonly schema: AnySchema | undefined }
): Either.Either<unknown, string> =>
  Either.mapLeft(Schema.decodeUnknownEither(schema)(stored, { errors: "all" }), (error) => {
    const issues = readableIssues(error, { under: "context" })
    // A field the agent's schema does not declare cannot be stored (the instances API refuses
    // it): a tool asking for one has a schema that disagrees with its agent's, fixed in code.
    const declared = agent?.schema === undefined ? [] : fieldsOf(agent.schema)
    const undeclared = declared.length === 0 ? [] : Arr.dedupe(issues.flatMap((issue) => {
      const field = issue.path.split(".")[1]
      return field === undefined || declared.includes(field) ? [] : [field]
    }))
    const fix = agent !== undefined && undeclared.length > 0
      ? `the agent's context schema (${agent.file}) has no field ${undeclared.join(", ")}, and an instance's context holds only the agent's fields: ` +
        "declare it there, or give the tool the agent's context schema"
      : `set it with PATCH /api/instances/${run.instanceId}?agent=${run.agent} {"context": {...}}`
    return `${formatIssues(issues)}\n${fix}`
  })

/** The fields a context schema stores (its encoded side); none when it is not a plain struct. */
const fieldsOf = (schema: AnySchema): ReadonlyArray<string> => {
  try {
    return SchemaAST.getPropertySignatures(SchemaAST.encodedAST(schema.ast)).map((field) => String(field.name))
  } catch {
    return []
  }
}

/** The instance of `run`, with what it installed when the app has anything installable. */
export const makeRunInstance = (app: CompiledApp, agent: CompiledAgent, run: RunRecord) =>
  Effect.gen(function*() {
    const storage = yield* InstanceStorage
    // Read once per execution, when first asked for. Every way a run is created makes its
    // instance first, so a read is enough (made here only if it went missing).
    let read: AnyContext | undefined
    const context = Effect.suspend(() =>
      read !== undefined ? Effect.succeed(read) : storage.context(run.agent, run.instanceId).pipe(
        Effect.flatMap(Option.match({
          onSome: Effect.succeed,
          onNone: () => Effect.map(storage.ensure(run.agent, run.instanceId), (instance) => instance.context)
        })),
        Effect.tap((found) => {
          read = found
        })
      )
    )
    const base = { id: run.instanceId, context }
    // Most apps install nothing: their runs read no installations.
    if (app.capabilities.size === 0) return { ...base, installed: nothingInstalled, configOf: () => undefined, skipped: [] } satisfies RunInstance
    const instances = yield* Instances
    const { unusable, usable } = yield* instances.installed(app, { agent: run.agent, id: run.instanceId })
    const skipped: Array<SkippedInstallation> = unusable.map(({ id, kind, reason }) => ({ kind, capability: id, reason }))
    const tools = new Map<string, CompiledTool>()
    const configs = new Map<CompiledTool, unknown>()
    const mounts: Array<McpMount> = []
    const names = toolNames(agent)
    for (const installation of usable) {
      const left = yield* installedTool(app, run, installation, names, { tools, configs, mounts })
      if (left !== undefined) skipped.push({ kind: installation.capability.kind, capability: installation.capability.id, reason: left })
    }
    const where = `instance "${run.instanceId}" of agent "${run.agent}"`
    for (const { capability, kind, reason } of skipped) {
      yield* Effect.logWarning(`${where}: the installed ${kind} "${capability}" is left out of its runs: ${reason}`)
    }
    const instance: RunInstance = { ...base, installed: { tools, mounts }, configOf: (tool) => configs.get(tool), skipped }
    return instance
  })

/** Adds one installation to the run's tools; why it was left out, when it was. */
const installedTool = (
  app: CompiledApp,
  run: RunRecord,
  { capability, config }: InstalledCapability,
  names: ToolNames,
  into: { readonly tools: Map<string, CompiledTool>; readonly configs: Map<CompiledTool, unknown>; readonly mounts: Array<McpMount> }
) =>
  Effect.gen(function*() {
    // Every one is installed: a clash names the other as installed, not as asked for.
    const claim = { capability, path: undefined }
    const clash = names.clashOf(claim)
    if (clash !== undefined) return clash
    if (capability.kind === "tool") {
      names.claim(claim)
      into.tools.set(capability.tool.name, capability.tool)
      into.configs.set(capability.tool, config)
      return undefined
    }
    const declared = Either.try(() => capability.server.connect(config))
    if (Either.isLeft(declared)) {
      // The thrown message may quote the config's secrets: the log has it, the run's events do not.
      const thrown = declared.left
      yield* Effect.logWarning(`connect(config) in ${capability.file} threw: ${thrown instanceof Error ? thrown.message : String(thrown)}`)
      return `connect(config) in ${capability.file} threw (its message, which may hold the config's secrets, is in the log)`
    }
    const spec = Either.mapLeft(
      Schema.decodeUnknownEither(McpServerSchema)(declared.right, { errors: "all" }),
      // Fields only: the values hold the config's secrets.
      (error) => `these fields are wrong: ${readableIssues(error, { root: "(server)" }).map((issue) => issue.path).join(", ")}`
    )
    if (Either.isLeft(spec)) return `connect(config) in ${capability.file} made no valid MCP server (${spec.left})`
    // A server left out for its config leaves its name to the next one.
    names.claim(claim)
    into.mounts.push({
      name: capability.mount,
      spec: spec.right,
      declaredIn: capability.file,
      root: app.table.root,
      instance: { agent: run.agent, id: run.instanceId }
    })
    return undefined
  })
