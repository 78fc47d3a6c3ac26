/**
 * A connection's listings of its server's tools, as they are offered: each tool worked out for
 * models once a listing (offerable.ts), those its `tools` allowlist leaves out dropped, and what is
 * wrong logged. A listing logs only what the one before it did not: an HTTP server that announces
 * changes to its tools is listed again after each turn that called it (McpConnection.ts), and the
 * same warnings on every turn told nothing new.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Effect } from "effect"
import { listTools } from "./listTools.js"
import { loadMcpClientSdk } from "./mcpClientSdk.js"
import type { McpMount } from "./McpMount.js"
import { type ListedTool, offerable } from "./offerable.js"
import { outputChecks } from "./outputCheck.js"

/** Lists a connected server's tools, within the connect timeout; fails with why it could not. */
export type ToolLister = (client: Client) => Effect.Effect<ReadonlyArray<ListedTool>, string>

/**
 * The lister of `mount`'s connection, for its sessions one after another: `hide` takes what may
 * quote an installed server's credentials out of what it logs.
 */
export const toolLister = (mount: McpMount, hide: (text: string) => string, connectMillis: number): ToolLister => {
  let warnedBefore: ReadonlySet<string> = new Set()
  return (client) =>
    Effect.gen(function*() {
      const sdk = yield* loadMcpClientSdk
      const { refused, stopped, tools } = yield* listTools(client, connectMillis)
      const allowed = mount.spec.tools
      const checks = outputChecks(sdk)
      const warnings: Array<string> = refused.map(({ name, problem }) =>
        `MCP server ${mount.name}: ${name === undefined ? "a tool without a name" : `its tool ${name}`} is left out: ${hide(problem)} (its other tools are offered)`
      )
      if (stopped !== undefined) warnings.push(`MCP server ${mount.name}: its tools are those listed so far: ${hide(stopped)}`)
      const listed: Array<ListedTool> = []
      // Its tools by their names for models: of two with one, the first listed keeps it.
      const named = new Map<string, string>()
      // Tools the allowlist leaves out are not offered, so not warned of.
      for (const tool of tools) {
        if (allowed !== undefined && !allowed.includes(tool.name)) continue
        const offered = offerable(mount, tool, checks)
        if (offered.warning !== undefined) warnings.push(hide(offered.warning))
        if (offered._tag === "LeftOut") continue
        const { modelName } = offered.listed
        const holder = modelName === undefined ? undefined : named.get(modelName)
        if (modelName === undefined) warnings.push(`MCP server ${mount.name}: the tool ${tool.name} is left out, its name is too long for models`)
        else if (holder !== undefined) {
          warnings.push(
            `MCP server ${mount.name}: the tool ${tool.name} is left out, its name for models ${modelName} is taken by the tool ${holder} of MCP server ${mount.name} ` +
              "(names differing only in characters models do not accept are the same to them)"
          )
        } else named.set(modelName, tool.name)
        // Kept for scripts, which call it by its own name.
        listed.push(holder === undefined ? offered.listed : { ...offered.listed, modelName: undefined })
      }
      yield* Effect.forEach(warnings.filter((warning) => !warnedBefore.has(warning)), (warning) => Effect.logWarning(warning), { discard: true })
      warnedBefore = new Set(warnings)
      return listed
    })
}
