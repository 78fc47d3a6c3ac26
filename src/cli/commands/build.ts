/**
 * `foundry build [dir] [--docker]`: what `foundry check` does, then the project bundled into a
 * release folder (`.foundry/releases/<id>/`) that `foundry start --release` serves without the
 * sources; with `--docker`, also the files to run that release in a container.
 */
import { isAbsolute, relative } from "node:path"
import { Effect } from "effect"
import packageJson from "../../../package.json" with { type: "json" }
import { composeStoreNote, writeContainerFiles } from "../../release/container.js"
import { buildRelease } from "../../release/ReleaseBuild.js"
import { CliError } from "../CliError.js"
import { say, style, warn } from "../terminal.js"
import { routeSummary } from "../routeSummary.js"
import { checkProject } from "./check.js"

/** A path as the user types it from here: relative when it is below the current folder. */
const shown = (path: string): string => {
  const fromHere = relative(process.cwd(), path)
  return fromHere === "" || fromHere.startsWith("..") || isAbsolute(fromHere) ? path : fromHere
}

/**
 * Checks the project at `dir` and writes its release (or finds it written). A project that fails
 * the check writes nothing, and the failure ends with `nothingDone`, what that meant for the command.
 */
export const checkedRelease = (dir: string, nothingDone: string) =>
  Effect.gen(function*() {
    const table = yield* checkProject(dir).pipe(
      Effect.mapError((error) => new CliError({ message: `${error.message}\n${nothingDone}` }))
    )
    yield* say(style.dim("bundling route files and config ..."))
    const release = yield* buildRelease(table)
    if (release.rebuilt !== undefined) yield* warn(style.yellow(`the release folder was written again, as it had changed since its build: ${release.rebuilt}`))
    return { table, release }
  })

/** `foundry build`: checks the project at `dir` and writes its release. */
export const build = (options: { readonly dir: string; readonly docker: boolean }) =>
  Effect.gen(function*() {
    const { release, table } = yield* checkedRelease(options.dir, "no release was written: fix the problems above and build again")
    yield* say(style.green(`release ${release.id}${release.fresh ? "" : " (already built: the sources are unchanged)"}`))
    yield* say(`  path:    ${release.folder}`)
    yield* say(`  routes:  ${routeSummary(table)}`)
    yield* say(`  start:   foundry start --release ${shown(release.folder)}`)
    yield* say(style.dim("  The release's SQLite store (if the config has one) is relative to its folder; FOUNDRY_SECRET_KEY and Config env vars are read as usual."))
    if (!options.docker) return
    const packed = yield* writeContainerFiles({
      id: release.id,
      folder: release.folder,
      version: packageJson.version,
      port: table.config.server.port
    })
    yield* say(`  docker:  Dockerfile, compose.yaml${packed._tag === "Right" ? " and the framework's tarball" : ""} written (compose.yaml's first lines say how to create a token and start)`)
    if (packed._tag === "Left") yield* warn(style.yellow(packed.left.message))
    const note = composeStoreNote(table.config.store, table.configFile)
    if (note !== undefined) yield* warn(style.yellow(`note: ${note}`))
  })
