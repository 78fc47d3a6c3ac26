/**
 * The compiled project the runtime runs now. `foundry dev` swaps it on every good rebuild; a run
 * keeps the build it started with, so a reload never drops work in flight.
 */
import { Context, Effect, Layer, type Stream, SubscriptionRef } from "effect"
import type { CompiledApp } from "./CompiledApp.js"

/** The current build, a way to replace it, and the builds made current as they come. */
export class CurrentApp extends Context.Tag("foundry/CurrentApp")<CurrentApp, {
  readonly get: Effect.Effect<CompiledApp>
  readonly set: (app: CompiledApp) => Effect.Effect<void>
  /**
   * The build current as the stream starts, then every build made current after it: none made
   * current between a `get` and the stream's start is missed.
   */
  readonly changes: Stream.Stream<CompiledApp>
}>() {}

/** Starts with `app`. */
export const layer = (app: CompiledApp): Layer.Layer<CurrentApp> =>
  Layer.effect(
    CurrentApp,
    Effect.map(SubscriptionRef.make(app), (ref) =>
      CurrentApp.of({
        get: SubscriptionRef.get(ref),
        set: (next) => SubscriptionRef.set(ref, next),
        changes: ref.changes
      }))
  )
