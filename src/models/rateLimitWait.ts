/**
 * How long a rate-limited response asks to wait, from wherever the provider says it: the standard
 * headers, OpenAI's rate-limit reset headers, or the wording of its error message.
 */

/** A wait a response asked for, in milliseconds, and where it said so (told in the retry's error). */
export interface AskedWait {
  readonly millis: number
  readonly from: string
}

/** One `<number><unit>` part of a Go-style duration, as OpenAI writes its reset headers ("6m0s", "20ms", "1.5s"). */
const durationPart = /(\d+(?:\.\d+)?)(ms|us|µs|ns|h|m|s)/y

const unitMillis: Readonly<Record<string, number>> = { h: 3_600_000, m: 60_000, s: 1000, ms: 1, us: 0.001, "µs": 0.001, ns: 0.000001 }

/** A Go-style duration ("1s", "6m0s", "1h2m3.5s", "250ms") in milliseconds; `undefined` for anything else. */
export const parseDuration = (text: string): number | undefined => {
  const trimmed = text.trim()
  if (trimmed === "") return undefined
  let total = 0
  durationPart.lastIndex = 0
  while (durationPart.lastIndex < trimmed.length) {
    const at = durationPart.lastIndex
    const match = durationPart.exec(trimmed)
    if (match === null || match.index !== at) return undefined
    total += Number(match[1]) * (unitMillis[match[2] ?? ""] ?? Number.NaN)
  }
  return Number.isFinite(total) ? total : undefined
}

/** The standard ones: OpenAI's `retry-after-ms`, else `retry-after` in seconds or as an HTTP date. */
const retryAfterHeader = (headers: Headers | undefined): number | undefined => {
  const millis = Number.parseFloat(headers?.get("retry-after-ms") ?? "")
  if (Number.isFinite(millis) && millis >= 0) return millis
  const raw = headers?.get("retry-after")
  if (raw === null || raw === undefined || raw.trim() === "") return undefined
  const seconds = Number(raw)
  if (Number.isFinite(seconds)) return seconds >= 0 ? seconds * 1000 : undefined
  const at = Date.parse(raw)
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now())
}

/**
 * OpenAI's `x-ratelimit-reset-requests` / `-tokens`: when the limit the 429 names (its error
 * `type`, "requests" or "tokens") is whole again; when it names neither, the later of the two,
 * after which both have room.
 */
const resetHeader = (headers: Headers | undefined, limit: unknown): AskedWait | undefined => {
  const read = (which: "requests" | "tokens"): AskedWait | undefined => {
    const name = `x-ratelimit-reset-${which}`
    const millis = parseDuration(headers?.get(name) ?? "")
    return millis === undefined ? undefined : { millis, from: name }
  }
  if (limit === "requests" || limit === "tokens") return read(limit)
  const [requests, tokens] = [read("requests"), read("tokens")]
  if (requests === undefined || tokens === undefined) return requests ?? tokens
  return requests.millis >= tokens.millis ? requests : tokens
}

/** OpenAI's "Please try again in 20s." (also "in 1.5s", "in 250ms", "in 6m0s"). */
const tryAgainIn = /try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)/i

/**
 * The wait a response asks for: `retry-after-ms` / `retry-after`, else, for a 429 (`limited`: its
 * error's `type` and message), OpenAI's reset header for the limit it hit, else its message's
 * "try again in …". OpenAI sends its reset headers on every answer, so a 5xx's are not a wait.
 */
export const askedWait = (
  headers: Headers | undefined,
  limited: { readonly type: unknown; readonly message: string } | undefined
): AskedWait | undefined => {
  const standard = retryAfterHeader(headers)
  if (standard !== undefined) return { millis: standard, from: "retry-after" }
  if (limited === undefined) return undefined
  const reset = resetHeader(headers, limited.type)
  if (reset !== undefined) return reset
  const said = tryAgainIn.exec(limited.message)?.[1]
  const millis = said === undefined ? undefined : parseDuration(said)
  return millis === undefined ? undefined : { millis, from: "error message" }
}
