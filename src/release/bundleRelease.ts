/**
 * A project's route files and config as the plain JavaScript of a release: one esbuild bundle in
 * memory, each route file an entry at its project-relative path (`agents/support/agent.js`), the
 * modules several of them share in `_chunks/` (a helper folder to the router), so that a value two
 * route files import (an agent a schedule names) is one module, as in the sources.
 *
 * `foundry`, `effect` and Effect's packages stay imports: the server that loads the release
 * provides them (its route loader resolves them to itself, as for any project of `.js` route
 * files). Every other package is bundled in, so a release needs no `node_modules`.
 */
import { join, relative } from "node:path"
import type { Plugin } from "esbuild"
import { Data, Effect } from "effect"
import { describe, isBare, isBuildFailure, resolvePackage, routeBuildOptions } from "../router/routeBundle.js"
import type { RouteTable } from "../router/RouteTable.js"
import type { HashedFile } from "./contentHash.js"
import { sourceDigests, type SourceDigests } from "./sourceDigests.js"

/** The project's files did not bundle; `message` lists esbuild's errors with their places. */
export class ReleaseBundleError extends Data.TaggedError("ReleaseBundleError")<{ readonly message: string }> {}

/** What the server running a release provides itself. */
const providedByServer = (specifier: string): boolean =>
  specifier === "foundry" || specifier === "effect" || specifier.startsWith("effect/") || specifier.startsWith("@effect/")

/** Leaves the server's own modules as imports and bundles every other package in. */
const releaseResolution: Plugin = {
  name: "foundry-release",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === "resolving" || !isBare(args.path)) return undefined
      if (providedByServer(args.path)) return { path: args.path, external: true }
      const found = await resolvePackage(build, args)
      if (found === undefined) return undefined
      return found.external ? { path: args.path, external: true } : { path: found.path }
    })
  }
}

/** The files of a route table a release bundles: every route file and the config. */
export const releaseEntries = (table: RouteTable): ReadonlyArray<string> =>
  [
    ...[table.agents, table.tools, table.mcpServers, table.playbooks, table.schedules, table.environments].flatMap((routes) =>
      routes.map((route) => route.file)
    ),
    ...(table.configFile === undefined ? [] : [table.configFile])
  ].sort()

/** A release's bundled files, sorted by path, and the digest of the sources each entry was bundled from. */
export interface BundledRelease {
  readonly files: ReadonlyArray<HashedFile>
  readonly sources: SourceDigests
}

/**
 * Bundles `entries` (files relative to `root`) into files relative to the release folder. No
 * source maps and no minifying: the release is readable as it is, and the same sources give the
 * same bytes.
 */
export const bundleRelease = Effect.fn("release.bundle")(function*(root: string, entries: ReadonlyArray<string>) {
  // Never written: esbuild needs an output folder to name the files and their imports of each other.
  const outdir = join(root, ".foundry/release-bundle")
  const result = yield* Effect.tryPromise({
    try: async () => {
      const { build } = await import("esbuild")
      return build({
        ...routeBuildOptions(root, entries),
        outdir,
        write: false,
        metafile: true,
        entryNames: "[dir]/[name]",
        chunkNames: "_chunks/[name]-[hash]",
        // Bundled CommonJS packages call `require`; ES modules have none of their own.
        banner: { js: "import { createRequire as __foundryCreateRequire } from \"node:module\"; const require = __foundryCreateRequire(import.meta.url);" },
        plugins: [releaseResolution]
      })
    },
    catch: (error) =>
      new ReleaseBundleError({
        message: isBuildFailure(error) ? error.errors.map((message) => describe(root, message)).join("\n") : String(error)
      })
  })
  const files: ReadonlyArray<HashedFile> = result.outputFiles
    .map((output) => ({ file: relative(outdir, output.path).split("\\").join("/"), content: output.contents }))
    .sort((a, b) => a.file < b.file ? -1 : a.file > b.file ? 1 : 0)
  return { files, sources: sourceDigests(root, result.metafile) } satisfies BundledRelease
})
