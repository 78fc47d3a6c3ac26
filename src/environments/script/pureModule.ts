/**
 * A pure module: an npm package bundled with esbuild into code the sandbox evaluates in its own
 * realm, exposing only the names the definition picked. The package may not need Node (no file
 * system, no process, no network): one that imports a Node built-in is refused, naming it. The
 * bundle is checked once by evaluating it in a throwaway context (a name the package does not
 * export is refused) and kept in memory, keyed by package, version and picks.
 */
import { readFileSync } from "node:fs"
import { isBuiltin } from "node:module"
import { dirname, join } from "node:path"
import vm from "node:vm"
import { Data, Effect } from "effect"
import type { Message, Plugin } from "esbuild"
import type { PureModule } from "../../definitions/environmentModules.js"
import { packageLayout } from "../../packageLayout.js"
import { installed, packageNameOf } from "../installedPackage.js"

/** A pure module that cannot be made: the package is missing, needs Node, or lacks a picked name. */
export class PureModuleError extends Data.TaggedError("PureModuleError")<{ readonly module: string; readonly message: string }> {}

/** What to bundle: `pick` of package `from`, as found from `resolveFrom`, for `env:<name>`. */
export interface PureModuleSpec {
  readonly name: string
  readonly from: string
  readonly pick: ReadonlyArray<string>
  readonly resolveFrom: string
}

const bundles = new Map<string, string>()


/** Refuses every import of a Node built-in, naming the built-in and who imports it. */
const noBuiltins = (from: string): Plugin => ({
  name: "foundry-pure-module",
  setup(build) {
    build.onResolve({ filter: /^[^./]/ }, async (args) => {
      if (args.pluginData === "resolving" || !isBuiltin(args.path)) return undefined
      // A package of the same name (a browser polyfill such as `events`) is fine; Node's own is not.
      if (!args.path.startsWith("node:")) {
        const found = await build.resolve(args.path, { kind: args.kind, resolveDir: args.resolveDir, pluginData: "resolving" })
        if (found.errors.length === 0 && found.path !== "") return found
      }
      const by = args.importer.includes("node_modules") ? args.importer.slice(args.importer.lastIndexOf("node_modules/") + 13) : from
      return { errors: [{ text: `${from} needs the Node built-in "${args.path}" (imported by ${by}), which scripts do not have` }] }
    })
  }
})

const messageOf = (errors: ReadonlyArray<Message>, from: string): string => {
  const first = errors[0]?.text ?? "the bundle failed"
  const missing = /No matching export in "[^"]*" for import "([^"]+)"/.exec(first)
  return missing === null ? first : `${from} has no export "${missing[1]}"`
}

const isBuildFailure = (error: unknown): error is { readonly errors: ReadonlyArray<Message> } =>
  typeof error === "object" && error !== null && "errors" in error && Array.isArray(error.errors)

/** The bundle as code whose value is the module's exports (a CommonJS body, run with its own `module`). */
const wrap = (code: string): string =>
  `(() => {\nconst module = { exports: {} };\n(function (module, exports) {\n${code}\n}).call(module.exports, module, module.exports);\nreturn module.exports;\n})()`

/** Evaluates the bundle once in a context like the sandbox's (its bootstrap included): the names it lacks. */
const missingNames = (source: string, pick: ReadonlyArray<string>): ReadonlyArray<string> => {
  const context = vm.createContext(vm.constants.DONT_CONTEXTIFY ?? Object.create(null))
  const sibling = (file: string) => new vm.Script(readFileSync(join(dirname(packageLayout.sandboxWorkerFile), file), "utf8")).runInContext(context)
  const library: unknown = sibling("sandboxLibrary.js")
  const bootstrap: unknown = sibling("sandboxBootstrap.js")
  if (typeof bootstrap === "function") bootstrap(() => undefined, library)
  const exports: unknown = new vm.Script(source, { filename: "pure-module-check" }).runInContext(context, { timeout: 10_000 })
  if (typeof exports !== "object" || exports === null) return pick
  return pick.filter((name) => !(name in exports) || Reflect.get(exports, name) === undefined)
}

/**
 * Bundles `spec.pick` of `spec.from` into code that, evaluated in the sandbox, is an object holding
 * exactly those exports. Cached in memory by package folder, version and picks.
 */
export const bundlePureModule = Effect.fn("bundlePureModule")(function*(spec: PureModuleSpec) {
  const fail = (message: string) => new PureModuleError({ module: spec.name, message: `env:${spec.name}: ${message}` })
  const bad = spec.pick.filter((name) => !/^[A-Za-z_$][\w$]*$/.test(name))
  if (spec.pick.length === 0 || bad.length > 0) return yield* fail(`pick lists the names to export, and ${bad.map((name) => `"${name}"`).join(", ") || "nothing"} is not one`)
  const found = installed(spec.from, spec.resolveFrom)
  if (found === undefined) return yield* fail(`the package "${packageNameOf(spec.from)}" is not installed (looked from ${spec.resolveFrom})`)
  const key = `${found.dir}@${found.version}\0${spec.from}\0${spec.pick.join(",")}`
  const cached = bundles.get(key)
  if (cached !== undefined) return cached

  const { build } = yield* Effect.promise(() => import("esbuild"))
  const built = yield* Effect.tryPromise({
    try: () =>
      build({
        stdin: { contents: `export { ${spec.pick.join(", ")} } from ${JSON.stringify(spec.from)}`, resolveDir: spec.resolveFrom, loader: "js", sourcefile: `env:${spec.name}` },
        bundle: true,
        write: false,
        format: "cjs",
        platform: "neutral",
        mainFields: ["module", "main"],
        target: "es2022",
        define: { "process.env.NODE_ENV": "\"production\"" },
        plugins: [noBuiltins(spec.from)],
        legalComments: "none",
        logLevel: "silent"
      }),
    catch: (error) => fail(isBuildFailure(error) ? messageOf(error.errors, spec.from) : String(error))
  })
  const code = built.outputFiles[0]?.text
  if (code === undefined) return yield* fail("esbuild wrote no bundle")
  const source = wrap(code)
  const missing = yield* Effect.try({
    try: () => missingNames(source, spec.pick),
    catch: (error) => fail(`${spec.from} does not load without Node: ${error instanceof Error ? error.message : String(error)}`)
  })
  if (missing.length > 0) return yield* fail(`${spec.from} has no export ${missing.map((name) => `"${name}"`).join(", ")}`)
  bundles.set(key, source)
  return source
})

/** `module`'s bundle, its package found from the project and else from the framework (a project that installs nothing). */
export const pureModuleSource = (module: PureModule, projectRoot: string) => {
  const spec = (resolveFrom: string): PureModuleSpec => ({ name: module.name, from: module.from, pick: module.pick, resolveFrom })
  return bundlePureModule(spec(projectRoot)).pipe(Effect.orElse(() => bundlePureModule(spec(packageLayout.root))))
}
