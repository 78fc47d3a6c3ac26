/**
 * Work that must run in one place only: the schedule timer. A single process runs it itself; a
 * cluster runs it as an `@effect/cluster` singleton, on one runner at a time, moved to another when
 * that runner dies.
 */
import { Context, Duration, Effect, Layer, Option, type Scope } from "effect"

/** Runs singletons. */
export class Singletons extends Context.Tag("foundry/Singletons")<Singletons, {
  /** Runs `work` (which runs until interrupted) in exactly one process, for as long as the current scope. */
  readonly run: (name: string, work: Effect.Effect<void>) => Effect.Effect<void, never, Scope.Scope>
  /**
   * How often a singleton looks at the store for changes made by other processes, which it
   * cannot be told of in process; none for a single process.
   */
  readonly lookEvery: Option.Option<Duration.Duration>
}>() {}

/** A single process: singletons are fibers of its own. */
export const layerLocal = Layer.succeed(Singletons, {
  run: (_name, work) => Effect.asVoid(Effect.forkScoped(work)),
  lookEvery: Option.none()
})
