/**
 * Where a run's events sit in their trace. A run is a trace of its own unless another run started
 * it; then it shares that run's trace and hangs under the span that started it. Span ids are
 * derived from the run and the step, so a resumed run keeps its spans.
 */
import { hash as digestOf } from "node:crypto"
import type { RunRecord } from "../durable/records.js"
import type { AnyEvent, EventPayload, EventType } from "../events/FoundryEvent.js"

/** A run's ids as hashed so far: its own trace id and the span id of each of its steps. */
interface RunIds {
  trace: string | undefined
  readonly spans: Map<string, string>
}

// Every event of a run derives its ids from the run's id and its step: remembered by run, so that
// a run hashes each once rather than once per event, and an event looks them up by the run id and
// the step as they are, not by a key made anew. Bounded: the oldest half goes when full.
const remembered = new Map<string, RunIds>()
const maxRemembered = 10_000

const idsOf = (runId: string): RunIds => {
  const known = remembered.get(runId)
  if (known !== undefined) return known
  if (remembered.size >= maxRemembered) {
    let drop = maxRemembered / 2
    for (const key of remembered.keys()) {
      remembered.delete(key)
      if (--drop === 0) break
    }
  }
  const ids: RunIds = { trace: undefined, spans: new Map() }
  remembered.set(runId, ids)
  return ids
}

// One call, no `Hash` object: half the time of `createHash` for a text this short.
const hash = (text: string, length: number): string => digestOf("sha256", text, "hex").slice(0, length)

/** The trace id a run starts when nothing started it. */
export const traceIdOf = (runId: string): string => {
  const ids = idsOf(runId)
  return ids.trace ??= hash(`trace:${runId}`, 32)
}

/** The span id of one step of a run: `run` for the run itself, `turn:<n>`, `tool:<callId>`, ... */
export const spanIdOf = (runId: string, step: string): string => {
  const { spans } = idsOf(runId)
  const known = spans.get(step)
  if (known !== undefined) return known
  const id = hash(`span:${runId}:${step}`, 16)
  spans.set(step, id)
  return id
}

/** The trace a run's events belong to. */
export const traceOfRun = (run: RunRecord): string => run.traceId ?? traceIdOf(run.id)

/** An event of type `T` as an emitter drafts it: the log adds its id, time, release and seq. */
export type DraftOf<T extends EventType> = AnyEvent<"id" | "seq" | "time" | "release", T>

/**
 * An event of `run` at `step`, a span under `parentStep` (default: the run's own span); the run's
 * own span hangs under the span that started the run, if any. `data` is the payload of `type`.
 */
export const eventOf = <T extends EventType>(
  run: RunRecord,
  type: T,
  data: EventPayload<T>,
  step = "run",
  parentStep = "run"
): DraftOf<T> => ({
  type,
  traceId: traceOfRun(run),
  spanId: spanIdOf(run.id, step),
  parentSpanId: step === "run" ? run.parentSpanId : spanIdOf(run.id, parentStep),
  runId: run.id,
  conversationId: run.conversationId,
  instanceId: run.instanceId,
  agent: run.agent,
  data
})
