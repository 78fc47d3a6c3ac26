/**
 * `defineEnvironment`: a working environment an agent can be given (virtual file system, script
 * runtime). Defined and listed here; the runtime that executes it comes later.
 */
import { brand, type Branded } from "./RouteKind.js"

/** A working environment definition. */
export interface EnvironmentDefinition extends Branded<"environment"> {
  readonly description: string
  /** Files the environment starts with, path -> content. */
  readonly files: Readonly<Record<string, string>>
  /** Paths (or path prefixes) the agent may read but never change. */
  readonly readOnly: ReadonlyArray<string>
  readonly limits: {
    readonly maxFileBytes: number
    readonly maxTotalBytes: number
    readonly scriptTimeoutMs: number
  }
}

/** Defines a working environment. */
export const defineEnvironment = (definition: {
  readonly description?: string
  readonly files?: Readonly<Record<string, string>>
  readonly readOnly?: ReadonlyArray<string>
  readonly limits?: Partial<EnvironmentDefinition["limits"]>
}): EnvironmentDefinition =>
  brand("environment", {
    description: definition.description ?? "",
    files: Object.freeze({ ...definition.files }),
    readOnly: Object.freeze([...(definition.readOnly ?? [])]),
    limits: Object.freeze({
      maxFileBytes: definition.limits?.maxFileBytes ?? 1_000_000,
      maxTotalBytes: definition.limits?.maxTotalBytes ?? 50_000_000,
      scriptTimeoutMs: definition.limits?.scriptTimeoutMs ?? 10_000
    })
  })
