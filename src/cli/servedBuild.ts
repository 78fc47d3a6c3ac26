/**
 * The scope of the build `foundry dev` serves, which holds its config's layers (a pool, a process
 * it started). A reload hands over the next, and the one before is closed; when the command
 * stops, the last is closed after the server has stopped (this is made before the server's layer,
 * so released after it), and a reload that comes to an end after that closes its own.
 */
import { Effect, Exit, Scope, SynchronizedRef } from "effect"

/** The build serving, or none yet (no build of the project succeeded); `Stopped` once the command ends. */
type Held =
  | { readonly _tag: "Serving"; readonly scope: Scope.CloseableScope | undefined }
  | { readonly _tag: "Stopped" }

export interface ServedBuild {
  /** Serves from `scope` on: the scope served before is closed. */
  readonly replace: (scope: Scope.CloseableScope) => Effect.Effect<void>
}

const closed = (scope: Scope.CloseableScope | undefined) => scope === undefined ? Effect.void : Scope.close(scope, Exit.void)

/** The holder of the served build's scope, `first` the scope of the build served first; closed with the caller's scope. */
export const servedBuild = (first: Scope.CloseableScope | undefined): Effect.Effect<ServedBuild, never, Scope.Scope> =>
  Effect.gen(function*() {
    const held = yield* SynchronizedRef.make<Held>({ _tag: "Serving", scope: first })
    yield* Effect.addFinalizer(() =>
      SynchronizedRef.updateEffect(held, (now) => Effect.as(now._tag === "Serving" ? closed(now.scope) : Effect.void, { _tag: "Stopped" } as const))
    )
    return {
      replace: (scope) =>
        SynchronizedRef.updateEffect(held, (now) =>
          now._tag === "Stopped"
            ? Effect.as(closed(scope), now)
            : Effect.as(closed(now.scope), { _tag: "Serving", scope } as const))
    }
  })
