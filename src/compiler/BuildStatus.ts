/**
 * How the running project's last build went: which build serves, the route files that broke
 * the last reload, and the type errors of the last background type check. `foundry dev` keeps it
 * up to date; the API serves it, so the inspector can show build errors the way Next.js does.
 */
import { Clock, Context, Effect, Layer, Ref, Schema } from "effect"
import { TypeDiagnostic } from "./TypeDiagnostic.js"

/** A broken file of the last reload (a route file or the config). */
export const BuildProblem = Schema.Struct({ file: Schema.String, problem: Schema.String, fix: Schema.String })

/** The state of the background type check. */
export const TypeCheckState = Schema.Literal("off", "checking", "ok", "errors")

/** The running project's build, as the API shows it. */
export class BuildReport extends Schema.Class<BuildReport>("BuildReport")({
  /** The build that serves (it counts every good build since start). */
  generation: Schema.Number,
  /** When the serving build was made (ms since the epoch). */
  builtAt: Schema.Number,
  /**
   * What broke the last build: the serving build is older than it, or (`partial`) the part of it
   * that builds, without these files and what uses them.
   */
  problems: Schema.Array(BuildProblem),
  /** The serving build leaves out the broken files of `problems` and what uses them (`foundry dev`, with no whole build to serve). */
  partial: Schema.Boolean,
  /** A change the running server cannot apply without a restart, e.g. a new port or store. */
  restartNeeded: Schema.NullOr(Schema.String),
  /** A build is going (`foundry dev` after a save): `generation`, `builtAt` and `problems` are still the last one's. */
  building: Schema.Boolean,
  /** The build going, when `building`: its number, when it started (ms since the epoch), what it waits for now if it has said. */
  inProgress: Schema.NullOr(Schema.Struct({
    generation: Schema.Number,
    since: Schema.Number,
    waitingFor: Schema.NullOr(Schema.String)
  })),
  types: Schema.Struct({
    state: TypeCheckState,
    diagnostics: Schema.Array(TypeDiagnostic),
    checkedAt: Schema.NullOr(Schema.Number)
  })
}) {}

/** The build status of the running project. */
export class BuildStatus extends Context.Tag("foundry/BuildStatus")<BuildStatus, {
  readonly get: Effect.Effect<BuildReport>
  readonly update: (f: (report: BuildReport) => BuildReport) => Effect.Effect<void>
}>() {}

/** Starts with build 1, made now, with nothing broken and no type check. */
export const layer: Layer.Layer<BuildStatus> = Layer.effect(
  BuildStatus,
  Effect.gen(function*() {
    const ref = yield* Ref.make(
      new BuildReport({
        generation: 1,
        builtAt: yield* Clock.currentTimeMillis,
        problems: [],
        partial: false,
        restartNeeded: null,
        building: false,
        inProgress: null,
        types: { state: "off", diagnostics: [], checkedAt: null }
      })
    )
    return BuildStatus.of({ get: Ref.get(ref), update: (f) => Ref.update(ref, f) })
  })
)
