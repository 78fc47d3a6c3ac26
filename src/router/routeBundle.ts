/**
 * A project's route files as one esbuild bundle per build (how a framework that runs built loads
 * them): every route file and the config are entries, split into shared chunks, so that a helper
 * they share is one module, as with Node's own loader. `foundry` and `effect` are the running
 * framework's own files, and Effect's packages (`@effect/*`) are bundled so they use that same
 * `effect`; other packages are left to Node, resolved at bundle time from the importing file (or
 * from the framework, for a project that installs nothing). No loader thread, no TypeScript
 * loader: the bundle is plain JavaScript that Node imports natively.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync } from "node:fs"
import { dirname, join, relative } from "node:path"
import { pathToFileURL } from "node:url"
import type { BuildFailure, BuildOptions, Message, OnResolveArgs, Plugin, PluginBuild, ResolveResult } from "esbuild"
import { packageLayout } from "../packageLayout.js"
import { processEnded } from "../processEnded.js"
import { evaluationBanner } from "./evaluationGuard.js"

/** An entry's module URL, or the build errors that keep it from loading. */
export type BundledEntry = { readonly _tag: "Built"; readonly url: string } | { readonly _tag: "Broken"; readonly message: string }

/** Each entry's module URL, or the build errors that keep it from loading. */
export type BundledEntries = ReadonlyMap<string, BundledEntry>

/** Whether `specifier` names a package (`effect`, `@scope/name/sub`), not a file or a `node:`-style URL. */
export const isBare = (specifier: string): boolean => !/^(\.|\/|[a-z][a-z0-9+.-]*:)/i.test(specifier)

/**
 * Resolves a package import as the importing file sees it, else as the framework does (a project
 * that installs nothing still gets the packages the framework has). Plugins mark their own calls
 * with `pluginData: "resolving"` and leave those alone.
 */
export const resolvePackage = async (build: PluginBuild, args: OnResolveArgs): Promise<ResolveResult | undefined> => {
  for (const resolveDir of [args.resolveDir, packageLayout.root]) {
    const found = await build.resolve(args.path, { kind: args.kind, resolveDir, pluginData: "resolving" })
    if (found.errors.length === 0 && found.path !== "") return found
  }
  return undefined
}

const vendored = (specifier: string): string | undefined => {
  const vendor = packageLayout.vendorDir
  if (vendor === undefined) return undefined
  if (specifier === "effect") return pathToFileURL(join(vendor, "effect/index.js")).href
  return /^effect\/[A-Za-z]+$/.test(specifier) ? pathToFileURL(join(vendor, `${specifier}.js`)).href : undefined
}

/** Resolves the framework's own modules to its files, and leaves packages to Node at their resolved paths. */
const frameworkResolution: Plugin = {
  name: "foundry-resolution",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === "resolving" || !isBare(args.path)) return undefined
      if (args.path === "foundry") return { path: packageLayout.entryUrl, external: true }
      const vendor = vendored(args.path)
      if (vendor !== undefined) return { path: vendor, external: true }
      // Effect's own packages are bundled, so that their `effect` is the framework's copy too.
      const inline = args.path.startsWith("@effect/")
      const found = await resolvePackage(build, args)
      if (found === undefined) return undefined
      if (found.external) return { path: args.path, external: true }
      return inline ? { path: found.path } : { path: pathToFileURL(found.path).href, external: true }
    })
    // A route file that reads a file beside it by `import.meta.url` must see its own place, not the bundle's.
    build.onLoad({ filter: /\.(m?[jt]s)$/ }, (args) => {
      if (args.path.includes("/node_modules/")) return undefined
      const source = readFileSync(args.path, "utf8")
      const url = JSON.stringify(pathToFileURL(args.path).href)
      const contents = source.includes("import.meta.url") ? source.replaceAll("import.meta.url", url) : source
      return { contents, loader: args.path.endsWith("ts") ? "ts" : "js" }
    })
  }
}

/** An esbuild message as one line, with the project-relative place it points at. */
export const describe = (root: string, message: Message): string => {
  const at = message.location === null
    ? ""
    : ` (${relative(root, join(root, message.location.file))}:${message.location.line}:${message.location.column + 1})`
  return `${message.text}${at}`
}

/** Whether an error thrown by esbuild's `build` is a failed build (rather than a crash). */
export const isBuildFailure = (error: unknown): error is BuildFailure =>
  error instanceof Error && "errors" in error && Array.isArray(error.errors)

/**
 * What every bundle of a project's route files shares: one entry per file (`entries`, relative to
 * `root`), each output keeping its project-relative path, ES modules split into shared chunks so
 * that a module two route files import stays one module.
 */
export const routeBuildOptions = (root: string, entries: ReadonlyArray<string>) => ({
  absWorkingDir: root,
  entryPoints: entries.map((file) => join(root, file)),
  outbase: root,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  logLevel: "silent"
} satisfies BuildOptions)

/** Bundles `entries` (project-relative files) of the project at `root` into `outdir`; with `write: false`, only checks that they bundle. */
const bundle = async (root: string, entries: ReadonlyArray<string>, outdir: string, write = true): Promise<void> => {
  const { build } = await import("esbuild")
  await build({
    ...routeBuildOptions(root, entries),
    outdir,
    write,
    // For stack traces (Node holds a loaded module's map for good: no sources in it, only lines).
    sourcemap: "linked",
    sourcesContent: false,
    // .mjs: the bundle is ES modules whatever the project's package.json says about "type".
    outExtension: { ".js": ".mjs" },
    // Every module, chunks too, says when its top level starts (`evaluationGuard.ts`).
    banner: { js: evaluationBanner },
    plugins: [frameworkResolution]
  })
}

const outputOf = (outdir: string, file: string): string => pathToFileURL(join(outdir, file.replace(/\.m?[jt]s$/, ".mjs"))).href

/**
 * Bundles the entries into `outdir`. When the whole fails (a syntax error somewhere), each entry is
 * bundled alone to find the broken ones, each saying why; the sound ones are then bundled together
 * again, so that a module they share (an agent a playbook imports) is still one module.
 */
export const bundleRoutes = async (root: string, entries: ReadonlyArray<string>, outdir: string): Promise<BundledEntries> => {
  const results = new Map<string, BundledEntry>()
  const built = (files: ReadonlyArray<string>) => {
    for (const file of files) results.set(file, { _tag: "Built", url: outputOf(outdir, file) })
    return results
  }
  const brokenBy = (failure: BuildFailure): BundledEntry => ({ _tag: "Broken", message: failure.errors.map((m) => describe(root, m)).join("\n") })
  const failureOf = async (files: ReadonlyArray<string>, write: boolean): Promise<BuildFailure | undefined> => {
    try {
      await bundle(root, files, outdir, write)
      return undefined
    } catch (error) {
      if (!isBuildFailure(error)) throw error
      return error
    }
  }
  if (await failureOf(entries, true) === undefined) return built(entries)
  for (const file of entries) {
    const failure = await failureOf([file], false)
    if (failure !== undefined) results.set(file, brokenBy(failure))
  }
  const sound = entries.filter((file) => !results.has(file))
  const together = sound.length === 0 ? undefined : await failureOf(sound, true)
  if (together === undefined) return built(sound)
  // Each bundles alone but not with the others: said of every one of them rather than hidden.
  for (const file of sound) results.set(file, brokenBy(together))
  return results
}

const processTag = `${process.pid}-${Date.now().toString(36)}`
const staleAfterMs = 60 * 60 * 1000

/**
 * Whether another process's bundle folder `entry` (`<pid>-<tag>`) may be removed: untouched for an
 * hour, and its process gone. A server that has not bundled for an hour still imports from it (a
 * chunk a route imports lazily, when a run first needs it).
 */
const abandoned = (entry: string, folder: string): boolean => {
  if (entry === processTag || Date.now() - statSync(folder).mtimeMs <= staleAfterMs) return false
  const pid = Number(entry.split("-")[0])
  // A pid another process took since keeps the folder until that one ends too: only disk is lost.
  return !Number.isSafeInteger(pid) || pid <= 0 || processEnded(pid)
}

/**
 * The folder for build `generation` of this process: `.foundry/routes/<process>/<generation>`.
 * Older generations of this process (beyond the last two) and the folders of processes that have
 * ended, untouched for an hour, are removed.
 */
export const bundleFolder = (root: string, generation: number): string => {
  const base = join(root, ".foundry/routes")
  const mine = join(base, processTag)
  mkdirSync(mine, { recursive: true })
  for (const entry of readdirSync(base)) {
    const folder = join(base, entry)
    if (abandoned(entry, folder)) rmSync(folder, { recursive: true, force: true })
  }
  for (const entry of readdirSync(mine)) {
    if (Number(entry) < generation - 2) rmSync(join(mine, entry), { recursive: true, force: true })
  }
  const folder = join(mine, String(generation))
  if (existsSync(folder)) rmSync(folder, { recursive: true, force: true })
  mkdirSync(dirname(folder), { recursive: true })
  return folder
}
