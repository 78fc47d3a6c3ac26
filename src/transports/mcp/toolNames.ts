/**
 * Agent ids as MCP tool names, both ways. MCP hosts hand tool names to models, whose function
 * names are commonly limited to `^[a-zA-Z0-9_-]{1,64}$`, stricter than MCP's own rule (1 to 128
 * of `A-Za-z0-9_-.`). Agent ids are lowercase segments (`a-z0-9-`) joined by `/`, so `/` becomes
 * `_` and the name is one-to-one with the id; an id too long for 64 characters keeps its start and
 * ends with a hash of the whole id, so it stays unique.
 */
import { createHash } from "node:crypto"

/** The most characters a tool name has. */
const maxLength = 64

/** The mapping for one build's agents. */
export interface ToolNames {
  /** The tool name of each agent, in the order of the agent ids given. */
  readonly names: ReadonlyMap<string, string>
  /** The agent a tool name stands for, if any. */
  readonly agentOf: (toolName: string) => string | undefined
}

/** The tool name of one agent id. */
export const toolNameOf = (agent: string): string => {
  const name = agent.replace(/[^A-Za-z0-9_-]/g, "_")
  if (name.length <= maxLength) return name
  const hash = createHash("sha256").update(agent).digest("hex").slice(0, 8)
  return `${name.slice(0, maxLength - hash.length - 1)}_${hash}`
}

/** The mapping for `agents`. */
export const toolNamesOf = (agents: Iterable<string>): ToolNames => {
  const names = new Map<string, string>()
  const agentByName = new Map<string, string>()
  for (const agent of agents) {
    const name = toolNameOf(agent)
    names.set(agent, name)
    agentByName.set(name, agent)
  }
  return { names, agentOf: (toolName) => agentByName.get(toolName) }
}
