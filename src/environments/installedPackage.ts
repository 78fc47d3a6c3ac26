/**
 * An npm package as Node would find it from a folder: its folder and version. Pure modules of an
 * environment are bundled from the package found this way, and a build checks they will be.
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"

/** The package a module specifier names: `@scope/name` or `name`, without a subpath. */
export const packageNameOf = (from: string): string => from.split("/").slice(0, from.startsWith("@") ? 2 : 1).join("/")

/** The installed package (its folder and version) that `from` names, looked for as Node would from `resolveFrom`. */
export const installed = (from: string, resolveFrom: string): { readonly dir: string; readonly version: string } | undefined => {
  const name = packageNameOf(from)
  for (let dir = resolveFrom; ; dir = dirname(dir)) {
    const manifest = join(dir, "node_modules", name, "package.json")
    if (existsSync(manifest)) {
      const json: unknown = JSON.parse(readFileSync(manifest, "utf8"))
      const version = typeof json === "object" && json !== null && "version" in json && typeof json.version === "string" ? json.version : "0.0.0"
      return { dir: dirname(manifest), version }
    }
    if (dirname(dir) === dir) return undefined
  }
}
