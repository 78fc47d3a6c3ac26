/**
 * An agent's tools with its MCP servers' tools added, as they are now: each server tool becomes a
 * `CompiledTool` named `<server>__<tool>` whose parameters are the server's own JSON Schema (as
 * models accept it, worked out once a listing: see offerable.ts), so that the engine decodes,
 * gates, journals and runs it like any tool. A name taken by another source's tool (the agent's
 * own, an installed one, another server's) is warned of here, on each turn: it depends on the agent.
 */
import { Array as Arr, Duration, Effect, Option, Schema } from "effect"
import type { CompiledAgent, CompiledTool } from "../compiler/CompiledApp.js"
import { AnswerWithImages } from "../definitions/AnswerWithImages.js"
import { defineTool } from "../definitions/defineTool.js"
import { McpClients } from "./McpClients.js"
import { type McpServerUnavailable, unavailable } from "./McpErrors.js"
import type { McpMount } from "./McpMount.js"
import { defaultMcpTimeout } from "./McpServerSpec.js"
import type { ListedTool } from "./offerable.js"

/** A tool's arguments: an object, checked by the server against its own schema. */
const Arguments = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** A result's text; with images when it has any, for the engine to show a model that sees them. */
const Answer = Schema.Union(Schema.String, AnswerWithImages)

/**
 * The engine's time limit on an MCP call: the server's timeout and a second more. The call's own
 * timeout fires first and says which server and tool; this one only stops a call that ignores it.
 */
const backstop = (mount: McpMount): Duration.Duration => Duration.sum(Duration.decode(mount.spec.timeout ?? defaultMcpTimeout), Duration.seconds(1))

const compileMcpTool = (clients: McpClients["Type"], mount: McpMount, { description, parameters, tool }: ListedTool, name: string): CompiledTool => {
  return {
    id: `mcp:${mount.name}/${tool.name}`,
    name,
    file: mount.declaredIn,
    definition: defineTool({
      description,
      name,
      input: Arguments,
      output: Answer,
      timeout: backstop(mount),
      run: (args) =>
        Effect.map(clients.call(mount, tool.name, args), ({ images, text, textWithImages }): typeof Answer.Type =>
          textWithImages === text ? text : new AnswerWithImages({ content: textWithImages, images, withoutImages: text }))
    }),
    spec: { name, description, parameters }
  }
}

/** What a run's instance installed, as the run offers it: tools by model-facing name, and MCP servers. */
export interface InstalledTools {
  readonly tools: ReadonlyMap<string, CompiledTool>
  readonly mounts: ReadonlyArray<McpMount>
}

/** An instance that installed nothing (or an app with nothing installable). */
export const nothingInstalled: InstalledTools = { tools: new Map(), mounts: [] }

/** The agent's own tools, then the installed ones whose names are free. */
export const ownAndInstalled = (agent: CompiledAgent, installed: InstalledTools): ReadonlyMap<string, CompiledTool> => {
  if (installed.tools.size === 0) return agent.tools
  const all = new Map(agent.tools)
  for (const [name, tool] of installed.tools) if (!all.has(name)) all.set(name, tool)
  return all
}

/**
 * The tools a run of the agent offers now: its own, its servers' under their prefixes, then what
 * its instance installed (a name already taken stays with what took it first, so the agent's own
 * tools always win). Fails when a server has never been reachable.
 */
export const agentTools = (
  agent: CompiledAgent,
  installed: InstalledTools = nothingInstalled
): Effect.Effect<ReadonlyMap<string, CompiledTool>, McpServerUnavailable> => {
  const mounts = [...agent.mcp, ...installed.mounts]
  if (!Arr.isNonEmptyReadonlyArray(mounts)) return Effect.succeed(ownAndInstalled(agent, installed))
  return Effect.gen(function*() {
    // Optional so that the dispatcher's context need not name it; every project runtime provides it.
    const found = yield* Effect.serviceOption(McpClients)
    if (Option.isNone(found)) {
      return yield* unavailable(mounts[0], "this runtime has no MCP client (provide McpClients.layer())")
    }
    const clients = found.value
    const listed = yield* Effect.forEach(mounts, (mount) => Effect.map(clients.tools(mount), (tools) => ({ mount, tools })), {
      concurrency: "unbounded"
    })
    const all = new Map(agent.tools)
    // Server tools by model-facing name, to name the one a later tool lost its name to.
    const fromServers = new Map<string, string>()
    const add = (mount: McpMount, tools: ReadonlyArray<ListedTool>) =>
      Effect.forEach(tools, (listed) => {
        const { modelName: name, tool } = listed
        // None: its listing warned why.
        if (name === undefined) return Effect.void
        const taken = all.get(name)
        if (taken !== undefined) {
          const holder = fromServers.get(name) ?? (agent.tools.has(name) ? `the agent's own tool ${taken.name}` : `the tool ${taken.name} its instance installed`)
          return Effect.logWarning(
            `MCP server ${mount.name}: the tool ${tool.name} is left out, its name for models ${name} is taken by ${holder} ` +
              "(names differing only in characters models do not accept are the same to them)"
          )
        }
        all.set(name, compileMcpTool(clients, mount, listed, name))
        fromServers.set(name, `the tool ${tool.name} of MCP server ${mount.name}`)
        return Effect.void
      }, { discard: true })
    for (const { mount, tools } of listed) if (mount.instance === undefined) yield* add(mount, tools)
    for (const [name, tool] of installed.tools) if (!all.has(name)) all.set(name, tool)
    for (const { mount, tools } of listed) if (mount.instance !== undefined) yield* add(mount, tools)
    return all
  })
}
