/**
 * What a deploy changes: the agents, tools, MCP servers, schedules and playbooks one release adds,
 * removes and changes against another, and whether its config changed. A route (or the config)
 * changed when the code it runs changed: the sources it was bundled from, as `release.json` digests
 * them; in a folder without them (a release built before, a project's own files), its file and
 * every file it imports within the folder, read byte for byte.
 */
import { createHash } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"
import { Effect, Option, Schema } from "effect"
import type { RouteTable } from "../router/RouteTable.js"
import { bundleRelease, releaseEntries } from "./bundleRelease.js"
import { releaseFile } from "./ReleaseManifest.js"
import { type SourceDigests, sourceKey } from "./sourceDigests.js"

/** What changed for one kind of route, by id. */
export const RouteChanges = Schema.Struct({
  added: Schema.Array(Schema.String),
  removed: Schema.Array(Schema.String),
  changed: Schema.Array(Schema.String)
})

/** What changed per kind of route, and whether the config did. */
export const ReleaseSummary = Schema.Struct({
  agents: RouteChanges,
  tools: RouteChanges,
  mcpServers: RouteChanges,
  schedules: RouteChanges,
  playbooks: RouteChanges,
  /** The config file (or what it imports) changed: layers, auth, limits, webhooks. Summaries kept before it was said read as unchanged. */
  config: Schema.optionalWith(Schema.Boolean, { default: () => false })
})
export type ReleaseSummary = typeof ReleaseSummary.Type

/** A kind of route the summary reports. */
export type RouteKind = Exclude<keyof ReleaseSummary, "config">

type Kind = RouteKind

/** A route as the summary compares it: its kind, id and file (relative to its release's folder). */
export interface SummaryRoute {
  readonly kind: Kind
  readonly id: string
  readonly file: string
}

/** The routes of a loaded project. */
export const routesOfTable = (table: RouteTable): ReadonlyArray<SummaryRoute> => [
  ...table.agents.map((route) => ({ kind: "agents" as const, id: route.id, file: route.file })),
  ...table.tools.map((route) => ({ kind: "tools" as const, id: route.id, file: route.file })),
  ...table.mcpServers.map((route) => ({ kind: "mcpServers" as const, id: route.id, file: route.file })),
  ...table.schedules.map((route) => ({ kind: "schedules" as const, id: route.id, file: route.file })),
  ...table.playbooks.map((route) => ({ kind: "playbooks" as const, id: route.id, file: route.file }))
]

const manifestKinds: Readonly<Record<string, Kind>> = {
  agent: "agents",
  tool: "tools",
  mcp: "mcpServers",
  schedule: "schedules",
  playbook: "playbooks"
}

const ManifestRoutes = Schema.Struct({
  config: Schema.optional(Schema.NullOr(Schema.String)),
  routes: Schema.Array(Schema.Struct({ kind: Schema.String, id: Schema.String, file: Schema.String }))
})

/** The config file `release.json`'s manifest names, when it names one. */
export const configOfManifest = (manifest: unknown): string | undefined => {
  const decoded = Schema.decodeUnknownOption(ManifestRoutes)(manifest)
  return decoded._tag === "None" ? undefined : decoded.value.config ?? undefined
}

/** The routes `release.json`'s manifest lists (by their source files); none when it lists none. */
export const routesOfManifest = (manifest: unknown): ReadonlyArray<SummaryRoute> => {
  const decoded = Schema.decodeUnknownOption(ManifestRoutes)(manifest)
  if (decoded._tag === "None") return []
  return decoded.value.routes.flatMap((route) => {
    const kind = manifestKinds[route.kind]
    return kind === undefined ? [] : [{ kind, id: route.id, file: route.file }]
  })
}

// Relative imports as esbuild writes them: `from "./x.js"`, `import "./x.js"`, `import("./x.js")`.
const relativeImport = /(?:\bfrom\s*|\bimport\s*\(?\s*)["'](\.{1,2}\/[^"']+)["']/g

/** The file a route's source path is in a release: `x.ts` was bundled to `x.js`. */
const builtFile = (folder: string, file: string): string => {
  const bundled = file.replace(/\.[cm]?[jt]sx?$/, ".js")
  return existsSync(join(folder, bundled)) ? bundled : file
}

/** A digest of `file` and every file it imports within `folder`, transitively. */
const codeDigest = (folder: string, file: string): string => {
  const hash = createHash("sha256")
  const seen = new Set<string>()
  const pending = [normalize(file)]
  while (pending.length > 0) {
    const next = pending.pop()
    if (next === undefined || seen.has(next) || next.startsWith("..")) continue
    seen.add(next)
    const path = join(folder, next)
    if (!existsSync(path)) continue
    const content = readFileSync(path)
    hash.update(`${next}:${content.byteLength}:`).update(content)
    for (const match of content.toString("utf8").matchAll(relativeImport)) {
      const specifier = match[1]
      if (specifier !== undefined) pending.push(relative(folder, join(folder, dirname(next), specifier)))
    }
  }
  return hash.digest("hex")
}

/** A release's routes with the digest of their code, by `<kind>:<id>`, and its config's under `config`. */
export type RouteDigests = ReadonlyMap<string, string>

const configKey = "config"

const decodeSources = Schema.decodeUnknownOption(Schema.parseJson(Schema.Struct({
  sources: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String }))
})))

/**
 * The digests of the sources the routes of `table` run: a release's, as its `release.json` holds
 * them (none in one built before they were kept); a project's sources', bundled as a release of
 * them would be, so that a server serving its sources and a release of them compare alike.
 */
export const sourcesOf = (table: RouteTable): Effect.Effect<SourceDigests | undefined> => {
  const file = join(table.root, releaseFile)
  if (existsSync(file)) return Effect.succeed(Option.getOrUndefined(Option.flatMapNullable(decodeSources(readFileSync(file, "utf8")), (manifest) => manifest.sources)))
  return bundleRelease(table.root, releaseEntries(table)).pipe(
    Effect.map((bundled): SourceDigests | undefined => bundled.sources),
    // Sources that no longer bundle: compared file by file instead.
    Effect.orElseSucceed(() => undefined)
  )
}

/** Digests the routes of the release in `folder`, and its config file when it has one, by their `sources` when known. */
export const routeDigests = (
  folder: string,
  routes: ReadonlyArray<SummaryRoute>,
  configFile: string | undefined,
  sources: SourceDigests | undefined
): RouteDigests => {
  // Marked by where they come from, so that a release digested one way never equals one digested the other.
  const digestOf = (file: string) => {
    const fromSources = sources?.[sourceKey(file)]
    return fromSources === undefined ? `files:${codeDigest(folder, builtFile(folder, file))}` : `sources:${fromSources}`
  }
  return new Map([
    ...routes.map((route): [string, string] => [`${route.kind}:${route.id}`, digestOf(route.file)]),
    ...(configFile === undefined ? [] : [[configKey, digestOf(configFile)] as const])
  ])
}

/** What `after` adds, removes and changes against `before` (everything is added against nothing). */
export const summarize = (before: RouteDigests | undefined, after: RouteDigests): ReleaseSummary => {
  const previous = before ?? new Map<string, string>()
  const changesOf = (kind: Kind) => {
    const idsOf = (routes: RouteDigests) =>
      [...routes.keys()].filter((key) => key.startsWith(`${kind}:`)).map((key) => key.slice(kind.length + 1)).sort()
    const digestOf = (routes: RouteDigests, id: string) => routes.get(`${kind}:${id}`)
    return {
      added: idsOf(after).filter((id) => digestOf(previous, id) === undefined),
      removed: idsOf(previous).filter((id) => digestOf(after, id) === undefined),
      changed: idsOf(after).filter((id) => {
        const had = digestOf(previous, id)
        return had !== undefined && had !== digestOf(after, id)
      })
    }
  }
  return {
    agents: changesOf("agents"),
    tools: changesOf("tools"),
    mcpServers: changesOf("mcpServers"),
    schedules: changesOf("schedules"),
    playbooks: changesOf("playbooks"),
    // Against nothing, a config is the release's first: a change only when one was there before.
    config: before !== undefined && previous.get(configKey) !== after.get(configKey)
  }
}
