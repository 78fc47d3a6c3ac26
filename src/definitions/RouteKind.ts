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

/** The fields a `define*` call was given that its definition has none of (a misspelt `subagent`). */
export const UnknownFieldsId: unique symbol = Symbol.for("foundry/UnknownFields")

/**
 * Marks a definition with its kind and freezes it: definitions are values, never mutated. With
 * `given`, what the call was given: its fields the definition does not have are kept aside, for
 * the router to name (`unknownFieldsOf`) rather than drop.
 */
export const brand = <K extends RouteKind, A extends object>(kind: K, definition: A, given?: object): A & Branded<K> => {
  const unknown = given === undefined ? [] : Object.keys(given).filter((field) => !(field in definition))
  return Object.freeze({ ...definition, [RouteKindId]: kind, ...(unknown.length === 0 ? {} : { [UnknownFieldsId]: unknown }) })
}

/** The fields a definition's `define*` call was given and does not know. */
export const unknownFieldsOf = (value: object): ReadonlyArray<string> => {
  const unknown: unknown = UnknownFieldsId in value ? value[UnknownFieldsId] : undefined
  return Array.isArray(unknown) ? unknown.filter((field): field is string => typeof field === "string") : []
}

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
