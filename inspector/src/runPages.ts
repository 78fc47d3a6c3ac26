/**
 * A list of runs read page by page, newest first, as `/api/runs` gives them: live redraws read the
 * newest page again, and the older pages the reader loaded stay below it.
 */
import type { RunView } from "./api.js"

/** Runs read at a time. */
export const runPageSize = 200

/** Whether `run` comes after `last` in the API's order (newest first: by creation time, then id). */
const isOlder = (run: RunView, last: RunView): boolean =>
  run.createdAt < last.createdAt || (run.createdAt === last.createdAt && run.id < last.id)

/**
 * The runs shown once the newest page is read again: that page, then the older runs shown before
 * (those past its last run). `older` says whether more may follow them: as before when older runs
 * were loaded, else whether the newest page was full.
 */
export const withNewestPage = (
  shown: ReadonlyArray<RunView>,
  newest: ReadonlyArray<RunView>,
  olderBefore: boolean
): { readonly runs: ReadonlyArray<RunView>; readonly older: boolean } => {
  const last = newest[newest.length - 1]
  if (last === undefined || newest.length < runPageSize) return { runs: newest, older: false }
  const ids = new Set(newest.map((run) => run.id))
  const tail = shown.filter((run) => !ids.has(run.id) && isOlder(run, last))
  return { runs: [...newest, ...tail], older: tail.length > 0 ? olderBefore : true }
}
