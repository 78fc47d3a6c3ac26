/**
 * The compiled project the runtime runs now. `foundry dev` swaps it on every good rebuild; a run
 * keeps the build it started with, so a reload never drops work in flight.
 */
import { Context, Effect, Layer, Ref } from "effect"
import type { CompiledApp } from "./CompiledApp.js"

/** The current build, and a way to replace it. */
export class CurrentApp extends Context.Tag("foundry/CurrentApp")<CurrentApp, {
  readonly get: Effect.Effect<CompiledApp>
  readonly set: (app: CompiledApp) => Effect.Effect<void>
}>() {}

/** Starts with `app`. */
export const layer = (app: CompiledApp): Layer.Layer<CurrentApp> =>
  Layer.effect(
    CurrentApp,
    Effect.map(Ref.make(app), (ref) => CurrentApp.of({ get: Ref.get(ref), set: (next) => Ref.set(ref, next) }))
  )
