/**
 * The generated `.foundry/routes.d.ts` and `.foundry/requirements-check.ts`, type-checked with the
 * TypeScript compiler and the options `foundry check` uses (`skipLibCheck` included, so the check
 * must live in a `.ts` file): they must compile for a sound project, and the check must name a
 * service that a tool requires and no layer in foundry.config.ts provides.
 */
import { existsSync } from "node:fs"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import ts from "typescript"
import { writeGenerated } from "../../src/router/codegen.js"
import { type ProjectFiles, tempProject } from "../support/tempProject.js"
import { discoverAt, goodProject, toolFile } from "./support.js"

const framework = new URL("../../", import.meta.url).pathname

// The temporary project has no node_modules: "foundry" and "effect" resolve to the framework's.
const options: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ["lib.es2022.d.ts"],
  types: ["node"],
  typeRoots: [join(framework, "node_modules/@types")],
  paths: {
    foundry: [join(framework, "src/index.ts")],
    effect: [join(framework, "node_modules/effect/dist/dts/index.d.ts")],
    "effect/*": [join(framework, "node_modules/effect/dist/dts/*.d.ts")]
  }
}

let previous: ts.Program | undefined

/** Generates `.foundry/` for a project holding `files` and type-checks it; returns the diagnostics. */
const diagnosticsOf = (files: ProjectFiles) =>
  Effect.gen(function*() {
    const root = yield* tempProject(files)
    yield* writeGenerated(yield* discoverAt(root)).pipe(Effect.provide(NodeContext.layer))
    const check = join(root, ".foundry/requirements-check.ts")
    expect(existsSync(check)).toBe(true)
    const program = ts.createProgram([check], options, undefined, previous)
    previous = program
    return ts.getPreEmitDiagnostics(program).map((d) => ({
      file: d.file?.fileName.slice(root.length + 1),
      text: ts.flattenDiagnosticMessageText(d.messageText, "\n")
    }))
  })

const config = (layers: string, imports = "") =>
  `import { defineConfig } from "foundry"
${imports}
export default defineConfig({ layers: [${layers}] })
`

const otherService = `import { Context, Layer } from "effect"
export class Clock extends Context.Tag("test/Clock")<Clock, { readonly now: number }>() {}
export const ClockLive = Layer.succeed(Clock, { now: 0 })
`

describe("the generated requirement check", () => {
  it.scoped("type-checks for a project whose config provides every required service", () =>
    Effect.gen(function*() {
      expect(yield* diagnosticsOf(goodProject)).toEqual([])
    }))

  it.scoped("type-checks with several layers, each providing another service, and with one that provides none", () =>
    Effect.gen(function*() {
      const layers = config("OrdersLive, ClockLive, Layer.effectDiscard(Effect.void)", `import { Effect, Layer } from "effect"
import { OrdersLive } from "./lib/orders.js"
import { ClockLive } from "./lib/clock.js"`)
      expect(yield* diagnosticsOf({ ...goodProject, "lib/clock.ts": otherService, "foundry.config.ts": layers })).toEqual([])
    }))

  it.scoped("names a required service when the project has no config", () =>
    Effect.gen(function*() {
      const { ["foundry.config.ts"]: _, ...withoutConfig } = goodProject
      const diagnostics = yield* diagnosticsOf(withoutConfig)
      expect(diagnostics).toHaveLength(1)
      expect(diagnostics[0]).toMatchObject({ file: ".foundry/requirements-check.ts" })
      expect(diagnostics[0]?.text).toContain("Orders")
    }))

  it.scoped("names a required service that the config's layers do not provide", () =>
    Effect.gen(function*() {
      const diagnostics = yield* diagnosticsOf({
        ...goodProject,
        "lib/clock.ts": otherService,
        "foundry.config.ts": config("ClockLive", `import { ClockLive } from "./lib/clock.js"`)
      })
      expect(diagnostics).toHaveLength(1)
      expect(diagnostics[0]).toMatchObject({ file: ".foundry/requirements-check.ts" })
      expect(diagnostics[0]?.text).toContain("Orders")
      expect(diagnostics[0]?.text).not.toContain("Clock")
    }))

  it.scoped("names a required service when the config has no layers", () =>
    Effect.gen(function*() {
      const diagnostics = yield* diagnosticsOf({ ...goodProject, "foundry.config.ts": config("") })
      expect(diagnostics).toHaveLength(1)
      expect(diagnostics[0]).toMatchObject({ file: ".foundry/requirements-check.ts" })
      expect(diagnostics[0]?.text).toContain("Orders")
    }))

  it.scoped("type-checks for a project with catalogue MCP servers and an installable tool", () =>
    Effect.gen(function*() {
      expect(yield* diagnosticsOf({
        ...goodProject,
        "mcp/crm.ts": `import { Schema } from "effect"
import { defineMcpServer } from "foundry"

export default defineMcpServer({
  description: "The customer's CRM",
  installable: { config: Schema.Struct({ url: Schema.String }) },
  connect: (config) => ({ url: config.url })
})
`,
        "tools/notes.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Notes",
  input: Schema.String,
  output: Schema.String,
  installable: { config: Schema.Struct({ notebook: Schema.String }) },
  run: (text, { config }) => Effect.succeed(\`\${config.notebook}: \${text}\`)
})
`
      })).toEqual([])
    }))

  it.scoped("passes when no tool requires anything, with or without config", () =>
    Effect.gen(function*() {
      const { ["lib/orders.ts"]: _, ...rest } = goodProject
      const noRequirements = {
        ...rest,
        "agents/support/tools/lookup-order.tool.ts": toolFile("Look up an order"),
        "foundry.config.ts": config("")
      }
      expect(yield* diagnosticsOf(noRequirements)).toEqual([])
      const { ["foundry.config.ts"]: __, ...withoutConfig } = noRequirements
      expect(yield* diagnosticsOf(withoutConfig)).toEqual([])
    }))
})
