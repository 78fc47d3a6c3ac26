/**
 * `foundry routes [dir]`: the route table, as the router sees it.
 */
import { Effect } from "effect"
import { routeProblems } from "../../compiler/compile.js"
import { ModelResolver, runsOnInstead } from "../../models/Model.js"
import { ModelResolverLive } from "../../models/ModelResolverLive.js"
import { manifestOf } from "../../router/codegen.js"
import { discover } from "../../router/discover.js"
import { RouteErrors } from "../../router/RouteError.js"
import { CliError } from "../CliError.js"
import { say, style } from "../terminal.js"

const detail = (route: ReturnType<typeof manifestOf>["routes"][number], models: ModelResolver["Type"]): string => {
  switch (route.kind) {
    case "agent": {
      // What it asks for, and what it gets here when that differs (the demo model without a key).
      const instead = route.model === undefined ? undefined : runsOnInstead(models, route.model)
      const runsOn = instead === undefined ? "" : ` (runs on ${instead.model} here: no OPENAI_API_KEY)`
      return `model ${route.model}${runsOn}; tools: ${route.tools?.join(", ") || "none"}` +
        (route.subagents === undefined ? "" : `; subagents: ${route.subagents.map((s) => `${s.agent} (as ${s.tool})`).join(", ")}`) +
        (route.environment === undefined ? "" : `; environment ${route.environment}`)
    }
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

/** `foundry routes`: prints the route table of the project at `dir`, and fails with what a build of it would refuse. */
export const routes = (dir: string) =>
  Effect.gen(function*() {
    const table = yield* discover(dir, 1)
    const models = yield* ModelResolver
    const manifest = manifestOf(table)
    const idWidth = Math.max(...manifest.routes.map((r) => r.id.length), 2)
    const fileWidth = Math.max(...manifest.routes.map((r) => r.file.length), 4)
    yield* say(style.bold(`${"KIND".padEnd(12)}${"ID".padEnd(idWidth + 2)}${"FILE".padEnd(fileWidth + 2)}DETAILS`))
    for (const route of manifest.routes) {
      const details = detail(route, models)
      yield* say(`${route.kind.padEnd(12)}${route.id.padEnd(idWidth + 2)}${details === "" ? route.file : `${route.file.padEnd(fileWidth + 2)}${style.dim(details)}`}`)
    }
    yield* say(style.dim(`config: ${table.configFile ?? "(none: defaults)"}`))
    // The table is what the router sees; a build would still refuse these, so the listing does not pass for a sound project.
    const problems = routeProblems(table)
    if (problems.length > 0) {
      return yield* new CliError({ message: `${new RouteErrors({ errors: problems }).message}\n(foundry dev would not serve this build; foundry check also type-checks and builds the config's layers)` })
    }
  }).pipe(Effect.provide(ModelResolverLive))
