/**
 * Type-checking a project's route files against the framework's types and the generated
 * `.foundry/routes.d.ts`, in a `tsc` child process: off the main thread (the dev server keeps
 * answering while it runs), and incremental (`.foundry/tsbuildinfo`), so that the check after a
 * save only re-checks what the save changed; a check that would only repeat the last one that
 * passed does not run tsc at all (`tracedTsc.cjs`). `foundry check` and `foundry dev` share it.
 */
import { execFile } from "node:child_process"
import { existsSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, resolve } from "node:path"
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import { packageLayout } from "../packageLayout.js"
import { writeIfChanged } from "../router/codegen.js"
import { routeFolders } from "../router/RoutePath.js"
import { TypeDiagnostic } from "./TypeDiagnostic.js"

/**
 * What a check found; `output` is tsc's own text, for problems that are not about a file;
 * `reused` when nothing the last check that passed read had changed, so tsc did not run.
 */
export interface TypeCheckResult {
  readonly ok: boolean
  readonly diagnostics: ReadonlyArray<TypeDiagnostic>
  readonly output: string
  readonly reused: boolean
}

const require = createRequire(import.meta.url)

/**
 * Where Node's types are for a project: its own `@types/node` (as `foundry init` installs), else
 * the framework's. Route files run on Node and may import its built-ins (`node:fs`).
 */
const nodeTypeRoot = (root: string): string | undefined =>
  [join(root, "node_modules/@types"), join(packageLayout.root, "node_modules/@types")].find((dir) => existsSync(join(dir, "node/package.json")))

/** The tsconfig a project is checked with: its route files, its config and the generated types. */
export const checkConfigOf = (root: string, configFile: string | undefined) => {
  const effectTypes = dirname(require.resolve("effect/package.json"))
  const nodeTypes = nodeTypeRoot(root)
  return {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      // As `foundry init`'s tsconfig.json has it: Node 20 has ES2023's library (toSorted, findLast).
      lib: ["ES2023"],
      types: nodeTypes === undefined ? [] : ["node"],
      ...(nodeTypes === undefined ? {} : { typeRoots: [nodeTypes] }),
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      isolatedModules: true,
      incremental: true,
      tsBuildInfoFile: join(root, ".foundry/tsbuildinfo"),
      paths: {
        foundry: [packageLayout.typesEntry],
        effect: [join(effectTypes, "dist/dts/index.d.ts")],
        "effect/*": [join(effectTypes, "dist/dts/*.d.ts")]
      }
    },
    include: [
      ...routeFolders.map((folder) => join(root, folder, "**/*.ts")),
      join(root, "lib/**/*.ts"),
      ...(configFile === undefined ? [] : [join(root, configFile)]),
      join(root, ".foundry/routes.d.ts"),
      join(root, ".foundry/requirements-check.ts")
    ]
  }
}

// `file(line,col): error TS2345: message`, continuation lines indented below it.
const diagnosticLine = /^(.+?)\((\d+),(\d+)\): error (TS\d+): (.*)$/

/** tsc's `--pretty false` output as diagnostics; paths become relative to `root`. */
export const parseDiagnostics = (root: string, output: string): ReadonlyArray<TypeDiagnostic> => {
  const diagnostics: Array<TypeDiagnostic> = []
  for (const line of output.split("\n")) {
    const match = diagnosticLine.exec(line)
    if (match !== null) {
      const [, file = "", row = "0", column = "0", code = "", message = ""] = match
      diagnostics.push(
        new TypeDiagnostic({ file: relative(root, resolve(root, file)), line: Number(row), column: Number(column), code, message })
      )
      continue
    }
    const last = diagnostics.pop()
    if (last === undefined) continue
    diagnostics.push(line.trim() === "" ? last : new TypeDiagnostic({ ...last, message: `${last.message}\n${line.trimEnd()}` }))
  }
  return diagnostics
}


/** The exit status of `tracedTsc.cjs` for a check that passed before, nothing it read changed since. */
const reusedStatus = 100

/**
 * Writes the tsconfig the project at `root` is checked with; the arguments of `tracedTsc.cjs`
 * that check it (`node tracedTsc.cjs [--serve] <arguments>`).
 */
export const prepareCheck = Effect.fn("compiler.prepareCheck")(function*(root: string, configFile: string | undefined) {
  const tsconfig = join(root, ".foundry/tsconfig.check.json")
  const config = checkConfigOf(root, configFile)
  yield* FileSystem.FileSystem.pipe(Effect.flatMap((fs) => fs.makeDirectory(dirname(tsconfig), { recursive: true })))
  yield* writeIfChanged(tsconfig, `${JSON.stringify(config, null, 2)}\n`)
  return [
    String(process.pid),
    join(root, ".foundry/typecheck.json"),
    config.compilerOptions.tsBuildInfoFile,
    "-p",
    tsconfig,
    "--pretty",
    "false"
  ]
})

/**
 * The result of a check of the project at `root` from the status `tracedTsc.cjs` ended it with and
 * what it said; `why` says why a check that did not pass said nothing.
 */
export const checkResult = (root: string, status: number, said: string, why: () => string): TypeCheckResult => {
  const reused = status === reusedStatus && said === ""
  // tsc that says nothing has passed only if it ended well: not killed, not missing.
  const output = reused ? "" : said === "" && status !== 0 ? `tsc did not finish: ${why()}` : said
  return { ok: output === "", diagnostics: parseDiagnostics(root, output), output, reused }
}

/**
 * Type-checks the project at `root` (whose generated files are already written), unless nothing
 * the last check that passed asked the file system about has changed since (`tracedTsc.cjs`).
 * Interrupting the effect kills the `tsc` process.
 */
export const typeCheck = Effect.fn("compiler.typeCheck")(function*(root: string, configFile: string | undefined) {
  const args = yield* prepareCheck(root, configFile)
  return yield* Effect.async<TypeCheckResult>((resume) => {
    const child = execFile(
      process.execPath,
      [packageLayout.tracedTscFile, ...args],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
      (error, stdout, stderr) => {
        // Killed or never started, it has no status of its own: one that is not a pass.
        const status = error === null ? 0 : typeof error.code === "number" ? error.code : -1
        resume(Effect.succeed(checkResult(root, status, `${stdout}${stderr}`.trim(), () => error?.message ?? "")))
      }
    )
    return Effect.sync(() => child.kill("SIGKILL"))
  })
})
