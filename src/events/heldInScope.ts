import { Effect, Scope } from "effect"

/**
 * `acquire` now, `release` when the scope closes: `Effect.acquireRelease` for synchronous work,
 * without the copy of the fiber's references its release makes (a context diff per finalizer, on
 * every followed run's path).
 */
export const heldInScope = <A>(acquire: () => A, release: (a: A) => void): Effect.Effect<A, never, Scope.Scope> =>
  Effect.uninterruptible(Effect.flatMap(Effect.scope, (scope) => {
    const a = acquire()
    return Effect.as(Scope.addFinalizer(scope, Effect.sync(() => release(a))), a)
  }))
