/**
 * Every TypeScript example in docs/ compiles against the framework's real API, so the docs cannot
 * drift from it: each page's blocks are written out as a small project (one folder per page) and
 * all pages are type-checked in one TypeScript program, with the options `foundry check` uses.
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { tempProject } from "../support/tempProject.js"
import { type Block, extractBlocks, type PageProblem, repository, typeCheck, writeBlocks } from "./docExamples.js"

const docs = join(repository, "docs")
const pages = readdirSync(docs).filter((name) => name.endsWith(".md")).sort().map((name) => `docs/${name}`)
const extracted = pages.map((page) => extractBlocks(page, readFileSync(join(repository, page), "utf8")))
const blocks: ReadonlyArray<Block> = extracted.flatMap((e) => e.blocks)
const problems: ReadonlyArray<PageProblem> = extracted.flatMap((e) => e.problems)

/** The pages the docs promise, each with examples: one per route kind, the config, and the start. */
const documented = ["agents", "tools", "playbooks", "schedules", "environments", "config", "getting-started"]

describe("docs examples", () => {
  it("every TypeScript block begins with its // file: line", () => {
    const text = problems.map((p) => `${p.page}: line ${p.line}: ${p.message}`)
    expect(text, text.join("\n")).toEqual([])
  })

  it.scoped("every example type-checks, all pages in one program", () =>
    Effect.gen(function*() {
      // Guards against a vacuous pass: an extraction that finds nothing checks nothing.
      expect(blocks.length).toBeGreaterThan(0)
      expect(documented.filter((name) => !blocks.some((b) => b.page === `docs/${name}.md`))).toEqual([])

      const root = yield* tempProject({})
      const written = writeBlocks(root, blocks)
      expect(written.size).toBe(blocks.length)
      const diagnostics = typeCheck(root, written)
      expect(diagnostics, `\n${diagnostics.join("\n")}`).toEqual([])
    }))

  it.scoped("the checker reports a wrong example at its page, file and line", () =>
    Effect.gen(function*() {
      // A misspelled optional field is the drift that hurts: at run time the tool would simply
      // never ask for approval.
      const page = [
        "# A broken page",
        "",
        "```ts",
        "// file: tools/echo.tool.ts",
        "import { Effect, Schema } from \"effect\"",
        "import { defineTool } from \"foundry\"",
        "",
        "export default defineTool({",
        "  description: \"Echo the text back\",",
        "  input: Schema.Struct({ text: Schema.String }),",
        "  output: Schema.String,",
        "  aproval: \"always\",",
        "  run: ({ text }) => Effect.succeed(text)",
        "})",
        "```",
        ""
      ].join("\n")
      const { blocks: broken, problems: none } = extractBlocks("docs/broken.md", page)
      expect(none).toEqual([])
      expect(broken.map((b) => b.file)).toEqual(["tools/echo.tool.ts"])

      const root = yield* tempProject({})
      const diagnostics = typeCheck(root, writeBlocks(root, broken))
      expect(diagnostics.length).toBeGreaterThan(0)
      expect(diagnostics.some((d) => d.startsWith("docs/broken.md (tools/echo.tool.ts): line 12: ") && d.includes("aproval")), diagnostics.join("\n"))
        .toBe(true)
    }))

  it("a block without its // file: line, and a block for a file already shown, are problems", () => {
    const page = [
      "```ts",
      "import { defineAgent } from \"foundry\"",
      "```",
      "",
      "```typescript",
      "// file: agents/a/agent.ts",
      "```",
      "",
      "```ts",
      "// file: agents/a/agent.ts",
      "```",
      "",
      "```sh",
      "curl http://127.0.0.1:4141/health",
      "```"
    ].join("\n")
    const { blocks: found, problems: wrong } = extractBlocks("docs/p.md", page)
    expect(found.map((b) => [b.file, b.line])).toEqual([["agents/a/agent.ts", 6]])
    expect(wrong.map((p) => p.line)).toEqual([2, 10])
    expect(wrong[0]?.message).toContain("// file:")
  })
})
