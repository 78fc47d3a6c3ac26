/**
 * The cluster's sweep for conversations nobody executes reads them a page at a time, in the order
 * of their ids, each sweep after where the last stopped: a backlog larger than a page does not
 * keep the conversations after it from ever being woken. On both stores, through the statement the
 * sweep reads.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { stranded } from "../../src/dispatch/clusterStatements.js"
import { processTime } from "../../src/journal/journalStatements.js"
import { backends, freshStorage } from "../journal/backends.js"
import { newRun, submit } from "../journal/fixtures.js"

for (const backend of backends) {
  describe.skipIf(backend.skip)(`the stranded conversations on ${backend.name}`, () => {
    it.scoped("come page by page after the last one read, each once, then from the start again", () =>
      Effect.gen(function*() {
        const { database, journal } = yield* freshStorage(backend)
        const conversations = Array.from({ length: 25 }, (_, index) => `c${String(index).padStart(2, "0")}`)
        for (const [index, conversationId] of conversations.entries()) yield* submit(journal, newRun(`r${index}`, { conversationId }))
        // Long after any lease taken with them has expired.
        const now = Date.now() + 3_600_000
        const pages: Array<ReadonlyArray<string>> = []
        let after = ""
        do {
          const rows = yield* database.read(stranded(processTime, now, 10, after))
          pages.push(rows.map((row) => String(row.conversation_id)))
          after = rows.length < 10 ? "" : String(rows[rows.length - 1]?.conversation_id)
        } while (after !== "")
        expect(pages.map((page) => page.length)).toEqual([10, 10, 5])
        expect(pages.flat()).toEqual(conversations)
        expect((yield* database.read(stranded(processTime, now, 10, ""))).map((row) => String(row.conversation_id))).toEqual(conversations.slice(0, 10))
      }))
  })
}
