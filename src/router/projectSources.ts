/**
 * The files of a project its code may be made of: routes, the config, and helpers anywhere in the
 * folder (`lib/`, shared modules), by extension, outside `node_modules` and dot-folders (the
 * store and the generated files live in `.foundry/`). What `foundry dev` watches, and what names a
 * build of the sources.
 */
import { type Dirent, readdirSync, realpathSync, statSync } from "node:fs"
import { join } from "node:path"
import { configFiles } from "./RoutePath.js"

/** Extensions of files a project can import, including JSON (and so `package.json`, `tsconfig.json`). */
const sourceExtensions = [".ts", ".mts", ".cts", ".js", ".mjs", ".cjs", ".json"]

/** Whether a project-relative path is in no place sources are looked for: `node_modules`, or a dot-file or dot-folder. */
export const isIgnored = (file: string): boolean => file.split("/").some((segment) => segment === "node_modules" || segment.startsWith("."))

/** Whether a project-relative file is one the project's code may be made of. */
export const isSource = (file: string): boolean =>
  sourceExtensions.some((extension) => file.endsWith(extension)) || configFiles.includes(file)

const entriesOf = (folder: string): ReadonlyArray<Dirent> => {
  try {
    return readdirSync(folder, { withFileTypes: true })
  } catch {
    // Gone or unreadable since its folder was read: what it held is no source of this build.
    return []
  }
}

/**
 * Whether `path` (a symbolic link, say) is a folder; not when it leads nowhere. Never throws: the
 * watcher asks it inside parcel's callback, where an exception would crash the process.
 */
export const isFolder = (path: string): boolean => {
  try {
    return statSync(path).isDirectory()
  } catch {
    return false
  }
}

/** Every source file of the project at `root`, relative with `/` separators, sorted; a folder linked into itself is walked once. */
export const listProjectSources = (root: string): ReadonlyArray<string> => {
  const files: Array<string> = []
  const walk = (folder: string, ancestors: ReadonlySet<string>): void => {
    const real = (() => {
      try {
        return realpathSync(join(root, folder))
      } catch {
        return undefined
      }
    })()
    if (real === undefined || ancestors.has(real)) return
    const inside = new Set([...ancestors, real])
    for (const entry of entriesOf(join(root, folder))) {
      if (isIgnored(entry.name)) continue
      const file = folder === "" ? entry.name : `${folder}/${entry.name}`
      const folderNow = entry.isDirectory() || (entry.isSymbolicLink() && isFolder(join(root, file)))
      if (folderNow) walk(file, inside)
      else if (isSource(file)) files.push(file)
    }
  }
  walk("", new Set())
  return files.sort()
}
