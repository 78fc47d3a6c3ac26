/**
 * One build of a project for serving: the whole project in a scope of its own, or (for `foundry
 * dev`, while nothing whole serves) the routes that build, and the problems a failed build lists.
 */
import { Effect, ExecutionStrategy, Exit, Scope } from "effect"
import { LayerBuildError, MissingServices } from "../compiler/CompileError.js"
import type { CompiledApp } from "../compiler/CompiledApp.js"
import { loadProject } from "../compiler/loadProject.js"
import { loadSoundRoutes } from "../compiler/soundRoutes.js"
import type { ProjectConfig } from "../router/loadConfig.js"
import { RouteError, RouteErrors } from "../router/RouteError.js"

/** The broken files behind a failed build, as the build status lists them: each with its file, problem and fix. */
export const problemsOf = (error: { readonly message: string }) => {
  if (error instanceof RouteErrors) return error.errors.map(({ file, fix, problem }) => ({ file, problem, fix }))
  if (error instanceof RouteError) return [{ file: error.file, problem: error.problem, fix: error.fix }]
  if (error instanceof MissingServices || error instanceof LayerBuildError) return error.problems
  const [problem = error.message, ...rest] = error.message.split("\n")
  return [{ file: "(build)", problem, fix: rest.join("\n").replace(/^\s*fix:\s*/, "") || "see the terminal of foundry dev" }]
}

/** One build in a scope of its own inside `parent`: closed at once when the build fails, else as long as the build serves. */
const inScope = <A, E, R>(parent: Scope.Scope, load: Effect.Effect<A, E, R>) =>
  Effect.gen(function*() {
    const scope = yield* Scope.fork(parent, ExecutionStrategy.sequential)
    const result = yield* load.pipe(Scope.extend(scope), Effect.either)
    if (result._tag === "Left") yield* Scope.close(scope, Exit.void)
    return result
  })

/**
 * What a build gave to serve: the whole project; only the routes that build (`Part`, for `foundry
 * dev`, while it has no whole build to keep serving), the others as `problems`; or nothing.
 */
export type Built =
  | { readonly _tag: "Whole"; readonly app: CompiledApp }
  | { readonly _tag: "Part"; readonly app: CompiledApp; readonly problems: RouteErrors }
  | { readonly _tag: "Failed"; readonly failure: Effect.Effect.Error<ReturnType<typeof loadProject>> }

/**
 * Builds the project as build `generation`, its layers held by `scope` (closing it releases them,
 * and an interrupted build's); when route files break it and `partAllowed`, the routes that build.
 */
export const build = (root: string, generation: number, config: ProjectConfig, partAllowed: boolean, scope: Scope.Scope) =>
  Effect.gen(function*() {
    const whole = yield* inScope(scope, loadProject(root, generation, config))
    if (whole._tag === "Right") return { _tag: "Whole", app: whole.right } satisfies Built
    const failure = whole.left
    if (!partAllowed || !(failure instanceof RouteErrors)) return { _tag: "Failed", failure } satisfies Built
    const part = yield* inScope(scope, loadSoundRoutes(root, generation, config))
    const built: Built = part._tag === "Right"
      ? { _tag: "Part", app: part.right.app, problems: part.right.problems }
      : { _tag: "Failed", failure }
    return built
  })

export const partMessage = "Some route files do not build; serving the routes that do until they are fixed."
