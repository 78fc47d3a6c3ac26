/**
 * Whether a folder is a Foundry project: commands that read or serve one refuse a folder that is
 * none (a command run from the wrong folder, a mistyped `--dir`), rather than answering for an
 * empty project and leaving a `.foundry/` store behind.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { releaseFile } from "../release/ReleaseManifest.js"
import { configFiles } from "../router/RoutePath.js"

/** What a project folder holds at least one of. */
const projectMarkers = [...configFiles, "agents", "tools", "playbooks", "schedules", "environments", "mcp"]

/** Why `dir` is no project, with how to fix it; `undefined` for a project. */
export const notAProject = (dir: string): string | undefined =>
  projectMarkers.some((marker) => existsSync(join(dir, marker)))
    ? undefined
    : `${dir} is not a Foundry project: it has no foundry.config.ts and no agents/ folder. ` +
      "Pass the project's folder, or create one with `foundry init <dir>`"

/** `notAProject`, where a release folder built by `foundry build` (which carries its project's config) will do too. */
export const notAProjectOrRelease = (dir: string): string | undefined =>
  existsSync(join(dir, releaseFile)) ? undefined : notAProject(dir)
