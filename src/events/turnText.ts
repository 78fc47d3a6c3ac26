/**
 * A run's turns' text as a follower reads it from the run's events: each turn's deltas as they
 * come, then what they left out at the turn's end, so the text comes whole and once, streamed where
 * it could be. A delta that does not go on from what was read of its turn (some were missed: the
 * follower came in the middle of the turn, or followed through another process before the one
 * executing the run heard of it) is passed by, and so are the turn's later ones: its end brings the rest.
 */

/** One follower's reading. */
export const turnTextReading = () => {
  const read = new Map<number, string>()
  const missed = new Set<number>()
  return {
    /** The text a delta of `turn` at `at` adds ("" for none). */
    delta: (turn: number, at: number, text: string): string => {
      if (missed.has(turn)) return ""
      const before = read.get(turn) ?? ""
      if (at !== before.length) {
        missed.add(turn)
        return ""
      }
      read.set(turn, before + text)
      return text
    },
    /** What the turn's whole `text` adds at its end to what was read of it. */
    completed: (turn: number, text: string): string => {
      const before = read.get(turn) ?? ""
      // What was read cannot be taken back: a text that does not go on from it adds nothing.
      if (!text.startsWith(before)) return ""
      read.set(turn, text)
      return text.slice(before.length)
    },
    /** The text read of `turn` so far. */
    textOf: (turn: number): string => read.get(turn) ?? "",
    /** The turn starts again from its first word (asked again after a retry or a fallback); what was read of it stays read. */
    restart: (turn: number): void => {
      read.delete(turn)
      missed.delete(turn)
    }
  }
}
