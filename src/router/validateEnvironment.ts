/**
 * The checks of an environment definition the type checker may not have seen: module names that
 * scripts can import, no two modules of one name, limits that are positive numbers, and paths
 * that are paths.
 */
import { builtinModuleNames, type EnvironmentModule, moduleNameRule } from "../definitions/environmentModules.js"
import { defaultEnvironmentLimits } from "../definitions/defineEnvironment.js"

/** A problem with the definition, without the file (the caller adds it). */
interface Problem {
  readonly problem: string
  readonly fix: string
}

const isModule = (value: unknown): value is EnvironmentModule =>
  typeof value === "object" && value !== null && "_tag" in value &&
  (value._tag === "PureModule" || value._tag === "ToolsModule" || value._tag === "AdapterModule")

const checkModules = (modules: unknown): Array<Problem> => {
  if (!Array.isArray(modules)) return [{ problem: "modules is not an array", fix: "use modules: [definePureModule({ ... }), defineAdapter({ ... })]" }]
  const seen = new Set<string>(builtinModuleNames)
  const problems: Array<Problem> = []
  for (const [index, module] of modules.entries()) {
    if (!isModule(module)) {
      problems.push({ problem: `modules[${index}] is not a module`, fix: "make it with definePureModule, defineTools or defineAdapter from \"foundry\"" })
      continue
    }
    if (!moduleNameRule.test(module.name)) {
      problems.push({ problem: `module name "${module.name}" cannot be imported as env:${module.name}`, fix: "use lower-case letters, digits and -, starting with a letter (e.g. \"sheets\")" })
    } else if (seen.has(module.name)) {
      problems.push({
        problem: builtinModuleNames.includes(module.name) ? `module name "${module.name}" is taken by the built-in env:${module.name}` : `two modules are named "${module.name}"`,
        fix: "give one of them another name"
      })
    }
    seen.add(module.name)
    if (module._tag === "ToolsModule") {
      for (const name of Object.keys(module.tools)) {
        if (!/^[A-Za-z_$][A-Za-z0-9_$]*$/.test(name)) problems.push({ problem: `env:${module.name} lists a tool as "${name}", which is not a name a script can import`, fix: "use an identifier as the key: tools: { lookupOrder }" })
      }
    }
    if (module._tag === "PureModule" && module.pick.length === 0) {
      problems.push({ problem: `pure module "${module.name}" picks nothing from ${module.from}`, fix: `list the exports scripts may use: pick: ["read", "utils"]` })
    }
  }
  return problems
}

const limitNames: ReadonlyArray<string> = Object.keys(defaultEnvironmentLimits)

const checkLimits = (limits: unknown): Array<Problem> => {
  if (typeof limits !== "object" || limits === null) return [{ problem: "limits is not an object", fix: "use limits: { scriptTimeoutMs: 10000 }" }]
  return Object.entries(limits).flatMap(([name, value]) =>
    !limitNames.includes(name)
      ? [{ problem: `limits.${name} is not a limit`, fix: `the limits are ${limitNames.join(", ")}` }]
      : typeof value !== "number" || !Number.isFinite(value) || value <= 0
      ? [{ problem: `limits.${name} is ${String(value)}`, fix: `make it a positive number (default ${String(Reflect.get(defaultEnvironmentLimits, name))})` }]
      : []
  )
}

const checkPaths = (paths: unknown): Array<Problem> =>
  Array.isArray(paths) && paths.every((path) => typeof path === "string" && path.length > 0 && !path.split("/").includes(".."))
    ? []
    : [{ problem: "readOnlyPaths must be paths inside the environment", fix: "use readOnlyPaths: [\"/inbox/reference\"]" }]

/** The problems of an environment definition. */
export const checkEnvironment = (_file: string, definition: Record<string, unknown>): Array<Problem> => [
  ...checkModules(definition.modules),
  ...checkLimits(definition.limits),
  ...checkPaths(definition.readOnlyPaths),
  ...(definition.persistence === "instance" || definition.persistence === "conversation"
    ? []
    : [{ problem: `persistence is ${String(definition.persistence)}`, fix: "use persistence: \"instance\" (the default) or \"conversation\"" }])
]
