/**
 * A route table in one line, as the terminal shows it after a build: `2 agents, 4 tools, ...`.
 */
import type { RouteTable } from "../router/RouteTable.js"

const count = (n: number, word: string): string => `${n} ${word}${n === 1 ? "" : "s"}`

/** How many routes of each kind the table holds. */
export const routeSummary = (table: RouteTable): string =>
  [
    count(table.agents.length, "agent"),
    count(table.tools.length, "tool"),
    count(table.mcpServers.length, "MCP server"),
    count(table.schedules.length, "schedule"),
    count(table.playbooks.length, "playbook"),
    count(table.environments.length, "environment")
  ].join(", ")
