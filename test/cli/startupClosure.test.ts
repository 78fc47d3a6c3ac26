/**
 * What `foundry start` loads before it serves: the built CLI's static imports, then those of the
 * command's own module. Code a project may never use is a chunk of its own, imported when first
 * needed (docs/decisions.md "Startup loads what it serves"); esbuild names such a chunk after the
 * module a dynamic `import()` asks for, so a static import of that module anywhere on the way
 * would merge it into a shared chunk and this test would see its chunk gone.
 */
import { readdirSync, readFileSync } from "node:fs"
import { dirname, join, normalize } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "@effect/vitest"

const dist = fileURLToPath(new URL("../../dist/", import.meta.url))

/** The `.js` files `file` imports by a relative path matching `pattern`'s first group. */
const importsOf = (file: string, pattern: RegExp): ReadonlyArray<string> =>
  [...readFileSync(file, "utf8").matchAll(pattern)].map((match) => normalize(join(dirname(file), match[1] ?? "")))

/** Static imports, as esbuild writes them minified: `import{..}from"./x.js"`, `import"./x.js"`. */
const staticImports = (file: string) => importsOf(file, /(?:\bfrom|\bimport)"(\.{1,2}\/[^"]+\.js)"/g)

/** Imports on demand: `import("./x.js")`. */
const dynamicImports = (file: string) => importsOf(file, /\bimport\("(\.{1,2}\/[^"]+\.js)"\)/g)

/** Every file `entries` load before any of their code runs. */
const closureOf = (entries: ReadonlyArray<string>): ReadonlySet<string> => {
  const seen = new Set<string>()
  const pending = [...entries]
  for (let file = pending.pop(); file !== undefined; file = pending.pop()) {
    if (seen.has(file)) continue
    seen.add(file)
    pending.push(...staticImports(file))
  }
  return seen
}

const chunks = readdirSync(join(dist, "chunks"))
const chunkOf = (module: string): string | undefined => chunks.find((name) => name.startsWith(`${module}-`))

describe("what foundry start loads", () => {
  const command = chunkOf("serveProject")
  const loaded = closureOf([join(dist, "cli.js"), join(dist, "chunks", command ?? "")])

  it("leaves the cluster, PostgreSQL, the OpenAI SDK, SheetJS and the MCP endpoint to be imported when a project needs them", () => {
    expect(command, "the start command is a chunk of its own").toBeDefined()
    const onDemand = new Set([...loaded].flatMap(dynamicImports))
    for (const module of ["ClusterDispatcher", "PgDatabase", "openai", "xlsx", "McpSessions", "agentServer"]) {
      const chunk = chunkOf(module)
      expect(chunk, `${module} is a chunk of its own`).toBeDefined()
      const file = join(dist, "chunks", chunk ?? "")
      expect(onDemand.has(file), `${module} is imported on demand by what start loads`).toBe(true)
      expect(loaded.has(file), `${module} is not loaded before start serves`).toBe(false)
    }
  })

  it("holds none of the MCP SDK's code: its client side is imported by the first connection", () => {
    // A string literal only the SDK's schemas hold. A static import of one of its modules anywhere
    // in the closure brings them in, while its own chunk may stay as a stub re-exporting them.
    const marker = '"notifications/tools/list_changed"'
    const holding = [...loaded].filter((file) => readFileSync(file, "utf8").includes(marker))
    expect(holding, "files of start's closure with the MCP SDK's schemas").toEqual([])
  })
})

describe("what a command that asks a server loads", () => {
  it("holds no fetch client and none of undici: its requests go by Node's http, with no WebAssembly parser to compile and wait for before it exits", () => {
    const commands = ["runs", "instances", "instanceChanges", "deploy"].map((module) => {
      const chunk = chunkOf(module)
      expect(chunk, `the ${module} command is a chunk of its own`).toBeDefined()
      return join(dist, "chunks", chunk ?? "")
    })
    // Strings only their code holds: the key of `FetchHttpClient`'s options (its requests go by the
    // global `fetch`, which is undici's), and a diagnostics channel undici publishes every request to.
    const markers = ['"@effect/platform/FetchHttpClient/FetchOptions"', '"undici:request:create"']
    const holding = [...closureOf([join(dist, "cli.js"), ...commands])].filter((file) => {
      const code = readFileSync(file, "utf8")
      return markers.some((marker) => code.includes(marker))
    })
    expect(holding, "files those commands load with a fetch client or undici").toEqual([])
  })
})
