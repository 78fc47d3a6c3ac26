/**
 * Builds the framework into `dist/`: the CLI and the public API as ES modules (bundled with
 * esbuild, split into shared chunks, commands loaded on demand), the bundled copy of `effect`
 * that route files share with the framework, the inspector's assets,
 * and (unless `--no-types`) the declarations an installed package's users type-check against.
 *
 *   node --import tsx scripts/build.ts [--no-types]
 */
import { execFileSync } from "node:child_process"
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { build } from "esbuild"
import { bundleInspector } from "../src/transports/inspector/bundleInspector.js"

const root = fileURLToPath(new URL("../", import.meta.url))
const dist = join(root, "dist")
const require = createRequire(import.meta.url)
const started = Date.now()
const types = !process.argv.includes("--no-types")

/** Public subpaths of `effect` (`effect`, `effect/Schema`, ...), as its package.json exports them. */
const effectSubpaths = (): ReadonlyArray<string> => {
  const json: unknown = JSON.parse(readFileSync(require.resolve("effect/package.json"), "utf8"))
  const exports = typeof json === "object" && json !== null && "exports" in json && typeof json.exports === "object" && json.exports !== null
    ? Object.keys(json.exports)
    : []
  return exports.filter((key) => key === "." || /^\.\/[A-Za-z]+$/.test(key)).map((key) => key === "." ? "effect" : `effect${key.slice(1)}`)
}

// Declarations are kept: a build without them (the test suite's) leaves the last ones in place.
for (const entry of existsSync(dist) ? readdirSync(dist) : []) if (entry !== "types") rmSync(join(dist, entry), { recursive: true, force: true })

// `effect` is one entry, so the code it shares with the framework is in one place; each subpath
// (`effect/Schema`) is a small module re-exporting the namespace the index already holds.
const entryPoints: Record<string, string> = {
  cli: join(root, "src/cli/main.ts"),
  index: join(root, "src/index.ts"),
  "vendor/effect/index": "effect"
}

/** The modules `effect`'s index re-exports as namespaces (`export * as Schema from "./Schema.js"`), by file name. */
const namespacesOfIndex = (): ReadonlyMap<string, string> => {
  const index = readFileSync(join(dirname(require.resolve("effect/package.json")), "dist/esm/index.js"), "utf8")
  return new Map([...index.matchAll(/export \* as (\w+) from "\.\/(\w+)\.js"/g)].map(([, name = "", file = ""]) => [file, name]))
}

/** `effect/<module>` as a module of the vendored index's namespace `name`, with every export of the original. */
const subpathModule = async (subpath: string, name: string): Promise<string> => {
  const exported = Object.keys(await import(subpath))
  const bindings = exported.map((key, i) => `const x${i} = ns[${JSON.stringify(key)}];`).join("\n")
  const list = exported.map((key, i) => `x${i} as ${key}`).join(", ")
  return `import { ${name} as ns } from "./index.js";\n${bindings}\nexport { ${list} };\n`
}

await build({
  entryPoints,
  outdir: dist,
  bundle: true,
  splitting: true,
  format: "esm",
  platform: "node",
  target: "node20",
  minify: true,
  chunkNames: "chunks/[name]-[hash]",
  // Native addons, and packages that load files of their own by path or are loaded on demand.
  external: ["better-sqlite3", "tsx", "tsx/*", "esbuild", "typescript", "pg-native", "@parcel/watcher"],
  // Bundled CommonJS packages call `require`; ES modules have none of their own.
  banner: { js: "import { createRequire as __foundryRequire } from 'node:module'; const require = __foundryRequire(import.meta.url);" },
  logLevel: "warning"
})

const namespaces = namespacesOfIndex()
for (const subpath of effectSubpaths()) {
  const name = namespaces.get(subpath.slice("effect/".length))
  if (subpath === "effect" || subpath === "effect/index") continue
  if (name === undefined) throw new Error(`build: ${subpath} is not a namespace of effect's index; vendor it as an entry of its own`)
  writeFileSync(join(dist, "vendor", `${subpath}.js`), await subpathModule(subpath, name))
}

copyFileSync(join(root, "src/router/nativeImport.cjs"), join(dist, "nativeImport.cjs"))
copyFileSync(join(root, "src/compiler/tracedTsc.cjs"), join(dist, "tracedTsc.cjs"))
for (const file of ["sandboxWorker.mjs", "sandboxBootstrap.js", "sandboxLibrary.js", "compileWorker.mjs"]) copyFileSync(join(root, "src/environments/script", file), join(dist, file))

mkdirSync(join(dist, "inspector"), { recursive: true })
writeFileSync(join(dist, "inspector/inspector.js"), await bundleInspector(join(root, "inspector"), true))
for (const file of ["index.html", "inspector.css"]) copyFileSync(join(root, "inspector", file), join(dist, "inspector", file))

if (types) {
  rmSync(join(dist, "types"), { recursive: true, force: true })
  execFileSync(process.execPath, [require.resolve("typescript/bin/tsc"), "-p", join(root, "tsconfig.build.json")], { stdio: "inherit" })
}

console.error(`foundry: built dist/ in ${Date.now() - started} ms${types ? " (with declarations)" : ""}`)
