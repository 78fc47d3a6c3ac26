/**
 * Whether a folder is a Foundry project: commands that read or serve one refuse a folder that is
 * none (a command run from the wrong folder, a mistyped `--dir`), rather than answering for an
 * empty project and leaving a `.foundry/` store behind.
 */
import { existsSync, statSync } from "node:fs"
import { join } from "node:path"
import { releaseFile } from "../release/ReleaseManifest.js"
import { configFiles } from "../router/RoutePath.js"

/** What a project folder holds at least one of. */
const projectMarkers = [...configFiles, "agents", "tools", "playbooks", "schedules", "environments", "mcp"]

/**
 * Why `given` (as typed; `dir` resolved) is no folder, with how to go on; `undefined` for a folder.
 * @effect/cli's own check said only "Path 'x' must exist".
 */
export const noFolder = (given: string, dir: string): string | undefined => {
  const stats = statSync(dir, { throwIfNoEntry: false })
  if (stats === undefined) {
    return `there is no folder ${given} (${dir}): pass the project's folder, or create a project there with \`foundry init ${given}\``
  }
  return stats.isDirectory() ? undefined : `${given} is a file, not a folder: pass the project's folder (the one with foundry.config.ts or agents/)`
}

/** Why `dir` is no project, with how to fix it; `undefined` for a project. */
export const notAProject = (dir: string): string | undefined =>
  projectMarkers.some((marker) => existsSync(join(dir, marker)))
    ? undefined
    : `${dir} is not a Foundry project: it has no foundry.config.ts and no agents/ folder. ` +
      "Pass the project's folder, or create one with `foundry init <dir>`"

/** `notAProject`, where a release folder built by `foundry build` (which carries its project's config) will do too. */
export const notAProjectOrRelease = (dir: string): string | undefined =>
  existsSync(join(dir, releaseFile)) ? undefined : notAProject(dir)
