/**
 * `defineEnvironment`: a working environment an agent can be given: a sandboxed file tree that
 * persists across runs, a script runtime, and the modules scripts may import. An agent that names
 * one gets the environment's verbs (`write_file`, `run_script`, `present`, ...) as its tools.
 */
import type { EnvironmentModule } from "./environmentModules.js"
import { brand, type Branded } from "./RouteKind.js"

/** Where the tree starts from. */
export type EnvironmentBackend =
  | { readonly _tag: "Memory" }
  /** A host folder (relative to the project), read through and never written: changes live in the store. */
  | { readonly _tag: "Directory"; readonly path: string }

/** The limits of one environment. */
export interface EnvironmentLimits {
  /** The longest a script may run before its worker is stopped. */
  readonly scriptTimeoutMs: number
  readonly maxFileBytes: number
  readonly maxTotalBytes: number
  /** The most of a script's output the model is shown; the rest is written to a file in /tmp. */
  readonly maxOutputBytes: number
}

/** Whose tree it is: each instance of the agent has one, or each conversation. */
export type EnvironmentPersistence = "instance" | "conversation"

/** A working environment definition. */
export interface EnvironmentDefinition extends Branded<"environment"> {
  readonly description: string
  readonly backend: EnvironmentBackend
  /** Files the tree starts with, absolute path -> content. */
  readonly files: Readonly<Record<string, string>>
  /** Paths (and everything under them) the agent may read but never change; `/std` always is. */
  readonly readOnlyPaths: ReadonlyArray<string>
  readonly modules: ReadonlyArray<EnvironmentModule>
  readonly limits: EnvironmentLimits
  readonly persistence: EnvironmentPersistence
}

/** The defaults of `limits`. */
export const defaultEnvironmentLimits: EnvironmentLimits = {
  scriptTimeoutMs: 10_000,
  maxFileBytes: 5_000_000,
  maxTotalBytes: 50_000_000,
  maxOutputBytes: 8_000
}

/** A path as the tree spells it: absolute, without a trailing slash. */
const absolute = (path: string): string => {
  const trimmed = path.replace(/\/+$/, "")
  return trimmed.startsWith("/") ? trimmed : `/${trimmed}`
}

/** Defines a working environment. */
export const defineEnvironment = (definition: {
  readonly description?: string
  /** `{ directory: "data" }` reads a project folder (never writing it); the default is an empty tree in memory. */
  readonly backend?: "memory" | { readonly directory: string }
  readonly files?: Readonly<Record<string, string>>
  readonly readOnlyPaths?: ReadonlyArray<string>
  readonly modules?: ReadonlyArray<EnvironmentModule>
  readonly limits?: Partial<EnvironmentLimits>
  readonly persistence?: EnvironmentPersistence
}): EnvironmentDefinition =>
  brand("environment", {
    description: definition.description ?? "",
    backend: definition.backend === undefined || definition.backend === "memory"
      ? { _tag: "Memory" }
      : { _tag: "Directory", path: definition.backend.directory },
    files: Object.freeze(Object.fromEntries(Object.entries(definition.files ?? {}).map(([path, content]) => [absolute(path), content]))),
    readOnlyPaths: Object.freeze((definition.readOnlyPaths ?? []).map(absolute)),
    modules: Object.freeze([...(definition.modules ?? [])]),
    limits: Object.freeze({ ...defaultEnvironmentLimits, ...definition.limits }),
    persistence: definition.persistence ?? "instance"
  })
