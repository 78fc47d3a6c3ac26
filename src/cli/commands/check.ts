/**
 * `foundry check [dir]`: validate the routes, compile them (every required service provided),
 * regenerate `.foundry/`, and type-check the route files with the generated types.
 */
import { execFile } from "node:child_process"
import { createRequire } from "node:module"
import { dirname, join } from "node:path"
import { fileURLToPath } from "node:url"
import { Command } from "@effect/cli"
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import { compile } from "../../compiler/compile.js"
import { writeGenerated } from "../../router/codegen.js"
import { discover } from "../../router/discover.js"
import { routeFolders } from "../../router/RoutePath.js"
import { CliError } from "../CliError.js"
import { say, style } from "../terminal.js"
import { projectDir } from "./options.js"

const framework = fileURLToPath(new URL("../../../", import.meta.url))
const require = createRequire(import.meta.url)

/** The tsconfig `foundry check` type-checks with: the project's route files and the generated types. */
const checkConfig = (root: string, configFile: string | undefined) => {
  const effectTypes = dirname(require.resolve("effect/package.json"))
  return {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2022"],
      types: [],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      isolatedModules: true,
      paths: {
        foundry: [join(framework, "src/index.ts")],
        effect: [join(effectTypes, "dist/dts/index.d.ts")],
        "effect/*": [join(effectTypes, "dist/dts/*.d.ts")]
      }
    },
    include: [
      ...routeFolders.map((folder) => join(root, folder, "**/*.ts")),
      ...(configFile === undefined ? [] : [join(root, configFile)]),
      join(root, ".foundry/routes.d.ts"),
      join(root, ".foundry/requirements-check.ts")
    ]
  }
}

const typeCheck = (root: string, tsconfig: string) =>
  Effect.async<{ readonly ok: boolean; readonly output: string }>((resume) => {
    const tsc = require.resolve("typescript/bin/tsc")
    execFile(process.execPath, [tsc, "-p", tsconfig, "--pretty", "false"], { cwd: root, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resume(Effect.succeed({ ok: error === null, output: `${stdout}${stderr}`.trim() }))
    })
  })

/** The `check` command. */
export const check = Command.make("check", { dir: projectDir }, ({ dir }) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const table = yield* discover(dir, 1)
    yield* writeGenerated(table)
    yield* say(`routes: ${table.agents.length} agents, ${table.tools.length} tools, ${table.schedules.length} schedules, ${table.playbooks.length} playbooks`)
    const tsconfig = join(dir, ".foundry/tsconfig.check.json")
    yield* fs.writeFileString(tsconfig, `${JSON.stringify(checkConfig(dir, table.configFile), null, 2)}\n`)
    yield* say(style.dim("type-checking route files with .foundry/routes.d.ts ..."))
    const types = yield* typeCheck(dir, tsconfig)
    const compiled = yield* compile(table).pipe(Effect.either)
    const problems = [
      ...(types.ok ? [] : [`type errors:\n${types.output}`]),
      ...(compiled._tag === "Left" ? [compiled.left.message] : [])
    ]
    if (problems.length > 0) return yield* new CliError({ message: problems.join("\n") })
    yield* say(style.green("check passed: routes are valid, every required service is provided, types check"))
  }).pipe(Effect.scoped)).pipe(Command.withDescription("validate routes and type-check them with the generated types"))
