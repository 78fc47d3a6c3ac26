/**
 * The name a misspelt one was meant to be: the candidate at the smallest edit distance, case
 * ignored (`readfile` is `readFile`), if it is close enough to be a slip rather than another name.
 */

/** Edit distance between two strings, a swap of neighbours counting as one edit (`xslx` is one from `xlsx`). */
const distance = (a: string, b: string): number => {
  const rows: Array<Array<number>> = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => i === 0 ? j : j === 0 ? i : 0))
  const at = (i: number, j: number): number => rows[i]?.[j] ?? 0
  for (let i = 1; i <= a.length; i++) {
    const row = rows[i] ?? []
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1
      row[j] = Math.min(at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + cost)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) row[j] = Math.min(at(i, j), at(i - 2, j - 2) + 1)
    }
  }
  return at(a.length, b.length)
}

/** The candidate `name` most likely means, or undefined when none is near. */
export const closest = (name: string, candidates: ReadonlyArray<string>): string | undefined => {
  const wanted = name.toLowerCase()
  let best: { readonly candidate: string; readonly score: number } | undefined
  for (const candidate of candidates) {
    // Case slips count less than other edits, so `readfile` finds `readFile` before `readFiles`.
    const score = distance(wanted, candidate.toLowerCase()) * 2 + (distance(name, candidate) > 0 ? 1 : 0)
    if (best === undefined || score < best.score) best = { candidate, score }
  }
  if (best === undefined) return undefined
  const allowed = Math.max(1, Math.floor(Math.max(name.length, best.candidate.length) / 3))
  return Math.floor(best.score / 2) <= allowed ? best.candidate : undefined
}

/**
 * The field or parameter `name` most likely means: the same name with or without `Id` (the API
 * names one thing both ways: `/api/events` takes `runId`, `/api/approvals` `run`), else the closest.
 */
export const meantField = (name: string, fields: ReadonlyArray<string>): string | undefined =>
  fields.find((field) => field === `${name}Id` || `${field}Id` === name) ?? closest(name, fields)

/** `; did you mean "support"?` after what names nothing, when a name was likely meant. */
export const didYouMean = (meant: string | undefined): string => meant === undefined ? "" : `; did you mean "${meant}"?`

/** `there is no agent "suport"; did you mean "support"? (the agents: support, triage)`: a name that names nothing, said with what it may have meant. */
export const noSuch = (kind: string, name: string, known: ReadonlyArray<string>): string =>
  `there is no ${kind} "${name}"${didYouMean(closest(name, known))} (the ${kind}s: ${known.join(", ") || "none"})`
