/**
 * `foundry check [dir]`: validate the routes, compile them (every required service provided),
 * make the environments' pure modules, regenerate `.foundry/`, and type-check the route files
 * with the generated types.
 */
import { Effect } from "effect"
import { compile } from "../../compiler/compile.js"
import { pureModuleProblems } from "../../compiler/pureModuleCheck.js"
import { typeCheck } from "../../compiler/typeCheck.js"
import { formatDiagnostic } from "../../compiler/TypeDiagnostic.js"
import { writeGenerated } from "../../router/codegen.js"
import { discover } from "../../router/discover.js"
import { RouteErrors } from "../../router/RouteError.js"
import { CliError } from "../CliError.js"
import { routeSummary } from "../routeSummary.js"
import { unreadableSecrets } from "../../triggers/webhookSecrets.js"
import { say, style, warn } from "../terminal.js"

/** Validates and type-checks the project at `dir`, and gives its route table when it passes. */
export const checkProject = (dir: string) =>
  Effect.gen(function*() {
    const table = yield* discover(dir, 1)
    yield* writeGenerated(table)
    yield* say(`routes: ${routeSummary(table)}`)
    // Not a failure of the project (the server may run where the variable is set), but said here too.
    for (const problem of yield* unreadableSecrets(table.config)) yield* warn(style.yellow(`warning: ${problem}`))
    yield* say(style.dim("type-checking route files with .foundry/routes.d.ts ..."))
    // tsc runs in a process of its own: the compile and the pure modules meanwhile, on this one.
    const [types, compiled, modules] = yield* Effect.all(
      [typeCheck(dir, table.configFile), compile(table).pipe(Effect.either), pureModuleProblems(table)],
      { concurrency: "unbounded" }
    )
    if (types.reused) yield* say(style.dim("types: nothing they read changed since the last check passed"))
    const problems = [
      ...(types.ok
        ? []
        : [`type errors:\n${types.diagnostics.length > 0 ? types.diagnostics.map(formatDiagnostic).join("\n") : types.output}`]),
      ...(compiled._tag === "Left" ? [compiled.left.message] : []),
      ...(modules.length > 0 ? [new RouteErrors({ errors: modules }).message] : [])
    ]
    if (problems.length > 0) return yield* new CliError({ message: problems.join("\n") })
    yield* say(style.green("check passed: routes are valid, every required service is provided, types check"))
    return table
  }).pipe(Effect.scoped)

/** `foundry check`: validates and type-checks the project at `dir`. */
export const check = (dir: string) => Effect.asVoid(checkProject(dir))
