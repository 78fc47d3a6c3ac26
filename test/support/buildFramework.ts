/**
 * Vitest's global setup: tests run the `foundry` binary the way users do, so `dist/` must hold
 * the current sources. It is rebuilt when any source is newer: the JavaScript (a few seconds),
 * and the declarations too (about 15 s) when they are older than `src/`, since the package test
 * packs them. Nothing rebuilds `dist/` while tests run.
 */
import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"
import { fileURLToPath } from "node:url"

const root = fileURLToPath(new URL("../../", import.meta.url))

const newest = (path: string): number => {
  const info = statSync(path)
  if (!info.isDirectory()) return info.mtimeMs
  return Math.max(0, ...readdirSync(path).map((entry) => newest(join(path, entry))))
}

const builtAt = (file: string): number => existsSync(join(root, file)) ? statSync(join(root, file)).mtimeMs : 0

/**
 * The arguments of `node` that bring `dist/` up to date with the sources, or nothing when it is:
 * the JavaScript when any source is newer, and the declarations too when they are older than `src/`.
 */
export const buildArgs = (): ReadonlyArray<string> | undefined => {
  const sources = Math.max(...["src", "inspector", "scripts", "package.json"].map((p) => newest(join(root, p))))
  if (builtAt("dist/cli.js") >= sources) return undefined
  const types = builtAt("dist/types/index.d.ts") >= newest(join(root, "src"))
  return ["--import", "tsx", join(root, "scripts/build.ts"), ...(types ? ["--no-types"] : [])]
}

export default function setup(): void {
  // For a run of in-process tests only, while another run uses dist/: leave it as it is.
  if (process.env.FOUNDRY_TEST_NO_BUILD === "1") return
  const args = buildArgs()
  if (args !== undefined) execFileSync(process.execPath, args, { cwd: root, stdio: "inherit" })
}
