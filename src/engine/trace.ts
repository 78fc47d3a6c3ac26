/**
 * Trace identity of a run: derived from the run id, so a resumed run keeps its trace, and each
 * step's span id from the run and the step, so a replayed step keeps its span.
 */
import { createHash } from "node:crypto"

const hash = (text: string, length: number): string => createHash("sha256").update(text).digest("hex").slice(0, length)

/** The trace id of a run. */
export const traceIdOf = (runId: string): string => hash(`trace:${runId}`, 32)

/** The span id of one step of a run (`run` for the run itself). */
export const spanIdOf = (runId: string, step: string): string => hash(`span:${runId}:${step}`, 16)
