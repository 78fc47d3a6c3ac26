/**
 * Every definition carries its kind under one symbol, so the router can tell an agent from a
 * schedule without trusting the shape of an object. `Symbol.for` keeps the brand stable even if a
 * project ends up with two copies of the framework module.
 */
export const RouteKindId: unique symbol = Symbol.for("foundry/RouteKind")

/** The kinds of route file a project can hold. */
export type RouteKind = "agent" | "tool" | "mcp" | "playbook" | "schedule" | "environment" | "config"

/** A value made by one of the `define*` functions. */
export interface Branded<K extends RouteKind> {
  readonly [RouteKindId]: K
}

/** The kind of a definition, or `undefined` for any other value. */
export const kindOf = (value: unknown): RouteKind | undefined => {
  if (typeof value !== "object" || value === null || !(RouteKindId in value)) return undefined
  const kind: unknown = value[RouteKindId]
  return typeof kind === "string" && isRouteKind(kind) ? kind : undefined
}

const kinds: ReadonlySet<string> = new Set(["agent", "tool", "mcp", "playbook", "schedule", "environment", "config"])

const isRouteKind = (kind: string): kind is RouteKind => kinds.has(kind)

/** Marks a definition with its kind and freezes it: definitions are values, never mutated. */
export const brand = <K extends RouteKind, A extends object>(kind: K, definition: A): A & Branded<K> =>
  Object.freeze({ ...definition, [RouteKindId]: kind })

/** What each kind is made with, for error messages that tell the fix. */
export const defineFunctionOf: Record<RouteKind, string> = {
  agent: "defineAgent",
  tool: "defineTool",
  mcp: "defineMcpServer",
  playbook: "definePlaybook",
  schedule: "defineSchedule",
  environment: "defineEnvironment",
  config: "defineConfig"
}
