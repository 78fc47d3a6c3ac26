/**
 * The span of one of a run's entry points (submitting it, running it, calling a tool), for
 * `Effect.fnUntraced(body, entrySpan(name))`: the span `Effect.fn(name)` makes, without the stack
 * traces `Effect.fn` captures on every call, and only under a tracer that records spans. Effect's
 * built-in tracer keeps nothing, and Foundry installs no other (its traces are its events,
 * exported over OTLP), so on a run's path a span was pure cost: about a fifth of a run's Effect
 * operations and a tenth of its CPU, for three spans nobody could read (docs/decisions.md).
 * Under a tracer that records them (a layer that sets one), they are made as before.
 */
import { Effect, type Tracer } from "effect"

/** The tracer a fiber has when nobody set one: Effect's own, which records nothing. */
const builtInTracer: Tracer.Tracer = Effect.runSync(Effect.tracer)

export const entrySpan = (name: string) => <A, E, R>(self: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.tracerWith((tracer) => tracer === builtInTracer ? self : Effect.withSpan(self, name, { captureStackTrace: false }))
