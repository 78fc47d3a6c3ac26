/**
 * What a build checks of routes beyond their definitions, so a project shows it before any run
 * meets it: an environment's packages and folder present, a catalogue MCP server's mount name valid,
 * an installable tool one a model can be offered.
 */
import { existsSync, statSync } from "node:fs"
import { resolve } from "node:path"
import { Either, Schema } from "effect"
import type { EnvironmentDefinition } from "../definitions/defineEnvironment.js"
import type { McpServerDefinition } from "../definitions/defineMcpServer.js"
import { installed, packageNameOf } from "../environments/installedPackage.js"
import { McpServerName } from "../mcp/McpServerSpec.js"
import { packageLayout } from "../packageLayout.js"
import { RouteError } from "../router/RouteError.js"
import type { Route, ToolRoute } from "../router/RouteTable.js"
import { type CompiledTool, mountNameOf } from "./CompiledApp.js"
import { unofferable } from "./compiledTool.js"

/**
 * An environment's pure modules whose package is installed neither in the project nor beside
 * Foundry: found at build time, not by the first script that imports one.
 */
export const missingPackages = (route: Route<EnvironmentDefinition>, root: string): ReadonlyArray<RouteError> =>
  route.definition.modules.flatMap((module) =>
    module._tag !== "PureModule" || installed(module.from, root) !== undefined || installed(module.from, packageLayout.root) !== undefined
      ? []
      : [new RouteError({
        file: route.file,
        problem: `the pure module "${module.name}" is made from "${module.from}", and the package "${packageNameOf(module.from)}" is not installed`,
        fix: `install it in the project (npm install ${packageNameOf(module.from)}), or fix the name in from`
      })])

/**
 * An environment whose directory backend is no folder here: found at build time, not by the
 * first run that opens the environment.
 */
export const missingFolder = (route: Route<EnvironmentDefinition>, root: string): ReadonlyArray<RouteError> => {
  const backend = route.definition.backend
  if (backend._tag !== "Directory") return []
  const folder = resolve(root, backend.path)
  return existsSync(folder) && statSync(folder).isDirectory()
    ? []
    : [new RouteError({
      file: route.file,
      problem: `backend.directory "${backend.path}" is not a folder (${folder} ${existsSync(folder) ? "is a file" : "does not exist"})`,
      fix: "create the folder, or point backend: { directory } at one, relative to the project folder"
    })]
}

/**
 * A catalogue MCP server whose mount name (the last segment of its id) can name no server: every
 * instance could install it, and no run could ever mount it.
 */
export const unmountable = (route: Route<McpServerDefinition>): ReadonlyArray<RouteError> => {
  const name = mountNameOf(route.id)
  if (Either.isRight(Schema.decodeEither(McpServerName)(name))) return []
  const why = name.length > 32
    ? `${name.length} characters, over the 32 a server name may have`
    : `no server name (letters, digits, - and _, no "__")`
  return [new RouteError({
    file: route.file,
    problem: `an installed MCP server is mounted under the last part of its id, "${name}", which is ${why}: no run could mount it`,
    fix: "rename the file to a name of at most 32 letters, digits, - and _ (mcp/<name>.ts, or mcp/<folder>/<name>.ts); " +
      "instances install it again under its new id"
  })]
}

/**
 * An installable shared tool (`compiled` as `route`) that no model could be offered, by the same
 * rules as a tool an agent lists: no agent lists it, so nothing else checks it before an instance
 * installs it and every run of that instance fails at the model.
 */
export const uninstallable = (route: ToolRoute, compiled: CompiledTool | undefined): ReadonlyArray<RouteError> => {
  if (compiled === undefined || route.definition.installable === undefined || route.agent !== undefined) return []
  const problem = unofferable(compiled)
  return problem === undefined ? [] : [
    new RouteError({
      file: route.file,
      problem: `${problem.problem}: the tool is installable, and every run of an instance that installs it would fail at the model`,
      fix: problem.fix
    })
  ]
}
