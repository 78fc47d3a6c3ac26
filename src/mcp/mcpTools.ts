/**
 * An agent's tools with its MCP servers' tools added, as they are now: each server tool becomes a
 * `CompiledTool` named `<server>__<tool>` whose parameters are the server's own JSON Schema, so
 * that the engine decodes, gates, journals and runs it like any tool.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Array as Arr, Duration, Effect, Option, Schema } from "effect"
import type { CompiledAgent, CompiledTool } from "../compiler/CompiledApp.js"
import { defineTool } from "../definitions/defineTool.js"
import { McpClients } from "./McpClients.js"
import { McpServerUnavailable } from "./McpErrors.js"
import { type McpMount, toolSeparator } from "./McpMount.js"
import { defaultMcpTimeout } from "./McpServerSpec.js"

/** A tool's arguments: an object, checked by the server against its own schema. */
const Arguments = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/**
 * The engine's time limit on an MCP call: the server's timeout and a second more. The call's own
 * timeout fires first and says which server and tool; this one only stops a call that ignores it.
 */
const backstop = (mount: McpMount): Duration.Duration => Duration.sum(Duration.decode(mount.spec.timeout ?? defaultMcpTimeout), Duration.seconds(1))

/**
 * The name the model calls a server's tool by: `<server>__<tool>`, with characters models do not
 * accept in a name (MCP allows `.` and `/`) as `_`; `undefined` when it would be over 64.
 */
export const mcpToolName = (server: string, tool: string): string | undefined => {
  const name = `${server}${toolSeparator}${tool.replace(/[^A-Za-z0-9_-]/g, "_")}`
  return name.length <= 64 ? name : undefined
}

/** A server's JSON Schema as the model's parameters: an object schema, without `$schema`. */
const parametersOf = (tool: Tool): Record<string, unknown> => {
  const { $schema: _, ...schema } = tool.inputSchema
  return schema
}

const compileMcpTool = (clients: McpClients["Type"], mount: McpMount, tool: Tool, name: string): CompiledTool => {
  const description = tool.description ?? tool.title ?? `${tool.name} from the MCP server ${mount.name}`
  return {
    id: `mcp:${mount.name}/${tool.name}`,
    name,
    file: mount.declaredIn,
    definition: defineTool({
      description,
      name,
      input: Arguments,
      output: Schema.String,
      timeout: backstop(mount),
      run: (args) => clients.call(mount, tool.name, args)
    }),
    spec: { name, description, parameters: parametersOf(tool) }
  }
}

/**
 * The tools the agent offers now: its own, then each server's under its prefix (a name taken by
 * one of its own tools stays its own). Fails when a server has never been reachable.
 */
export const agentTools = (agent: CompiledAgent): Effect.Effect<ReadonlyMap<string, CompiledTool>, McpServerUnavailable> => {
  const mounts = agent.mcp
  if (!Arr.isNonEmptyReadonlyArray(mounts)) return Effect.succeed(agent.tools)
  return Effect.gen(function*() {
    // Optional so that the dispatcher's context need not name it; every project runtime provides it.
    const found = yield* Effect.serviceOption(McpClients)
    if (Option.isNone(found)) {
      const [first] = mounts
      return yield* new McpServerUnavailable({
        server: first.name,
        declaredIn: first.declaredIn,
        reason: "this runtime has no MCP client (provide McpClients.layer())"
      })
    }
    const clients = found.value
    const listed = yield* Effect.forEach(mounts, (mount) => Effect.map(clients.tools(mount), (tools) => ({ mount, tools })), {
      concurrency: "unbounded"
    })
    const all = new Map(agent.tools)
    for (const { mount, tools } of listed) {
      for (const tool of tools) {
        const name = mcpToolName(mount.name, tool.name)
        if (name === undefined) {
          yield* Effect.logWarning(`MCP server ${mount.name}: the tool ${tool.name} is left out, its name is too long for models`)
        } else if (!all.has(name)) {
          all.set(name, compileMcpTool(clients, mount, tool, name))
        }
      }
    }
    return all
  })
}
