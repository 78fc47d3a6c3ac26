/**
 * What a build waits for now, told to whoever watches it: `foundry dev` says so while a build
 * takes long, so that a layer that never finishes, or a module whose top-level await never
 * settles, is named rather than leaving the terminal silent. With nobody watching, nothing is told.
 */
import { Context, Effect } from "effect"

/** Where a build tells what it waits for; by default, nowhere. */
export class BuildProgress extends Context.Reference<BuildProgress>()("foundry/BuildProgress", {
  defaultValue: () => ({ waitingFor: (_what: string): Effect.Effect<void> => Effect.void })
}) {}

/** Tells the build's watcher what the build waits for now, as "<what> to <happen>" ("agents/a/agent.ts to load"). */
export const waitingFor = (what: string): Effect.Effect<void> => Effect.flatMap(BuildProgress, (progress) => progress.waitingFor(what))
