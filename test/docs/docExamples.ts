/**
 * The machinery behind `examples.test.ts`: the TypeScript blocks of a docs page, and one type
 * check of every page's blocks against the framework's real types. Each page is a small project:
 * a block says which file it is with a first line `// file: <project-relative path>`, so later
 * blocks of the page can import earlier ones.
 */
import { mkdirSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, posix, relative, sep } from "node:path"
import { fileURLToPath } from "node:url"
import ts from "typescript"

/** The repository this test belongs to, found from the test's own location. */
export const repository = fileURLToPath(new URL("../../", import.meta.url))

/** One TypeScript block of a docs page. */
export interface Block {
  /** The page, relative to the repository, e.g. `docs/agents.md`. */
  readonly page: string
  /** The project-relative file the block is, from its `// file:` line. */
  readonly file: string
  /** The 1-based line of the page that holds the block's `// file:` line. */
  readonly line: number
  readonly code: string
}

/** Something wrong with a page that is not a type error (a block without `// file:`, ...). */
export interface PageProblem {
  readonly page: string
  readonly line: number
  readonly message: string
}

const checkedLanguages = new Set(["ts", "typescript", "mts"])
const fileLine = /^\/\/ file: (\S+)\s*$/
const fence = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/

const badPath = (file: string): string | undefined => {
  if (posix.isAbsolute(file) || file.split("/").includes("..")) return "must be a project-relative path without .."
  if (!file.endsWith(".ts") && !file.endsWith(".mts")) return "must name a .ts or .mts file"
  return undefined
}

/** The TypeScript blocks of one page, and what keeps a block from being checked. */
export const extractBlocks = (page: string, markdown: string) => {
  const blocks: Array<Block> = []
  const problems: Array<PageProblem> = []
  const lines = markdown.split("\n")
  const seen = new Map<string, number>()
  for (let i = 0; i < lines.length; i++) {
    const open = fence.exec(lines[i] ?? "")
    if (open === null) continue
    const marker = open[1] ?? "```"
    const language = (open[2] ?? "").toLowerCase()
    // A fence closes on a line of the same character, at least as long, and nothing else.
    const close = new RegExp(`^ {0,3}${marker[0] === "`" ? "`" : "~"}{${marker.length},}\\s*$`)
    const start = i + 1
    let end = start
    while (end < lines.length && !close.test(lines[end] ?? "")) end++
    i = end
    if (!checkedLanguages.has(language)) continue
    const body = lines.slice(start, end)
    const header = fileLine.exec(body[0] ?? "")
    const line = start + 1
    if (header === null) {
      problems.push({
        page,
        line,
        message: `a \`\`\`${language} block does not begin with a "// file: <project-relative path>" line; ` +
          `every TypeScript example is type-checked, so name the file it would be (e.g. // file: agents/support/agent.ts)`
      })
      continue
    }
    const file = header[1] ?? ""
    const wrong = badPath(file)
    if (wrong !== undefined) {
      problems.push({ page, line, message: `"// file: ${file}" ${wrong}` })
      continue
    }
    const earlier = seen.get(file)
    if (earlier !== undefined) {
      problems.push({ page, line, message: `a second block for ${file} (the first is at line ${earlier}); one block per file` })
      continue
    }
    seen.set(file, line)
    blocks.push({ page, file, line, code: `${body.join("\n")}\n` })
  }
  return { blocks, problems }
}

/** The folder a page's project is written to, inside the check's root. */
const folderOf = (page: string): string => posix.basename(page).replace(/\.md$/, "")

const require = createRequire(import.meta.url)
const effectTypes = dirname(require.resolve("effect/package.json"))

/**
 * The options `foundry check` type-checks a project with, so an example that passes here passes
 * there; `noUnusedLocals` on top, because an example should not carry dead imports.
 */
export const compilerOptions: ts.CompilerOptions = {
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  lib: ["lib.es2022.d.ts"],
  types: [],
  strict: true,
  noEmit: true,
  skipLibCheck: true,
  isolatedModules: true,
  noUnusedLocals: true,
  paths: {
    foundry: [join(repository, "src/index.ts")],
    effect: [join(effectTypes, "dist/dts/index.d.ts")],
    "effect/*": [join(effectTypes, "dist/dts/*.d.ts")]
  }
}

/** Writes every block under `root`, one folder per page; returns each written file's block. */
export const writeBlocks = (root: string, blocks: ReadonlyArray<Block>): ReadonlyMap<string, Block> => {
  // Without it NodeNext would read the examples as CommonJS, which route files never are.
  writeFileSync(join(root, "package.json"), "{\"type\":\"module\"}\n")
  const written = new Map<string, Block>()
  for (const block of blocks) {
    const path = join(root, folderOf(block.page), ...block.file.split("/"))
    mkdirSync(dirname(path), { recursive: true })
    writeFileSync(path, block.code)
    written.set(ts.sys.resolvePath(path), block)
  }
  return written
}

/** One diagnostic as a reader fixes it: the page, the example's file and the page's line. */
const located = (diagnostic: ts.Diagnostic, written: ReadonlyMap<string, Block>, root: string): string => {
  const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")
  const source = diagnostic.file
  if (source === undefined) return `(no file): ${message}`
  const block = written.get(ts.sys.resolvePath(source.fileName))
  const { line } = source.getLineAndCharacterOfPosition(diagnostic.start ?? 0)
  if (block === undefined) {
    return `${relative(root, source.fileName).split(sep).join("/")}: line ${line + 1}: ${message}`
  }
  return `${block.page} (${block.file}): line ${block.line + line}: ${message}`
}

// Parsed once per test process: the framework's sources, effect's and the standard library's
// types are the same for every check, and parsing them is most of a check's cost.
const parsed = new Map<string, ts.SourceFile>()

/** A compiler host that reuses the parsed files of earlier checks, except the examples' own. */
const hostFor = (root: string): ts.CompilerHost => {
  const host = ts.createCompilerHost(compilerOptions)
  const parse = host.getSourceFile.bind(host)
  const examples = ts.sys.resolvePath(root)
  return Object.assign(host, {
    getSourceFile: (fileName: string, version: ts.ScriptTarget | ts.CreateSourceFileOptions, onError?: (message: string) => void) => {
      if (ts.sys.resolvePath(fileName).startsWith(examples)) return parse(fileName, version, onError)
      const known = parsed.get(fileName)
      if (known !== undefined) return known
      const source = parse(fileName, version, onError)
      if (source !== undefined) parsed.set(fileName, source)
      return source
    }
  })
}

/**
 * Type-checks the blocks, already written under `root`, in one program. Only the examples' own
 * files are asked for diagnostics: the framework's sources are checked by the project's `tsc`,
 * and an error there is not the docs' to report.
 */
export const typeCheck = (root: string, written: ReadonlyMap<string, Block>) => {
  const program = ts.createProgram([...written.keys()], compilerOptions, hostFor(root))
  const seen = new Set<string>()
  const diagnostics: Array<string> = []
  for (const file of written.keys()) {
    const source = program.getSourceFile(file)
    for (const diagnostic of ts.getPreEmitDiagnostics(program, source)) {
      const text = located(diagnostic, written, root)
      if (seen.has(text)) continue
      seen.add(text)
      diagnostics.push(text)
    }
  }
  return diagnostics
}
