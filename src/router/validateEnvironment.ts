/**
 * The checks of an environment definition the type checker may not have seen: module names that
 * scripts can import, no two modules of one name, limits that are positive numbers, paths that are
 * paths, and starting files that are plain paths, outside the generated docs, within the limits.
 */
import { builtinModuleNames, type EnvironmentModule, moduleNameRule } from "../definitions/environmentModules.js"
import { Either } from "effect"
import { defaultEnvironmentLimits } from "../definitions/defineEnvironment.js"
import { generatedPaths } from "../environments/vfs/generatedDocs.js"
import { isWithin, normalizePath } from "../environments/vfs/paths.js"

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

const isLimits = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/**
 * The files the tree starts with: plain paths (no `..`), none where Foundry writes the generated
 * docs, each and all within the byte limits (a tree that starts over them refuses every write).
 */
const checkFiles = (files: unknown, limits: unknown): Array<Problem> => {
  if (typeof files !== "object" || files === null) return [{ problem: "files is not an object", fix: "use files: { \"/inbox/notes.md\": \"...\" }" }]
  const problems: Array<Problem> = []
  const encoder = new TextEncoder()
  let total = 0
  const maxFileBytes = isLimits(limits) && typeof limits.maxFileBytes === "number" ? limits.maxFileBytes : defaultEnvironmentLimits.maxFileBytes
  const maxTotalBytes = isLimits(limits) && typeof limits.maxTotalBytes === "number" ? limits.maxTotalBytes : defaultEnvironmentLimits.maxTotalBytes
  for (const [path, content] of Object.entries(files)) {
    const plain = normalizePath(path)
    if (Either.isLeft(plain) || plain.right !== path) {
      problems.push({ problem: `files has ${JSON.stringify(path)}, which is not a plain path`, fix: Either.isRight(plain) ? `write it as ${plain.right}` : "use a path such as /inbox/notes.md" })
      continue
    }
    if (generatedPaths.some((generated) => isWithin(path, generated))) {
      problems.push({ problem: `files puts ${path} where Foundry writes the environment's docs (${generatedPaths.join(", ")})`, fix: "put it under /inbox or /skills instead" })
    }
    const bytes = typeof content === "string" ? encoder.encode(content).length : 0
    total += bytes
    if (bytes > maxFileBytes) problems.push({ problem: `files has ${path} of ${bytes} bytes, over limits.maxFileBytes (${maxFileBytes})`, fix: "raise limits.maxFileBytes, or start with a smaller file" })
  }
  if (total > maxTotalBytes) problems.push({ problem: `files hold ${total} bytes, over limits.maxTotalBytes (${maxTotalBytes})`, fix: "raise limits.maxTotalBytes, or start with fewer files" })
  return problems
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
  ...checkFiles(definition.files, definition.limits),
  ...(definition.persistence === "instance" || definition.persistence === "conversation"
    ? []
    : [{ problem: `persistence is ${String(definition.persistence)}`, fix: "use persistence: \"instance\" (the default) or \"conversation\"" }])
]
