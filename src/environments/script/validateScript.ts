/**
 * Checks a script before it runs, and compiles it for the worker. A script (`.js` or `.ts`) is an
 * ES module that exports a function as default and imports (or requires) only `env:` modules, each name one
 * the module exports. Every problem is answered with its line and column and, where there is one,
 * the fix: the import line it should have been. The compiled code is CommonJS with an inline
 * source map (the worker maps stack lines back to the source with it). esbuild compiles on a thread
 * of its own, within a time limit (`ScriptRunner.compile`).
 */
import { createRequire } from "node:module"
import { Duration, Effect } from "effect"
import type * as ts from "typescript"
import { closest } from "../../text/closest.js"
import { ScriptRunner } from "./ScriptRunner.js"
import { maxLineLength, maxProblems } from "./checkLimits.js"

/** A module a script may import as `env:<name>`, and the names it exports. */
export interface ModuleExports {
  readonly name: string
  readonly exports: ReadonlyArray<string>
  /** Its exports are not known yet (its MCP server was not reached): names imported from it are checked when it is. */
  readonly exportsUnknown?: true
}

/** A script checked: its compiled code, or what is wrong with it. */
export type ScriptCheck =
  /** `imports`: the env: modules it imports or requires by a name written out. */
  | { readonly _tag: "Valid"; readonly code: string; readonly imports: ReadonlyArray<string> }
  | { readonly _tag: "Invalid"; readonly message: string }

/** The module only test files import; the worker provides it. */
const testModule = "test"

// TypeScript is large: loaded when the first script is checked, not with the framework.
let typescript: typeof ts | undefined
const parser = (): typeof ts => typescript ??= createRequire(import.meta.url)("typescript")

interface Problem {
  readonly line: number
  readonly column: number
  readonly text: string
}

/** `import { a, b as c } from "env:x"` with the names replaced as `rename` says. */
const importLine = (names: ReadonlyArray<{ readonly imported: string; readonly local: string | undefined }>, module: string, rename: (name: string) => string) =>
  `import { ${names.map(({ imported, local }) => local === undefined ? rename(imported) : `${rename(imported)} as ${local}`).join(", ")} } from "env:${module}"`

/**
 * Runs `f`, or answers undefined when it overflowed the stack. TypeScript parses and walks a syntax
 * tree recursively, so a script nested some thousands deep (`[[[...]]]`, a long `a = a = ...`)
 * overflows it; the script is refused for that, not the call failed.
 */
const withinStack = <A>(f: () => A): A | undefined => {
  try {
    return f()
  } catch (error) {
    if (error instanceof RangeError && /call stack/i.test(error.message)) return undefined
    throw error
  }
}

/** A script's syntax tree (parse errors are esbuild's to report). */
const parse = (path: string, source: string): ts.SourceFile => {
  const t = parser()
  return t.createSourceFile(path, source, t.ScriptTarget.Latest, true, /\.[mc]?ts$/.test(path) ? t.ScriptKind.TS : t.ScriptKind.JS)
}

/** The problems of a script's imports and exports, found in its syntax tree. */
const analyse = (
  file: ts.SourceFile,
  modules: ReadonlyArray<ModuleExports>,
  test: boolean
): { readonly problems: Array<Problem>; readonly hasDefault: boolean; readonly imports: ReadonlyArray<string> } => {
  const t = parser()
  const problems: Array<Problem> = []
  const imports = new Set<string>()
  const at = (node: ts.Node, text: string) => {
    const { line, character } = file.getLineAndCharacterOfPosition(node.getStart(file))
    problems.push({ line: line + 1, column: character + 1, text })
  }
  const byName = new Map(modules.map((module) => [module.name, module]))
  const listed = modules.filter((module) => test || module.name !== testModule).map((module) => `env:${module.name}`).join(", ")
  // A `require` is answered as the sandbox's loader answers it when the script runs, so the model
  // reads the same sentence whether the script is written or run.
  const moduleOf = (specifier: ts.Expression, how: "import" | "require" = "import"): ModuleExports | undefined => {
    if (!t.isStringLiteralLike(specifier)) return undefined
    const name = specifier.text
    const suggest = (module: string) => how === "import" ? `"env:${module}"` : `require("env:${module}")`
    if (!name.startsWith("env:")) {
      const alike = byName.get(name.replace(/^node:/, ""))
      const hint = alike === undefined ? "" : `; did you mean ${suggest(alike.name)}?`
      const rule = how === "import" ? "scripts import only env: modules," : `scripts load only env: modules (import them, or require("env:<name>")),`
      at(specifier, `${rule} not "${name}"${hint} (the modules: ${listed}; see /skills/imports.md)`)
      return undefined
    }
    const module = byName.get(name.slice(4))
    if (module === undefined) {
      const near = closest(name.slice(4), [...byName.keys()].filter((known) => test || known !== testModule))
      at(specifier, `there is no module "${name}"${near === undefined ? "" : `; did you mean ${suggest(near)}?`} (the modules: ${listed})`)
      return undefined
    }
    if (module.name === testModule && !test) {
      at(specifier, `env:${testModule} is for test files (*.test.js, *.test.ts), which run_tests runs`)
      return undefined
    }
    imports.add(module.name)
    return module
  }
  const checkNames = (module: ModuleExports, node: ts.Node, names: ReadonlyArray<{ readonly imported: string; readonly local: string | undefined; readonly typeOnly: boolean }>) => {
    if (module.exportsUnknown === true) return
    const exported = new Set(module.exports)
    const wrong = names.filter((name) => !name.typeOnly && !exported.has(name.imported))
    if (wrong.length === 0) return
    const fixes = new Map(wrong.map(({ imported }) => [imported, closest(imported, module.exports)]))
    const quoted = wrong.map(({ imported }) => `"${imported}"`).join(", ")
    const what = `env:${module.name} has no export${wrong.length > 1 ? "s" : ""} ${quoted}`
    const fixable = [...fixes.values()].every((fix) => fix !== undefined)
    at(node, fixable
      ? `${what}; did you mean: ${importLine(names.filter((name) => !name.typeOnly), module.name, (name) => fixes.get(name) ?? name)}`
      : `${what}; its exports: ${module.exports.join(", ")}`)
  }
  let hasDefault = false
  const functionNames = new Set<string>()
  for (const statement of file.statements) {
    if (t.isFunctionDeclaration(statement) && statement.name !== undefined) functionNames.add(statement.name.text)
  }
  for (const statement of file.statements) {
    if (t.isImportDeclaration(statement)) {
      const clause = statement.importClause
      if (clause?.isTypeOnly === true) continue
      const module = moduleOf(statement.moduleSpecifier)
      if (module === undefined || clause === undefined) continue
      if (clause.name !== undefined && module.exportsUnknown !== true && !module.exports.includes("default")) {
        at(clause.name, `env:${module.name} has no default export; import its names: import { ${module.exports.slice(0, 3).join(", ")} } from "env:${module.name}"`)
      }
      const bindings = clause.namedBindings
      if (bindings !== undefined && t.isNamedImports(bindings)) {
        checkNames(module, bindings, bindings.elements.map((element) => ({
          imported: (element.propertyName ?? element.name).text,
          local: element.propertyName === undefined ? undefined : element.name.text,
          typeOnly: element.isTypeOnly
        })))
      }
    } else if (t.isExportDeclaration(statement)) {
      const clause = statement.exportClause
      if (statement.moduleSpecifier !== undefined && !statement.isTypeOnly) {
        const module = moduleOf(statement.moduleSpecifier)
        if (module !== undefined && clause !== undefined && t.isNamedExports(clause)) {
          checkNames(module, clause, clause.elements.map((element) => ({
            imported: (element.propertyName ?? element.name).text,
            local: undefined,
            typeOnly: element.isTypeOnly
          })))
        }
      } else if (clause !== undefined && t.isNamedExports(clause) && clause.elements.some((element) => element.name.text === "default")) {
        hasDefault = true
      }
    } else if (t.isImportEqualsDeclaration(statement)) {
      at(statement, `scripts import env: modules with import { ... } from "env:<name>" (the modules: ${listed})`)
    } else if (t.isExportAssignment(statement) && statement.isExportEquals !== true) {
      hasDefault = true
      const value = unwrap(t, statement.expression)
      const notAFunction = t.isObjectLiteralExpression(value) || t.isArrayLiteralExpression(value) || t.isClassExpression(value) ||
        t.isLiteralExpression(value) || t.isNumericLiteral(value) || value.kind === t.SyntaxKind.TrueKeyword || value.kind === t.SyntaxKind.FalseKeyword ||
        (t.isIdentifier(value) && !functionNames.has(value.text) && isNonFunctionConstant(t, file, value.text))
      if (notAFunction && !test) at(statement, "the default export must be a function: export default async function (args) { ... }")
    } else if (t.isFunctionDeclaration(statement) || t.isClassDeclaration(statement)) {
      const modifiers = t.canHaveModifiers(statement) ? t.getModifiers(statement) ?? [] : []
      const isDefault = modifiers.some((m) => m.kind === t.SyntaxKind.ExportKeyword) && modifiers.some((m) => m.kind === t.SyntaxKind.DefaultKeyword)
      if (isDefault) {
        hasDefault = true
        if (t.isClassDeclaration(statement) && !test) at(statement, "the default export must be a function, not a class: export default async function (args) { ... }")
      }
    }
  }
  const visit = (node: ts.Node): void => {
    if (t.isCallExpression(node) && node.expression.kind === t.SyntaxKind.ImportKeyword) {
      at(node, `scripts cannot import(): import env: modules at the top of the script (the modules: ${listed})`)
    }
    // `require(name)` with a name computed at run time is left to the loader.
    const specifier = t.isCallExpression(node) && t.isIdentifier(node.expression) && node.expression.text === "require" ? node.arguments[0] : undefined
    if (specifier !== undefined) moduleOf(specifier, "require")
    t.forEachChild(node, visit)
  }
  visit(file)
  return { problems, hasDefault, imports: [...imports] }
}

/** An expression without the parentheses and type assertions around it. */
const unwrap = (t: typeof ts, expression: ts.Expression): ts.Expression =>
  t.isParenthesizedExpression(expression) || t.isAsExpression(expression) || t.isSatisfiesExpression(expression) ||
    t.isNonNullExpression(expression) || t.isTypeAssertionExpression(expression)
    ? unwrap(t, expression.expression)
    : expression

/** Whether `name` is a top-level `const` whose value is plainly not a function (a literal, an object). */
const isNonFunctionConstant = (t: typeof ts, file: ts.SourceFile, name: string): boolean =>
  file.statements.some((statement) =>
    t.isVariableStatement(statement) && statement.declarationList.declarations.some((declaration) => {
      if (!t.isIdentifier(declaration.name) || declaration.name.text !== name || declaration.initializer === undefined) return false
      const value = unwrap(t, declaration.initializer)
      return t.isObjectLiteralExpression(value) || t.isArrayLiteralExpression(value) || t.isLiteralExpression(value) || t.isClassExpression(value)
    }))

/** The most syntax problems TypeScript's parser may find before esbuild is left out of the check. */
const maxParsedProblems = 200

/** The syntax problems TypeScript's parser found (kept on the file, though its types do not say so). */
const syntaxProblemsOf = (file: ts.SourceFile): ReadonlyArray<Problem> => {
  const found = "parseDiagnostics" in file && Array.isArray(file.parseDiagnostics) ? file.parseDiagnostics : []
  return found.flatMap((diagnostic: unknown) => {
    if (typeof diagnostic !== "object" || diagnostic === null || !("start" in diagnostic) || typeof diagnostic.start !== "number") return []
    // A parse error's message is a string (chains are the checker's).
    const text = "messageText" in diagnostic && typeof diagnostic.messageText === "string" ? diagnostic.messageText : "a syntax error"
    const { character, line } = file.getLineAndCharacterOfPosition(diagnostic.start)
    return [{ line: line + 1, column: character + 1, text }]
  })
}

/** The first problems in the script's order, and how many more (`count` is all of them, when only some are given). */
const describe = (problems: ReadonlyArray<Problem>, count = problems.length): string => {
  const sorted = [...problems].sort((a, b) => a.line - b.line || a.column - b.column)
  const listed = sorted.slice(0, maxProblems).map(({ line, column, text }) => `line ${line}:${column}: ${text}`)
  return count > maxProblems ? [...listed, `… and ${count - maxProblems} more problems`].join("\n") : listed.join("\n")
}

/** The first line longer than `maxLineLength`: its number and length. */
const longLine = (source: string): { readonly line: number; readonly length: number } | undefined => {
  let line = 1
  let start = 0
  for (;;) {
    const newline = source.indexOf("\n", start)
    const end = newline === -1 ? source.length : newline
    if (end - start > maxLineLength) return { line, length: end - start }
    if (newline === -1) return undefined
    line += 1
    start = newline + 1
  }
}

const count = (n: number) => n.toLocaleString("en-US")

const invalid = (message: string): ScriptCheck => ({ _tag: "Invalid", message })

/** A script nested too deeply to check (or to run: V8 would overflow its stack too). */
const tooDeep = (path: string): ScriptCheck => ({
  _tag: "Invalid",
  message: `${path} is too deeply nested to check (brackets, blocks or operators nested very deeply): ` +
    "write it flatter; build deep data in a loop, or read it from a JSON file"
})

/**
 * Checks `source` (the script at `path`) against the modules it may import; a test file
 * (`options.test`) may import `env:test` and need not export a default function.
 */
export const validateScript = Effect.fn("validateScript")(function*(
  path: string,
  source: string,
  modules: ReadonlyArray<ModuleExports>,
  options: { readonly test?: boolean } = {}
) {
  const test = options.test === true
  // Parsed before esbuild sees it: nesting deep enough to overflow esbuild's stack (a 1 GB one, some
  // hundred thousand levels) ends its service process. TypeScript's stack is far smaller, so such a
  // script is refused here first.
  const file = withinStack(() => parse(path, source))
  if (file === undefined) return tooDeep(path)
  // A run of thousands of problems TypeScript's parser counts at no cost is its own answer: esbuild
  // would take long to send them all.
  const parsedProblems = syntaxProblemsOf(file)
  if (parsedProblems.length > maxParsedProblems) return invalid(describe(parsedProblems))
  const long = longLine(source)
  if (long !== undefined) {
    return invalid(`line ${long.line} is ${count(long.length)} characters long (at most ${count(maxLineLength)} a line): ` +
      "split it over several lines; put long data in a JSON file and read it (readText, then JSON.parse)")
  }
  const compiled = yield* Effect.flatMap(ScriptRunner, (runner) => runner.compile(path, source))
  switch (compiled._tag) {
    case "Problems":
      return invalid(describe(compiled.problems, compiled.count))
    case "TimedOut":
      return invalid(`${path} could not be compiled within ${Duration.format(compiled.after)}: it has too many problems to list ` +
        "(one in each of thousands of statements, say), or is too large; write it anew in smaller pieces, checking each")
    case "Crashed":
      return invalid(`${path} could not be compiled (${compiled.error}): it has too many problems to list, or is too large; ` +
        "write it anew in smaller pieces, checking each")
    case "Compiled":
      break
  }
  const known = modules.some((module) => module.name === testModule) ? modules : [...modules, { name: testModule, exports: ["test", "assert"] }]
  const analysed = withinStack(() => analyse(file, known, test))
  if (analysed === undefined) return tooDeep(path)
  const { hasDefault, imports, problems } = analysed
  if (!hasDefault && !test) {
    problems.push({ line: 1, column: 1, text: `${path} has no default export: a script is run as export default async function (args) { ... }` })
  }
  if (problems.length > 0) return invalid(describe(problems))
  return { _tag: "Valid", code: compiled.code, imports } satisfies ScriptCheck
})
