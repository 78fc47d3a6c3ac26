/**
 * Loads a project's route files, one build (`generation`) at a time: a new generation
 * re-evaluates the project's files (helpers included) while the framework and packages stay
 * loaded, so `foundry dev` reloads without restarting.
 *
 * When the framework runs built, the project is bundled with esbuild (`routeBundle.ts`) and Node
 * imports the bundle natively. From its sources (the test suite), route files load through Node's
 * loader with `tsx` and Foundry's module hooks (`moduleHooks.mjs`), with `?foundry-gen=N` on every
 * project file, so that tests and the framework share one copy of the framework and of Effect.
 */
import { existsSync } from "node:fs"
import { createRequire, register } from "node:module"
import { join } from "node:path"
import { pathToFileURL } from "node:url"
import { packageLayout } from "../packageLayout.js"
import { guardEvaluation } from "./evaluationGuard.js"
import { type BundledEntries, bundleFolder, bundleRoutes } from "./routeBundle.js"
import { configFiles, listRouteFiles, routeFilesOf } from "./RoutePath.js"

let registered = false

/** Installs the TypeScript loader and Foundry's module hooks once per process (sources only). */
const registerRouteLoader = async (): Promise<void> => {
  if (registered) return
  registered = true
  const { register: registerTsx } = await import("tsx/esm/api")
  registerTsx()
  register(packageLayout.hooksUrl, {
    data: { entryUrl: packageLayout.entryUrl, frameworkUrl: pathToFileURL(`${packageLayout.root}/`).href }
  })
}

const loaded: unknown = createRequire(import.meta.url)(packageLayout.nativeImportFile)

/** Node's own `import()`, out of reach of test runners that rewrite it. */
const nativeImport = (specifier: string): Promise<unknown> => {
  if (typeof loaded !== "object" || loaded === null || !("nativeImport" in loaded) || typeof loaded.nativeImport !== "function") {
    return Promise.reject(new Error(`foundry: ${packageLayout.nativeImportFile} is missing or broken`))
  }
  return Promise.resolve(loaded.nativeImport(specifier))
}

/**
 * The route files of the project and its config file: the bundle's entries. A second file with a
 * route's id is none (discovery reports it): bundled too, its output would take the first one's.
 */
const entriesOf = (root: string): ReadonlyArray<string> => [
  ...routeFilesOf(listRouteFiles(root)).routes.map((route) => route.file),
  ...configFiles.filter((file) => existsSync(join(root, file)))
]

// One bundle per project and generation; the config and the routes of a build share it.
const bundles = new Map<string, Promise<BundledEntries>>()

const bundleOf = (root: string, generation: number): Promise<BundledEntries> => {
  const key = `${root}\u0000${generation}`
  const cached = bundles.get(key)
  if (cached !== undefined) return cached
  const made = Promise.resolve().then(() => bundleRoutes(root, entriesOf(root), bundleFolder(root, generation)))
  bundles.set(key, made)
  for (const old of bundles.keys()) if (old.startsWith(`${root}\u0000`) && old !== key) bundles.delete(old)
  return made
}

/**
 * Forgets the bundles made of the project at `root`, whose folder (with the bundles in its
 * `.foundry/`) was removed: the release cache lets go of a release a dry run loaded. Its next load
 * bundles it anew, into the same place, so that the modules Node already holds are the same
 * files again and a chunk imported lazily (`await import()`) is there to load.
 */
export const forgetBundles = (root: string): void => {
  for (const key of bundles.keys()) if (key.startsWith(`${root}\u0000`)) bundles.delete(key)
}

/** Imports the route file `file` (relative to `root`) as of build `generation`. */
export const importRouteModule = async (root: string, file: string, generation: number): Promise<unknown> => {
  if (!packageLayout.built) {
    await registerRouteLoader()
    return nativeImport(`${pathToFileURL(join(root, file)).href}?foundry-gen=${generation}`)
  }
  // A route's stack trace names its source file and line, not the bundle's chunk.
  process.setSourceMapsEnabled(true)
  const entry = (await bundleOf(root, generation)).get(file)
  if (entry === undefined) throw new Error(`${file} is not a route file or config of this project`)
  if (entry._tag === "Broken") throw new Error(entry.message)
  guardEvaluation(entry.url, file)
  return nativeImport(entry.url)
}
