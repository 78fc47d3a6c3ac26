/**
 * Loading `foundry.config.ts` on its own, before any route file: where the server listens and
 * where runs are stored must not depend on whether every route file builds. The loaded config is
 * checked against `ConfigSchema`: TypeScript does not see a JavaScript config or a cast, and a
 * wrong value (a negative concurrency, a duration that does not parse) would otherwise surface as
 * odd behaviour far from the file that caused it.
 */
import { FileSystem } from "@effect/platform"
import { Effect, Either, Schema } from "effect"
import { defaultConfig } from "../definitions/configDefaults.js"
import { ConfigSchema } from "../definitions/configSchema.js"
import { type ConfigDefinition, defineConfig } from "../definitions/defineConfig.js"
import { formatIssues, type ReadableIssue, readableIssues } from "../definitions/readableIssues.js"
import { kindOf, RouteKindId } from "../definitions/RouteKind.js"
import { waitingFor } from "./BuildProgress.js"
import { expectKind, loadDefault } from "./routeModule.js"
import { RouteError } from "./RouteError.js"
import { configFiles } from "./RoutePath.js"

/** A project's config and the file it came from (`undefined`: no file, the defaults). */
export interface ProjectConfig {
  readonly config: ConfigDefinition
  readonly configFile: string | undefined
}

const isConfig = (value: unknown): value is ConfigDefinition => kindOf(value) === "config"

// Every wrong field at once, and a field the Schema does not know is a mistake (a misspelt
// `concurency` would otherwise be ignored and its default used without a word).
const decodeConfig = Schema.decodeUnknownEither(ConfigSchema, { errors: "all", onExcessProperty: "error" })

/** The wrong fields of a config; none when it matches `ConfigSchema`. */
export const configIssues = (config: ConfigDefinition): ReadonlyArray<ReadableIssue> => {
  // The kind brand is how the router tells definitions apart, not a field of the config.
  const { [RouteKindId]: _kind, ...fields } = config
  return Either.match(decodeConfig(fields), {
    onLeft: (error) => readableIssues(error, { root: "(config)" }),
    onRight: () => []
  })
}

/** The default of every field that has one, by its path as `readableIssues` writes it (`server.port`). */
const defaultsByPath = (value: unknown, path: string, into: Map<string, unknown>): Map<string, unknown> => {
  if (typeof value === "object" && value !== null && !Array.isArray(value)) {
    for (const [key, field] of Object.entries(value)) defaultsByPath(field, path === "" ? key : `${path}.${key}`, into)
  } else if (path !== "") {
    into.set(path, value)
  }
  return into
}

const fieldDefaults = defaultsByPath(defaultConfig, "", new Map())

/** What to do about one wrong field. */
const fixFor = ({ message, path }: ReadableIssue): string => {
  if (message.startsWith("is not allowed")) return `remove ${path} or correct its name`
  const fallback = fieldDefaults.get(path)
  return fallback === undefined
    ? `correct ${path}`
    : `correct ${path}, or leave it out for its default, ${JSON.stringify(fallback)}`
}

/** The error for a config with wrong fields: each field's path and what is wrong with it, and the fix. */
const invalidConfig = (file: string, issues: ReadonlyArray<ReadableIssue>): RouteError =>
  new RouteError({
    file,
    problem: `the config has ${issues.length === 1 ? "a wrong field" : `${issues.length} wrong fields`}: ${formatIssues(issues).split("\n").join("; ")}`,
    fix: `${issues.map(fixFor).join("; ")} in ${file} (the README's "Config" section lists every field and its default)`
  })

/** Loads the config of the project at `root` as of build `generation`; a broken one is a `RouteError` naming its file. */
export const loadConfig = Effect.fn("router.loadConfig")(function*(root: string, generation: number) {
  const fs = yield* FileSystem.FileSystem
  for (const candidate of configFiles) {
    if (!(yield* fs.exists(`${root}/${candidate}`))) continue
    yield* waitingFor(`${candidate} to load`)
    const value = yield* loadDefault(root, candidate, generation)
    const wrongKind = expectKind(candidate, "config", value)
    if (wrongKind !== undefined) return yield* wrongKind
    if (!isConfig(value)) {
      return yield* new RouteError({ file: candidate, problem: "the default export is not a config", fix: "export default defineConfig({ ... })" })
    }
    const issues = configIssues(value)
    if (issues.length > 0) return yield* invalidConfig(candidate, issues)
    const loaded: ProjectConfig = { config: value, configFile: candidate }
    return loaded
  }
  const defaults: ProjectConfig = { config: defineConfig({}), configFile: undefined }
  return defaults
})
