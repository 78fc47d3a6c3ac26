/**
 * One route module: its default export, loaded through `importRouteModule`, and checked to be a
 * definition of the kind its file's place asks for.
 */
import { Effect } from "effect"
import { defineFunctionOf, kindOf, type RouteKind } from "../definitions/RouteKind.js"
import { importFailed, RouteError } from "./RouteError.js"
import { importRouteModule } from "./RouteModuleLoader.js"
import type { RouteFile } from "./RoutePath.js"
import { aKind, kindNoun } from "./validateDefinition.js"

const where: Record<RouteFile["kind"], string> = {
  agent: "agents/<path>/agent.ts",
  tool: "*.tool.ts",
  mcp: "mcp/",
  playbook: "playbooks/",
  schedule: "schedules/",
  environment: "environments/"
}

/** The default export of a module, or the reason it cannot be had. */
export const loadDefault = (root: string, file: string, generation: number) =>
  Effect.tryPromise({
    try: () => importRouteModule(root, file, generation),
    catch: (cause) => {
      const problem = describeCause(cause)
      // A syntax error names its place (`(lib/util.ts:2:1)`), often in a file this one imports.
      const place = /\(([^()\s]+:\d+:\d+)\)/.exec(problem)?.[1]
      return importFailed(file, problem, place)
    }
  }).pipe(
    Effect.flatMap((module) =>
      typeof module === "object" && module !== null && "default" in module && module.default !== undefined
        ? Effect.succeed<unknown>(module.default)
        : Effect.fail(
          new RouteError({ file, problem: "the file has no default export", fix: "add `export default define...({ ... })`" })
        )
    )
  )

const describeCause = (cause: unknown): string =>
  cause instanceof Error ? cause.message.split("\n").slice(0, 6).join("\n") : String(cause)

/** A `RouteError` when `value` is not a definition of the `expected` kind. */
export const expectKind = (file: string, expected: RouteKind, value: unknown): RouteError | undefined => {
  const actual = kindOf(value)
  if (actual === expected) return undefined
  const fix = `export default ${defineFunctionOf[expected]}({ ... })`
  return new RouteError({
    file,
    problem: actual === undefined
      ? `the default export is not a Foundry definition, but a file here must export ${aKind(expected)}`
      : `the default export is ${aKind(actual)} (${defineFunctionOf[actual]}), but a file here must export ${aKind(expected)}`,
    fix: actual === undefined || expected === "config" ? fix : `${fix}, or move the ${kindNoun(actual)} to ${where[actual === "config" ? expected : actual]}`
  })
}

