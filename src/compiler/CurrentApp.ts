/**
 * The compiled project the runtime runs now. `foundry dev` swaps it on every good rebuild; a run
 * keeps the build it started with, so a reload never drops work in flight.
 */
import { Context, Effect, Layer, Stream, SubscriptionRef } from "effect"
import type { CompiledApp } from "./CompiledApp.js"

/** The current build, a way to replace it, and its replacements as they come. */
export class CurrentApp extends Context.Tag("foundry/CurrentApp")<CurrentApp, {
  readonly get: Effect.Effect<CompiledApp>
  readonly set: (app: CompiledApp) => Effect.Effect<void>
  /** Every build made current from now on (not the one current now). */
  readonly replaced: Stream.Stream<CompiledApp>
}>() {}

/** Starts with `app`. */
export const layer = (app: CompiledApp): Layer.Layer<CurrentApp> =>
  Layer.effect(
    CurrentApp,
    Effect.map(SubscriptionRef.make(app), (ref) =>
      CurrentApp.of({
        get: SubscriptionRef.get(ref),
        set: (next) => SubscriptionRef.set(ref, next),
        replaced: Stream.drop(ref.changes, 1)
      }))
  )
