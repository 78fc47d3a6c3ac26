/**
 * Which build of a project a release id names: a folder built by `foundry build` has its own,
 * sources are named by a hash of what they hold.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { contentHash } from "../release/contentHash.js"
import { releaseIdAt } from "../release/ReleaseManifest.js"
import { listProjectSources } from "../router/projectSources.js"
import { listRouteFiles } from "../router/RoutePath.js"

/** A file's bytes; one deleted since it was listed is hashed as absent (the next build sees the deletion). */
const contentOf = (path: string): Uint8Array => {
  try {
    return readFileSync(path)
  } catch {
    return new Uint8Array()
  }
}

/**
 * The release of the project at `root`: a folder built by `foundry build` is its `rel_` id (from
 * `release.json`); sources are `dev-` and a short hash of every file under the route folders, of
 * the config file and of every other source the project may import (helpers in `lib/`, shared
 * modules: what `foundry dev` watches), names and contents. Two builds of the same sources share a
 * release; any edit, addition, removal or rename makes a new one, so events say which build wrote them.
 */
export const releaseOf = (root: string, configFile: string | undefined): string => {
  const built = releaseIdAt(root)
  if (built !== undefined) return built
  const { files } = listRouteFiles(root)
  const sources = new Set([...(configFile === undefined ? [] : [configFile]), ...files, ...listProjectSources(root)])
  const hash = contentHash([...sources].sort().map((file) => ({ file, content: contentOf(join(root, file)) })))
  return `dev-${hash.slice(0, 12)}`
}

/** Whether `release` is a build of a project's sources (`releaseOf`'s `dev-<hash>`), not a release built by `foundry build`. */
export const isSourcesBuild = (release: string): boolean => release.startsWith("dev-")
