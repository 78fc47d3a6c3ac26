/**
 * `foundry routes [dir]`: the route table, as the router sees it.
 */
import { Effect } from "effect"
import { manifestOf } from "../../router/codegen.js"
import { discover } from "../../router/discover.js"
import { say, style } from "../terminal.js"

const detail = (route: ReturnType<typeof manifestOf>["routes"][number]): string => {
  switch (route.kind) {
    case "agent":
      return `model ${route.model}; tools: ${route.tools?.join(", ") || "none"}` +
        (route.environment === undefined ? "" : `; environment ${route.environment}`)
    case "tool":
      return [
        route.requires === undefined || route.requires.length === 0 ? undefined : `requires ${route.requires.join(", ")}`,
        route.approval === undefined ? undefined : route.approval === "always" ? "asks for approval" : "asks for approval by input"
      ].filter((part) => part !== undefined).join("; ")
    case "mcp":
      return route.description ?? ""
    case "schedule":
      return `-> ${route.agent} (${Object.entries(route.timing ?? {}).map(([k, v]) => `${k} ${v}`).join(", ")})`
    case "playbook":
      return `-> ${route.agent} (${route.webhook === undefined ? `event ${route.event}` : `POST ${route.webhook}`})`
    case "environment":
      return route.description ?? ""
  }
}

/** `foundry routes`: prints the route table of the project at `dir`. */
export const routes = (dir: string) =>
  Effect.gen(function*() {
    const table = yield* discover(dir, 1)
    const manifest = manifestOf(table)
    const width = Math.max(...manifest.routes.map((r) => r.id.length), 2)
    yield* say(style.bold(`${"KIND".padEnd(12)}${"ID".padEnd(width + 2)}FILE`))
    for (const route of manifest.routes) {
      yield* say(`${route.kind.padEnd(12)}${route.id.padEnd(width + 2)}${route.file}  ${style.dim(detail(route))}`)
    }
    yield* say(style.dim(`config: ${table.configFile ?? "(none: defaults)"}`))
  })
