/**
 * The files an environment writes for the model to read: an orientation at `/README.md`, the
 * types and usage of every `env:` module under `/std`, and the recipes under `/skills`. They are
 * generated from the modules the environment actually offers, so the import lines they show are
 * the ones a script must write, and they are read-only so they stay true.
 */
import { formatBytes } from "./formatBytes.js"
import type { Tree } from "./Tree.js"
import { maxLineLength } from "../script/checkLimits.js"

/** What a script can import as `env:<name>`, and the docs written for it. */
export interface ModuleDoc {
  /** Imported as `env:${name}`. */
  readonly name: string
  readonly kind: "fs" | "pure" | "tools" | "adapter" | "test"
  readonly description: string
  readonly exports: ReadonlyArray<string>
  /** The body of `/std/<name>/index.d.ts`. */
  readonly types: string
  /** Extra README text (usage examples). */
  readonly readme?: string
}

/** The limits the orientation states (an environment definition's `limits` fits). */
export interface DocLimits {
  readonly maxFileBytes: number
  readonly maxTotalBytes: number
  readonly scriptTimeoutMs?: number
  readonly maxOutputBytes?: number
}

/** The paths the docs are written at: always read-only. */
export const generatedPaths: ReadonlyArray<string> = ["/std", "/README.md", "/skills/README.md", "/skills/imports.md"]

/** The import line a script writes to use `module`. */
export const importLine = (module: Pick<ModuleDoc, "name" | "exports">): string =>
  module.exports.length === 0 ? `import "env:${module.name}"` : `import { ${module.exports.join(", ")} } from "env:${module.name}"`

const encoder = new TextEncoder()

const zoneLines = (readOnly: ReadonlyArray<string>): string => [
  "- `/inbox`: inputs, the files you were given to work on.",
  "- `/scripts`: your scripts (ES modules exporting a default async function) and their tests.",
  "- `/skills`: recipes. Read `/skills/README.md` before writing a script; `/skills/imports.md` lists every module's import line. Add your own notes here.",
  "- `/std`: the types (`index.d.ts`) and docs (`README.md`) of every module you can import. Read-only.",
  "- `/tmp`: scratch space for copies, intermediate results and long output.",
  "- `/out`: results to hand over. `present` a file from here with a caption.",
  "",
  // The environment's own read-only paths come with the generated ones already: each is said once.
  `Read-only: ${[...new Set([...generatedPaths, ...readOnly])].map((path) => `\`${path}\``).join(", ")}. ` +
  "To change such a file, copy it to /tmp and work on the copy."
].join("\n")

const orientation = (modules: ReadonlyArray<ModuleDoc>, limits: DocLimits, options: GeneratedDocsOptions): string => [
  "# Working environment",
  "",
  ...(options.description === undefined || options.description === "" ? [] : [options.description, ""]),
  "A sandboxed file tree that persists between runs. Paths are absolute, such as `/inbox/data.csv`.",
  "",
  "## Zones",
  "",
  zoneLines(options.readOnly ?? []),
  "",
  "## Limits",
  "",
  `- One file holds at most ${formatBytes(limits.maxFileBytes)}; your files together (not these generated docs) at most ${formatBytes(limits.maxTotalBytes)}.`,
  ...(limits.scriptTimeoutMs === undefined ? [] : [`- A script runs at most ${limits.scriptTimeoutMs / 1000} s, then it is stopped.`]),
  ...(limits.maxOutputBytes === undefined ? [] : [`- You see at most ${formatBytes(limits.maxOutputBytes)} of a script's output; the rest is written to a file in /tmp.`]),
  "",
  "## Modules scripts can import",
  "",
  ...modules.map((module) => `- \`env:${module.name}\`: ${module.description} (see /std/${module.name}/README.md)`),
  "",
  "## Working with large files",
  "",
  "Never read a whole large file into the conversation: `describe` it (its shape in a few lines), `grep` it, " +
  "read a range of lines, or process it in a script and read the script's result.",
  ""
].join("\n")

/** A module's heading, description, exact import line and exports, as both READMEs show it. */
const moduleSection = (module: ModuleDoc, heading: string, after = ""): ReadonlyArray<string> => [
  `${heading} env:${module.name}`,
  "",
  module.description,
  "",
  "```js",
  importLine(module),
  "```",
  "",
  `Exports: ${module.exports.map((name) => `\`${name}\``).join(", ") || "(none)"}.${after}`,
  // Tools and adapters run on the host, so a script gets a Promise from each, whatever the types say.
  ...(module.kind === "tools" || module.kind === "adapter"
    ? ["", "Each function runs on the host and returns a Promise: `await` it (`const result = await name(...)`)."]
    : [])
]

const moduleReadme = (module: ModuleDoc): string => [
  ...moduleSection(module, "#", ` Types: /std/${module.name}/index.d.ts.`),
  ...(module.readme === undefined ? [] : ["", module.readme.trim()]),
  ""
].join("\n")

const skills = (modules: ReadonlyArray<ModuleDoc>, limits: DocLimits): string => {
  const fs = modules.find((module) => module.kind === "fs")
  const fsImport = fs === undefined ? `import { readText, writeFile } from "env:fs"` : `import { readText, writeFile } from "env:${fs.name}"`
  const test = modules.find((module) => module.kind === "test")
  return [
    "# Writing and running scripts",
    "",
    "A script is an ES module (`.js` or `.ts`), usually under /scripts. It must export a default async",
    "function; `args` is the JSON you pass to `run_script`, and what it returns comes back to you as JSON.",
    "",
    "```js",
    fsImport,
    "",
    "export default async function (args) {",
    "  const text = await readText(args.input)",
    "  const lines = text.split(\"\\n\").filter((line) => line.trim() !== \"\")",
    "  await writeFile(\"/out/summary.txt\", `${lines.length} lines`)",
    "  return { lines: lines.length }",
    "}",
    "```",
    "",
    "Run it with `run_script` and `{ \"path\": \"/scripts/summarize.js\", \"args\": { \"input\": \"/inbox/notes.txt\" } }`.",
    "",
    "Rules:",
    "- Import only from `env:<name>` modules; /skills/imports.md has each one's exact import line and",
    "  /std/<name>/index.d.ts its types. There is no `node:`, npm or relative import, network or process;",
    "  `require` loads the same env: modules only (`require(\"env:fs\")`).",
    "- The file functions of `env:fs`, and the functions of modules that run on the host (tools, adapters), are async: `await` them.",
    "- `console.log` output is shown to you" +
      (limits.maxOutputBytes === undefined ? "." : ` (up to ${formatBytes(limits.maxOutputBytes)}; the rest goes to a file in /tmp).`),
    ...(limits.scriptTimeoutMs === undefined ? [] : [`- A script runs at most ${limits.scriptTimeoutMs / 1000} s.`]),
    `- A line of a script holds at most ${maxLineLength.toLocaleString("en-US")} characters: keep long data in a file and read it (\`readText\`, then \`JSON.parse\`).`,
    "",
    ...(test === undefined ? [] : [
      "## Tests",
      "",
      "Test files are named `*.test.js` (or `.test.ts`) and are run with `run_tests`:",
      "",
      "```js",
      `import { test, assert } from "env:${test.name}"`,
      `import { readJson } from "env:${fs?.name ?? "fs"}"`,
      "",
      "test(\"the summary has a row per region\", async () => {",
      "  const summary = await readJson(\"/out/summary.json\")",
      "  assert(summary.length === 4, \"four regions\")",
      "})",
      "```",
      ""
    ]),
    "## Large inputs",
    "",
    "Never read a whole big file into the conversation: `describe` it, `grep` it, or process it in a",
    "script that writes its result to a file and returns a short summary.",
    "",
    "## Handing over results",
    "",
    "Write results under /out and `present` each one with a caption that says what it is, such as",
    "\"Q3 revenue by region\". Only files under /out can be presented.",
    ""
  ].join("\n")
}

const importsFile = (modules: ReadonlyArray<ModuleDoc>): string => [
  "# Modules",
  "",
  "Every module a script can import, with its exact import line (import only the names you use).",
  "",
  ...modules.flatMap((module) => [...moduleSection(module, "##"), ""])
].join("\n")

/** What the orientation says besides modules and limits. */
export interface GeneratedDocsOptions {
  /** The environment's description, shown first. */
  readonly description?: string
  /** The definition's read-only paths (the generated ones are listed anyway). */
  readonly readOnly?: ReadonlyArray<string>
}

/**
 * `/README.md` (orientation: zones, limits, modules), `/std/<name>/index.d.ts` and
 * `/std/<name>/README.md` (with the exact import line), `/skills/README.md` (how to write, run and
 * test a script, present results) and `/skills/imports.md` (every module's import line and exports).
 */
export const generatedDocs = (modules: ReadonlyArray<ModuleDoc>, limits: DocLimits, options: GeneratedDocsOptions = {}): Tree => {
  const files: Array<readonly [string, string]> = [
    ["/README.md", orientation(modules, limits, options)],
    ["/skills/README.md", skills(modules, limits)],
    ["/skills/imports.md", importsFile(modules)],
    ...modules.flatMap((module) => [
      [`/std/${module.name}/index.d.ts`, module.types.endsWith("\n") ? module.types : `${module.types}\n`] as const,
      [`/std/${module.name}/README.md`, moduleReadme(module)] as const
    ])
  ]
  return new Map(files.map(([path, text]) => [path, encoder.encode(text)]))
}
