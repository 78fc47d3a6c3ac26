/**
 * Whether an installed capability can be offered to an agent's model under its name, the one rule
 * set for both moments it is asked: when an instance installs it (the instances API refuses it,
 * instances/installationRequests.ts) and when a run of the instance gathers its tools (the run
 * leaves it out, engine/RunInstance.ts), since a build may change between the two. An installed
 * tool is offered under its own name, an installed MCP server is mounted under the last part of
 * its id; the agent's own tool or server of that name keeps it, and of two installed ones the first
 * claimed keeps it. The clash is worded once, naming both and the fix, for both moments.
 */
import { type Capability, capabilityKey, type CompiledAgent } from "../compiler/CompiledApp.js"

/** A capability claiming its name: `path` is where a request asked for it, `undefined` when the instance has it installed. */
export interface NameClaim {
  readonly capability: Capability
  readonly path: string | undefined
}

/** The names an agent's run offers, claimed one installed capability at a time. */
export interface ToolNames {
  /** Why `claim` cannot have its name (what it clashes with, and how to fix it); `undefined` when it can. */
  readonly clashOf: (claim: NameClaim) => string | undefined
  /** Records `claim` as holding its name, unless an earlier one holds it. */
  readonly claim: (claim: NameClaim) => void
}

/** What `claim` is, for a message: `the mcp "sales/crm"`. */
const what = ({ capability }: NameClaim): string => `the ${capability.kind} "${capability.id}"`

/**
 * The name `capability` reaches `agent`'s model under, how it does, which of the agent's own holds
 * that name already, and how to free it.
 */
const nameOf = (agent: CompiledAgent, capability: Capability) => {
  if (capability.kind === "tool") {
    const name = capability.tool.name
    const own = agent.tools.get(name)
    const rename = `give one of them another name (defineTool({ name: "..." }))`
    return {
      // Keyed by kind too: a tool and a server's tools are offered under names that never meet (`crm`, `crm__...`).
      key: capabilityKey("tool", name),
      offered: `is offered as "${name}"`,
      own: own === undefined ? undefined : `agent "${agent.id}"'s own tool "${name}" (${own.file ?? agent.file})`,
      renameOwn: rename,
      renameOther: rename
    }
  }
  const name = capability.mount
  const own = agent.mcp.find((mount) => mount.name === name)
  return {
    key: capabilityKey("mcp", name),
    offered: `is mounted as "${name}" (the last part of its id)`,
    own: own === undefined ? undefined : `agent "${agent.id}"'s own MCP server "${name}" (${own.declaredIn})`,
    renameOwn: `rename ${capability.file} or the agent's server`,
    renameOther: "rename one's file"
  }
}

/** The names of `agent`'s runs, none of them claimed by an installation yet. */
export const toolNames = (agent: CompiledAgent): ToolNames => {
  const taken = new Map<string, NameClaim>()
  return {
    clashOf: (claim) => {
      const { key, offered, own, renameOther, renameOwn } = nameOf(agent, claim.capability)
      const other = taken.get(key)
      // The same capability claimed twice is no clash (a request listing it twice is refused for that).
      if (other?.capability === claim.capability) return undefined
      if (own !== undefined) {
        const neverOffered = claim.capability.kind === "tool" ? "it" : "its tools"
        return `${what(claim)} ${offered}, like ${own}, which keeps the name: a run never offers ${neverOffered} to the model; ${renameOwn}`
      }
      if (other === undefined) return undefined
      return `${what(claim)} ${offered}, like ${what(other)}` +
        (other.path === undefined ? ", which this instance has installed" : ` (${other.path})`) +
        `: a run offers only one of them; keep only one of them installed, or ${renameOther}`
    },
    claim: (claim) => {
      const { key } = nameOf(agent, claim.capability)
      if (!taken.has(key)) taken.set(key, claim)
    }
  }
}
