/**
 * Where the framework's own files are. Foundry runs either built (`dist/`, what `bin/foundry.js`
 * and an installed package load) or from its TypeScript sources (the test suite imports `src/`
 * directly). Everything that needs a file of the framework at run time (the route loader's hooks,
 * the inspector's assets, the types `foundry check` uses) asks here instead of computing a path
 * relative to its own module, which a bundle would move.
 */
import { existsSync, readFileSync } from "node:fs"
import { dirname, join } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

/** The framework's files, for the way it is running now. */
export interface PackageLayout {
  /** The package folder (holding `package.json`). */
  readonly root: string
  /** Whether the framework runs from `dist/` (else from `src/`). */
  readonly built: boolean
  /** The module that `import ... from "foundry"` means in a route file. */
  readonly entryUrl: string
  /** Node module hooks for route files when running from the sources (a built framework bundles them). */
  readonly hooksUrl: string
  /** The CommonJS file whose `import()` loads route files through Node's own loader. */
  readonly nativeImportFile: string
  /** tsc with the questions it asks the file system written down, to know when a check would repeat itself. */
  readonly tracedTscFile: string
  /** The worker thread that runs environment scripts (`sandboxBootstrap.js` and `sandboxLibrary.js` sit beside it). */
  readonly sandboxWorkerFile: string
  /** The worker thread that compiles scripts with an esbuild of its own (`ScriptCompiler`). */
  readonly compileWorkerFile: string
  /** The bundled copy of `effect` that route files share with the framework; only when built. */
  readonly vendorDir: string | undefined
  /** The inspector: prebuilt assets (built), or its sources to bundle when first served. */
  readonly inspector: { readonly _tag: "Prebuilt"; readonly dir: string } | { readonly _tag: "Source"; readonly dir: string }
  /** What type-checkers resolve `foundry` to: declarations when built with them, else the sources. */
  readonly typesEntry: string
}

const packageName = "foundry"

const isPackageRoot = (dir: string): boolean => {
  const file = join(dir, "package.json")
  if (!existsSync(file)) return false
  const json: unknown = JSON.parse(readFileSync(file, "utf8"))
  return typeof json === "object" && json !== null && "name" in json && json.name === packageName
}

const findRoot = (from: string): string => {
  for (let dir = from; ; dir = dirname(dir)) {
    if (isPackageRoot(dir)) return dir
    if (dirname(dir) === dir) throw new Error(`foundry: no package.json named "${packageName}" above ${from}`)
  }
}

const layoutOf = (moduleUrl: string): PackageLayout => {
  const here = fileURLToPath(moduleUrl)
  const root = findRoot(dirname(here))
  const built = !here.endsWith(".ts")
  const dist = join(root, "dist")
  const declarations = join(dist, "types/index.d.ts")
  return {
    root,
    built,
    entryUrl: pathToFileURL(built ? join(dist, "index.js") : join(root, "src/index.ts")).href,
    hooksUrl: pathToFileURL(join(root, "src/router/moduleHooks.mjs")).href,
    nativeImportFile: built ? join(dist, "nativeImport.cjs") : join(root, "src/router/nativeImport.cjs"),
    tracedTscFile: built ? join(dist, "tracedTsc.cjs") : join(root, "src/compiler/tracedTsc.cjs"),
    sandboxWorkerFile: built ? join(dist, "sandboxWorker.mjs") : join(root, "src/environments/script/sandboxWorker.mjs"),
    compileWorkerFile: built ? join(dist, "compileWorker.mjs") : join(root, "src/environments/script/compileWorker.mjs"),
    vendorDir: built ? join(dist, "vendor") : undefined,
    inspector: built ? { _tag: "Prebuilt", dir: join(dist, "inspector") } : { _tag: "Source", dir: join(root, "inspector") },
    typesEntry: existsSync(declarations) ? declarations : join(root, "src/index.ts")
  }
}

/** The layout of the running framework. */
export const packageLayout: PackageLayout = layoutOf(import.meta.url)
