/**
 * A page of a list read one row longer than the page: the extra row says whether another page
 * follows, so that the last page's `next` is `null` rather than a cursor to an empty page.
 */

/** The first `limit` of `found` (read with a limit of `limit + 1`), and where the next page starts from (`endOf` its last row) when one follows. */
export const pageOf = <A, End>(found: ReadonlyArray<A>, limit: number, endOf: (last: A) => End): { readonly rows: ReadonlyArray<A>; readonly next: End | null } => {
  const rows = found.slice(0, limit)
  const last = rows.at(-1)
  return { rows, next: found.length > limit && last !== undefined ? endOf(last) : null }
}
