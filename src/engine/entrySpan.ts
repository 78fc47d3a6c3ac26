/**
 * The span of one of a run's entry points (submitting it, running it, calling a tool), for
 * `Effect.fnUntraced(body, entrySpan(name))`: the span `Effect.fn(name)` makes, without the stack
 * traces `Effect.fn` captures on every call (one where the function is called, one for the span)
 * to attach to a span that fails. Nothing records Effect's spans here (Foundry's traces are its
 * events, exported over OTLP), and on a run's path the captures cost more than the span.
 */
import { Effect } from "effect"

export const entrySpan = (name: string) => Effect.withSpan(name, { captureStackTrace: false })
