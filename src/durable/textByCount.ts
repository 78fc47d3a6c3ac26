/** A statement's text by a count of its parts (rows, ranges), made once per count. */

/**
 * `make`'s text for each count, made the first time it is asked for: the store's cache of prepared
 * statements is keyed by the text, and a text made anew is hashed anew on every lookup.
 */
export const textByCount = (make: (count: number) => string): (count: number) => string => {
  const texts: Array<string> = []
  return (count) => texts[count] ??= make(count)
}
