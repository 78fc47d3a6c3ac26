/**
 * The file-name conventions of DESIGN section 2: which files are routes, of which kind, and
 * which id each gets. Pure functions over project-relative POSIX paths.
 */
import { readdirSync, readlinkSync, realpathSync, statSync } from "node:fs"
import { join } from "node:path"
import type { RouteKind } from "../definitions/RouteKind.js"

/** A file that is a route, before it is loaded. */
export interface RouteFile {
  readonly kind: Exclude<RouteKind, "config">
  readonly id: string
  readonly file: string
  /** For a tool inside an agent's folder, the folder of that agent (relative, without `agents/`). */
  readonly agentFolder?: string
}

/** A file that breaks a naming rule, with the problem and the fix. */
export interface RoutePathProblem {
  readonly file: string
  readonly problem: string
  readonly fix: string
}

const routeExtensions = [".ts", ".mts", ".js", ".mjs"]
const segmentRule = /^[a-z][a-z0-9-]*$/

/** The config file names a project may use. */
export const configFiles = ["foundry.config.ts", "foundry.config.mts", "foundry.config.js", "foundry.config.mjs"]

/** The top-level folders that hold routes. */
export const routeFolders = ["agents", "tools", "mcp", "playbooks", "schedules", "environments"]

/** Helpers are never routes: files starting with `_`, and anything under `lib/` or `_*` folders. */
export const isHelper = (file: string): boolean => {
  const segments = file.split("/")
  const name = segments[segments.length - 1] ?? ""
  return name.startsWith("_") || segments.slice(0, -1).some((s) => s === "lib" || s.startsWith("_"))
}

const stripExtension = (name: string): string | undefined => {
  if (name.endsWith(".d.ts") || name.endsWith(".d.mts")) return undefined
  const extension = routeExtensions.find((e) => name.endsWith(e))
  return extension === undefined ? undefined : name.slice(0, -extension.length)
}

/** A valid id segment suggestion for a bad one, for the fix text. */
const suggest = (segment: string): string =>
  segment
    .replace(/([a-z0-9])([A-Z])/g, "$1-$2")
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, "-")
    .replace(/^[^a-z]+/, "")
    .replace(/-+$/, "") || "name"

const checkId = (file: string, id: string): RoutePathProblem | undefined => {
  const bad = id.split("/").filter((segment) => !segmentRule.test(segment))
  if (bad.length === 0) return undefined
  return {
    file,
    problem: `invalid id "${id}": every path segment must match [a-z][a-z0-9-]* (lowercase, starting with a letter), and ${bad.map((s) => `"${s}"`).join(", ")} does not`,
    fix: `rename ${bad.map((s) => `"${s}" to "${suggest(s)}"`).join(", ")}`
  }
}

/**
 * Classifies one project-relative file. `agentFolders` holds the folders (under `agents/`) that
 * contain an `agent.*` file, so a tool can be given to its nearest agent.
 */
export const classify = (
  file: string,
  agentFolders: ReadonlySet<string>
): RouteFile | RoutePathProblem | undefined => {
  if (isHelper(file)) return undefined
  const [top, ...rest] = file.split("/")
  const relative = rest.join("/")
  const base = stripExtension(relative)
  if (top === undefined || base === undefined || rest.length === 0) return undefined
  const route = (kind: RouteFile["kind"], id: string, agentFolder?: string): RouteFile | RoutePathProblem =>
    checkId(file, id) ?? (agentFolder === undefined ? { kind, id, file } : { kind, id, file, agentFolder })
  switch (top) {
    case "agents": {
      if (base === "agent") {
        return { file, problem: "an agent file directly under agents/ has no id", fix: "move it to agents/<name>/agent.ts" }
      }
      if (base.endsWith("/agent")) return route("agent", base.slice(0, -"/agent".length))
      if (!base.endsWith(".tool")) return undefined
      const toolPath = base.slice(0, -".tool".length)
      const owner = nearestAgent(toolPath, agentFolders)
      if (owner === undefined) {
        return {
          file,
          problem: "a tool file under agents/ that no agent folder contains",
          fix: "put it in the folder of the agent that uses it (next to its agent.ts), or move it to tools/ to share it"
        }
      }
      const inside = toolPath.slice(owner.length + 1).replace(/^tools\//, "")
      return route("tool", `${owner}/${inside}`, owner)
    }
    case "tools":
      return base.endsWith(".tool") ? route("tool", base.slice(0, -".tool".length)) : undefined
    case "mcp":
      return route("mcp", base)
    case "playbooks":
      return route("playbook", base)
    case "schedules":
      return route("schedule", base)
    case "environments":
      return route("environment", base)
    default:
      return undefined
  }
}

const nearestAgent = (toolPath: string, agentFolders: ReadonlySet<string>): string | undefined => {
  const segments = toolPath.split("/")
  for (let length = segments.length - 1; length > 0; length--) {
    const folder = segments.slice(0, length).join("/")
    if (agentFolders.has(folder)) return folder
  }
  return undefined
}

/** The folders under `agents/` that hold an agent file. */
export const agentFoldersOf = (files: ReadonlyArray<string>): ReadonlySet<string> =>
  new Set(
    files.flatMap((file) => {
      if (isHelper(file) || !file.startsWith("agents/")) return []
      const base = stripExtension(file.slice("agents/".length))
      return base !== undefined && base.endsWith("/agent") ? [base.slice(0, -"/agent".length)] : []
    })
  )

/** Whether a classification is a problem rather than a route. */
export const isProblem = (value: RouteFile | RoutePathProblem): value is RoutePathProblem => "problem" in value

/** The files under the project's route folders, and the paths there that cannot be read, each as a problem of its own. */
export interface RouteFolderListing {
  readonly files: ReadonlyArray<string>
  readonly unreadable: ReadonlyArray<RoutePathProblem>
}

const codeOf = (error: unknown): string =>
  error instanceof Error && "code" in error && typeof error.code === "string" ? error.code : String(error)

/** Gone since its folder was read, or never there: the next save's build sees what replaced it. */
const isGone = (error: unknown): boolean => codeOf(error) === "ENOENT" || codeOf(error) === "ENOTDIR"

const linkTarget = (path: string): string | undefined => {
  try {
    return readlinkSync(path)
  } catch {
    return undefined
  }
}

/**
 * What `path` (project-relative `file`) is: a folder, a file, gone (an editor's or `sed -i`'s
 * temporary file renamed away while the folder was read), or a problem: a symbolic link to
 * nothing, or a path Foundry may not read.
 */
const entryAt = (path: string, file: string): "folder" | "file" | "gone" | RoutePathProblem => {
  try {
    return statSync(path).isDirectory() ? "folder" : "file"
  } catch (error) {
    const target = linkTarget(path)
    if (target === undefined && isGone(error)) return "gone"
    if (target === undefined) return unreadable(file, error)
    return {
      file,
      problem: isGone(error)
        ? `a symbolic link to ${target}, which does not exist`
        : `a symbolic link to ${target}, which cannot be followed (${codeOf(error)})`,
      fix: `create ${target} (relative to the link's folder), point the link at a file that exists, or remove the link`
    }
  }
}

const unreadable = (file: string, error: unknown): RoutePathProblem => ({
  file,
  problem: `cannot be read (${codeOf(error)})`,
  fix: "let the user that runs Foundry read it (chmod), or remove it"
})

const realPath = (path: string): string | undefined => {
  try {
    return realpathSync(path)
  } catch {
    return undefined
  }
}

/**
 * Every file under the project's route folders, relative with `/` separators, sorted; dot-files
 * and dot-folders and `node_modules` are not looked into. What is gone by the time it is looked at
 * is not listed; what cannot be read (a symbolic link to nothing) is `unreadable`, so that it is
 * a problem of its own path rather than a crash of the whole build.
 */
export const listRouteFiles = (root: string): RouteFolderListing => {
  const files: Array<string> = []
  const problems: Array<RoutePathProblem> = []
  // A folder linked into one of its own subfolders would be walked forever: its files are listed once.
  const walk = (folder: string, ancestors: ReadonlySet<string>): void => {
    const real = realPath(join(root, folder))
    if (real === undefined || ancestors.has(real)) return
    const entries = (() => {
      try {
        return readdirSync(join(root, folder))
      } catch (error) {
        if (!isGone(error)) problems.push(unreadable(folder, error))
        return []
      }
    })()
    const inside = new Set([...ancestors, real])
    for (const entry of entries) {
      if (entry.startsWith(".") || entry === "node_modules") continue
      visit(`${folder}/${entry}`, inside)
    }
  }
  const visit = (file: string, ancestors: ReadonlySet<string>): void => {
    const found = entryAt(join(root, file), file)
    if (found === "folder") walk(file, ancestors)
    else if (found === "file") files.push(file)
    else if (found !== "gone") problems.push(found)
  }
  for (const folder of routeFolders) {
    const found = entryAt(join(root, folder), folder)
    // A file named like a route folder holds no routes.
    if (found === "folder") walk(folder, new Set())
    else if (typeof found === "object") problems.push(found)
  }
  return { files: files.sort(), unreadable: problems }
}

/**
 * Whether an unreadable path would hold a route: its name is a route's, or it has no extension
 * (a link to a folder of routes, say) and is not a helper folder.
 */
const mayHoldRoutes = (file: string, agentFolders: ReadonlySet<string>): boolean => {
  const name = file.split("/").pop() ?? file
  return classify(file, agentFolders) !== undefined || (!name.includes(".") && !isHelper(`${file}/route.ts`))
}

/**
 * The route files among the listed files, each kind's id once (the first file that has it), and
 * the problems of the others: a name that breaks a rule, an id taken twice, a route that cannot
 * be read (an unreadable path that is no route's, a link to nothing named `notes.md`, is ignored).
 */
export const routeFilesOf = ({ files, unreadable }: RouteFolderListing) => {
  // An agent file that cannot be read still makes its folder an agent's: its tools are its tools.
  const agentFolders = agentFoldersOf([...files, ...unreadable.map((path) => path.file)])
  const problems: Array<RoutePathProblem> = unreadable.filter((path) => mayHoldRoutes(path.file, agentFolders))
  const byId = new Map<string, RouteFile>()
  for (const file of files) {
    const route = classify(file, agentFolders)
    if (route === undefined) continue
    if (isProblem(route)) {
      problems.push(route)
      continue
    }
    const key = `${route.kind}:${route.id}`
    const first = byId.get(key)
    if (first === undefined) byId.set(key, route)
    else {
      problems.push({
        file: route.file,
        problem: `duplicate ${route.kind} id "${route.id}": ${first.file} has the same id`,
        fix: `rename or remove one of ${first.file} and ${route.file}`
      })
    }
  }
  return { routes: [...byId.values()], problems }
}
