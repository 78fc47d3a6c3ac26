/**
 * Loading `foundry.config.ts` on its own, before any route file: where the server listens and
 * where runs are stored must not depend on whether every route file builds.
 */
import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import { type ConfigDefinition, defineConfig } from "../definitions/defineConfig.js"
import { kindOf } from "../definitions/RouteKind.js"
import { expectKind, loadDefault } from "./routeModule.js"
import { RouteError } from "./RouteError.js"
import { configFiles } from "./RoutePath.js"

/** A project's config and the file it came from (`undefined`: no file, the defaults). */
export interface ProjectConfig {
  readonly config: ConfigDefinition
  readonly configFile: string | undefined
}

const isConfig = (value: unknown): value is ConfigDefinition => kindOf(value) === "config"

/** Loads the config of the project at `root` as of build `generation`; a broken one is a `RouteError` naming its file. */
export const loadConfig = Effect.fn("router.loadConfig")(function*(root: string, generation: number) {
  const fs = yield* FileSystem.FileSystem
  for (const candidate of configFiles) {
    if (!(yield* fs.exists(`${root}/${candidate}`))) continue
    const value = yield* loadDefault(root, candidate, generation)
    const wrongKind = expectKind(candidate, "config", value)
    if (wrongKind !== undefined) return yield* wrongKind
    if (!isConfig(value)) {
      return yield* new RouteError({ file: candidate, problem: "the default export is not a config", fix: "export default defineConfig({ ... })" })
    }
    const loaded: ProjectConfig = { config: value, configFile: candidate }
    return loaded
  }
  const defaults: ProjectConfig = { config: defineConfig({}), configFile: undefined }
  return defaults
})
