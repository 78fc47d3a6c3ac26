/**
 * Vitest's global setup: tests run the `foundry` binary the way users do, so `dist/` must hold
 * the current sources. It is rebuilt (JavaScript only, a few seconds) when any source is newer.
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

export default function setup(): void {
  const built = join(root, "dist/cli.js")
  const sources = Math.max(...["src", "inspector", "scripts", "package.json"].map((p) => newest(join(root, p))))
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return
  execFileSync(process.execPath, ["--import", "tsx", join(root, "scripts/build.ts"), "--no-types"], { cwd: root, stdio: "inherit" })
}
