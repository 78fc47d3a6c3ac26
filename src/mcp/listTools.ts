/**
 * A server's `tools/list`, read page after page within bounds, however the server pages.
 */
import { setMaxListeners } from "node:events"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect } from "effect"
import { durationText } from "../definitions/configFields.js"
import { sdkTimeoutMargin } from "./mcpClientSdk.js"
import { messageOf } from "./sdkErrors.js"

/** The most pages of `tools/list` read: a server that has more is taken to page for ever. */
const maxToolPages = 100

/** A server's tools as `tools/list` gave them, and why its pages were read no further, if they were not all read. */
export interface Listed {
  readonly tools: ReadonlyArray<Tool>
  readonly stopped: string | undefined
}

/**
 * Every page of `tools/list`, within `millis` in all, each tool name once. Paging that would not
 * end is read no further: an empty cursor is taken for none (as some servers send it), and a
 * cursor given before or a page past `maxToolPages` stops it with what was listed so far. Without
 * this, a server's bug kept its connection listing for ever, and every run that mounts it waiting.
 */
export const listTools = (client: Client, millis: number): Effect.Effect<Listed, string> =>
  Effect.tryPromise({
    try: async (signal) => {
      // Each page's request listens on the signal: past Node's 10 it would warn of a leak.
      setMaxListeners(maxToolPages + 1, signal)
      const tools = new Map<string, Tool>()
      const given = new Set<string>()
      const listed = (stopped?: string): Listed => ({ tools: [...tools.values()], stopped })
      let cursor: string | undefined
      for (let pages = 1;; pages++) {
        const page = await client.listTools(cursor === undefined ? undefined : { cursor }, { signal, timeout: millis + sdkTimeoutMargin })
        for (const tool of page.tools) if (!tools.has(tool.name)) tools.set(tool.name, tool)
        cursor = page.nextCursor
        if (cursor === undefined || cursor === "") return listed()
        if (given.has(cursor)) return listed(`it gave a cursor of tools/list a second time (${JSON.stringify(cursor.slice(0, 100))})`)
        if (pages === maxToolPages) return listed(`its tools/list has more than ${maxToolPages} pages`)
        given.add(cursor)
      }
    },
    catch: messageOf
  }).pipe(
    Effect.timeoutFail({ duration: Duration.millis(millis), onTimeout: () => `it did not list its tools within ${durationText(Duration.millis(millis))}` })
  )
