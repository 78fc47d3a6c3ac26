/**
 * An MCP server as one agent mounts it: the compiler resolves an agent's `mcp` (its own
 * declarations, and the config's servers it names) into these; a run adds one for each MCP server
 * its instance installed.
 */
import type { AgentMcp, McpServerSpec } from "./McpServerSpec.js"

/** A server an agent uses. */
export interface McpMount {
  /** The name it is mounted under: the prefix of its tools' model-facing names. */
  readonly name: string
  readonly spec: McpServerSpec
  /** The file that declares it (the config's or the agent's), for messages that point at the fix. */
  readonly declaredIn: string
  /** The project folder: what a stdio server's `cwd` is relative to, and its default. */
  readonly root: string
  /**
   * Set for a server an instance installed: its connection is that instance's own (made with its
   * config's credentials) and is closed when the instance leaves it idle.
   */
  readonly instance?: { readonly agent: string; readonly id: string }
}

/** The separator between a server's name and its tool's name: `files__read`. */
export const toolSeparator = "__"

/**
 * The servers an agent mounts: its own declarations, and the config's servers it names with
 * `true`. `unknown` lists the names it gives `true` that the config does not declare.
 */
export const mountsOf = (
  agentMcp: AgentMcp,
  agentFile: string,
  shared: Readonly<Record<string, McpServerSpec>>,
  configFile: string,
  root: string
): { readonly mounts: ReadonlyArray<McpMount>; readonly unknown: ReadonlyArray<string> } => {
  const mounts: Array<McpMount> = []
  const unknown: Array<string> = []
  for (const [name, declared] of Object.entries(agentMcp)) {
    const spec = declared === true ? shared[name] : declared
    if (spec === undefined) unknown.push(name)
    else mounts.push({ name, spec, declaredIn: declared === true ? configFile : agentFile, root })
  }
  return { mounts, unknown }
}
