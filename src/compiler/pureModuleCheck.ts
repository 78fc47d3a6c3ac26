/**
 * The pure modules of a project, made as a script would get them (bundled, evaluated, their picks
 * looked up): a name the package does not export, or a package that needs Node, is a problem of
 * the environment's file before any script runs. Bundling takes a large package about a second,
 * so this runs where a person waits for checks anyway (`foundry check`, `build`, `deploy`, and
 * beside `foundry dev`'s type check), not in every build.
 */
import { Effect } from "effect"
import { installed } from "../environments/installedPackage.js"
import { pureModuleSource } from "../environments/script/pureModule.js"
import { packageLayout } from "../packageLayout.js"
import { RouteError } from "../router/RouteError.js"
import type { RouteTable } from "../router/RouteTable.js"

/** One problem per pure module that cannot be made, at its environment's file. */
export const pureModuleProblems = Effect.fn("compiler.pureModuleProblems")(function*(table: RouteTable) {
  const problems: Array<RouteError> = []
  for (const route of table.environments) {
    for (const module of route.definition.modules) {
      if (module._tag !== "PureModule") continue
      // A package installed nowhere is the build's problem already, with the fix: install it.
      if (installed(module.from, table.root) === undefined && installed(module.from, packageLayout.root) === undefined) continue
      const made = yield* Effect.either(pureModuleSource(module, table.root))
      if (made._tag === "Left") {
        problems.push(new RouteError({
          file: route.file,
          problem: made.left.message,
          fix: `pick only names ${module.from} exports, from a package that runs without Node (its docs list them)`
        }))
      }
    }
  }
  return problems
})
