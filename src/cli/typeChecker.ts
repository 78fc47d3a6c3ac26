/** The type check `foundry dev` runs in the background after each build. */
import { FileSystem } from "@effect/platform"
import { Clock, Effect, Fiber } from "effect"
import { BuildStatus } from "../compiler/BuildStatus.js"
import { pureModuleProblems } from "../compiler/pureModuleCheck.js"
import { typeCheckServer } from "../compiler/typeCheckServer.js"
import { formatDiagnostic } from "../compiler/TypeDiagnostic.js"
import { RouteErrors } from "../router/RouteError.js"
import type { RouteTable } from "../router/RouteTable.js"
import { reportError, say, style, warn } from "./terminal.js"

/**
 * The type check of the project at `root` in the background, its result in the build status and
 * the terminal, then the pure modules of the build that serves; checking a newer build interrupts
 * the check still running.
 */
export const typeChecker = (root: string, status: BuildStatus["Type"]) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    const files = yield* Effect.context<FileSystem.FileSystem>()
    const checks = yield* typeCheckServer(root)
    let checking: Fiber.RuntimeFiber<void> | undefined
    // Whether the last check that finished found errors: the status says "checking" by now.
    let hadErrors = false
    const check = Effect.fnUntraced(function*(configFile: string | undefined, table: RouteTable | undefined) {
      const result = yield* checks.check(configFile)
      const checkedAt = yield* Clock.currentTimeMillis
      yield* status.update((report) => ({
        ...report,
        types: { state: result.ok ? "ok" : "errors", diagnostics: result.diagnostics, checkedAt }
      }))
      if (!result.ok) {
        const lines = result.diagnostics.length > 0 ? result.diagnostics.map(formatDiagnostic) : [result.output]
        yield* reportError(`Type errors (${result.diagnostics.length || 1}); the build still serves, but fix them:`, {
          message: lines.join("\n")
        })
      } else if (hadErrors) {
        yield* say(style.green("types: no errors"))
      }
      hadErrors = !result.ok
      // A build that serves: its pure modules made as scripts will get them (too slow for the build itself).
      if (table === undefined) return
      const modules = yield* pureModuleProblems(table)
      if (modules.length > 0) {
        yield* reportError("Pure modules that scripts cannot import; the build still serves, but fix them:", new RouteErrors({ errors: modules }))
      }
    })
    return (configFile: string | undefined, table?: RouteTable) =>
      Effect.gen(function*() {
        if (checking !== undefined) yield* Fiber.interrupt(checking)
        yield* status.update((report) => ({ ...report, types: { ...report.types, state: "checking" } }))
        checking = yield* check(configFile, table).pipe(
          Effect.catchAllCause((cause) => warn(`type check crashed: ${String(cause)}`)),
          Effect.provide(files),
          Effect.forkIn(scope)
        )
      })
  })
