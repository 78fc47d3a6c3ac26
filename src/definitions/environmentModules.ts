/**
 * What an environment offers its scripts besides the file system: modules imported as
 * `env:<name>`. Three kinds, by where the code runs:
 * - `definePureModule`: a package bundled and evaluated inside the script's sandbox, so a script
 *   uses the real library (limited to the names in `pick`), bound synchronously;
 * - `defineTools`: Foundry tools exposed as async functions that run on the host, with the
 *   application's services, as the tool they are;
 * - `defineAdapter`: host-side capabilities written for scripts (`create(fs, context)` returns the
 *   functions); every change they make goes through the environment's one mutation gateway.
 */
import type { AnyTool } from "./defineTool.js"

/** Module names are what follows `env:` in an import line. */
export const moduleNameRule = /^[a-z][a-z0-9-]{0,39}$/

/** Names taken by the modules every environment has. */
export const builtinModuleNames: ReadonlyArray<string> = ["fs", "test"]

/** A package bundled into the sandbox, limited to the exports in `pick`. */
export interface PureModule {
  readonly _tag: "PureModule"
  readonly name: string
  readonly description: string
  /** The npm package (resolved from the project's folder, then from Foundry's). */
  readonly from: string
  readonly pick: ReadonlyArray<string>
  /** The body of `/std/<name>/index.d.ts`; by default the package's own declarations. */
  readonly types: string | undefined
  /** Usage notes for `/std/<name>/README.md`. */
  readonly readme: string | undefined
}

/**
 * Tools callable from scripts as `await name(input)`: Foundry tools by the names they are listed
 * under, and, with `mcp`, every tool of one of the agent's MCP servers (by its own name, with
 * characters an identifier cannot hold as `_`).
 */
export interface ToolsModule {
  readonly _tag: "ToolsModule"
  readonly name: string
  readonly description: string
  readonly tools: Readonly<Record<string, AnyTool>>
  /** The name of an MCP server the agent mounts (its own, or the config's it names). */
  readonly mcp: string | undefined
}

/** Where an adapter's functions are running: the run and its instance. */
export interface AdapterContext {
  readonly runId: string
  readonly agent: string
  readonly instanceId: string
  readonly conversationId: string
}

/**
 * The file system as an adapter sees it: the same gateway the verbs use (read-only zones and byte
 * limits enforced). Failures throw an `Error` whose message names the path and the fix.
 */
export interface AdapterFs {
  readonly readFile: (path: string) => Uint8Array
  readonly readText: (path: string) => string
  readonly writeFile: (path: string, content: Uint8Array | string) => void
  readonly exists: (path: string) => boolean
}

/** What a script may call on an adapter: each function takes and returns plain data or bytes. */
export type AdapterFunctions = Readonly<Record<string, (...args: ReadonlyArray<unknown>) => unknown>>

/** Host-side capabilities for scripts. */
export interface AdapterModule {
  readonly _tag: "AdapterModule"
  readonly name: string
  readonly description: string
  /** The body of `/std/<name>/index.d.ts`: the signatures of the functions `create` returns. */
  readonly types: string
  readonly readme: string | undefined
  /**
   * The functions, for one script run. Called once read-only when the environment is opened, to
   * learn the exported names (so a wrong import is refused when the script is written).
   */
  readonly create: (fs: AdapterFs, context: AdapterContext) => AdapterFunctions
}

/** Any module an environment offers. */
export type EnvironmentModule = PureModule | ToolsModule | AdapterModule

/** A package bundled into the sandbox: `import { read, utils } from "env:<name>"`. */
export const definePureModule = (definition: {
  readonly name: string
  readonly from: string
  readonly pick: ReadonlyArray<string>
  readonly description?: string
  readonly types?: string
  readonly readme?: string
}): PureModule =>
  Object.freeze({
    _tag: "PureModule",
    name: definition.name,
    description: definition.description ?? `the ${definition.from} package (${definition.pick.join(", ")})`,
    from: definition.from,
    pick: Object.freeze([...definition.pick]),
    types: definition.types,
    readme: definition.readme
  })

/**
 * Foundry tools as async functions for scripts, named by their keys:
 * `defineTools({ name: "orders", tools: { lookup: lookupOrder } })` is
 * `import { lookup } from "env:orders"`.
 */
export const defineTools = (definition: {
  readonly name: string
  readonly tools?: Readonly<Record<string, AnyTool>>
  /** Also every tool of this MCP server of the agent: `defineTools({ name: "desk", mcp: "helpdesk" })`. */
  readonly mcp?: string
  readonly description?: string
}): ToolsModule =>
  Object.freeze({
    _tag: "ToolsModule",
    name: definition.name,
    description: definition.description ??
      (definition.mcp === undefined ? "tools of this project, as async functions" : `the tools of the MCP server ${definition.mcp}, as async functions`),
    tools: Object.freeze({ ...definition.tools }),
    mcp: definition.mcp
  })

/** Host-side capabilities for scripts: `import { ... } from "env:<name>"`. */
export const defineAdapter = (definition: {
  readonly name: string
  readonly description: string
  readonly types: string
  readonly readme?: string
  readonly create: (fs: AdapterFs, context: AdapterContext) => AdapterFunctions
}): AdapterModule =>
  Object.freeze({
    _tag: "AdapterModule",
    name: definition.name,
    description: definition.description,
    types: definition.types,
    readme: definition.readme,
    create: definition.create
  })
