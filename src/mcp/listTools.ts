/**
 * A server's `tools/list`, read page after page within bounds, however the server pages.
 */
import { setMaxListeners } from "node:events"
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import type { Tool } from "@modelcontextprotocol/sdk/types.js"
import { Duration, Effect } from "effect"
import { durationText } from "../definitions/configFields.js"
import { loadMcpClientSdk, sdkTimeoutMargin } from "./mcpClientSdk.js"
import { messageOf } from "./sdkErrors.js"

/** The most pages of `tools/list` read: a server that has more is taken to page for ever. */
const maxToolPages = 100

/** A tool the server listed that the SDK's schema of a tool refuses, by its name where it has one, and why. */
export interface RefusedTool {
  readonly name: string | undefined
  readonly problem: string
}

/**
 * A server's tools as `tools/list` gave them, those of them no client can take, and why its pages
 * were read no further, if they were not all read.
 */
export interface Listed {
  readonly tools: ReadonlyArray<Tool>
  readonly refused: ReadonlyArray<RefusedTool>
  readonly stopped: string | undefined
}

/** The issues of a result the SDK's schema refused (zod's validation error lists them), or `undefined` for any other error. */
const issuesOf = (error: unknown): ReadonlyArray<unknown> | undefined =>
  typeof error === "object" && error !== null && "issues" in error && Array.isArray(error.issues) ? error.issues : undefined

/** The first of a refused tool's problems, as the SDK's schema says it. */
const problemOf = (error: unknown): string => {
  const issue = issuesOf(error)?.[0]
  if (typeof issue !== "object" || issue === null) return "it is not a tool as MCP defines one"
  const path = "path" in issue && Array.isArray(issue.path) ? issue.path.join(".") : ""
  const message = "message" in issue && typeof issue.message === "string" ? issue.message : "not as MCP defines a tool"
  return path === "" ? message : `${path}: ${message}`
}

/**
 * Every page of `tools/list`, within `millis` in all, each tool name once. Paging that would not
 * end is read no further: an empty cursor is taken for none (as some servers send it), and a
 * cursor given before or a page past `maxToolPages` stops it with what was listed so far. Without
 * this, a server's bug kept its connection listing for ever, and every run that mounts it waiting.
 */
export const listTools = (client: Client, millis: number): Effect.Effect<Listed, string> =>
  Effect.flatMap(loadMcpClientSdk, ({ ListToolsResultSchema, ResultSchema, ToolSchema }) => Effect.tryPromise({
    try: async (signal) => {
      // Each page's request listens on the signal: past Node's 10 it would warn of a leak.
      setMaxListeners(maxToolPages + 1, signal)
      const options = { signal, timeout: millis + sdkTimeoutMargin }
      /**
       * One page. The SDK refuses a whole page for one tool its schema refuses (an input schema
       * whose type is not "object", say), which left the server without any tool: such a page is
       * asked again as it is, and its tools are taken one by one. Asked with `request`, not the
       * SDK's `listTools`: that caches each page's output schemas in place of the page before, and
       * the checks of every page's tools are kept with them instead (outputCheck.ts).
       */
      const pageAt = async (cursor: string | undefined) => {
        const params = cursor === undefined ? undefined : { cursor }
        try {
          const page = await client.request({ method: "tools/list", params }, ListToolsResultSchema, options)
          return { tools: page.tools, refused: [], nextCursor: page.nextCursor }
        } catch (error) {
          if (issuesOf(error) === undefined) throw error
          const page = await client.request({ method: "tools/list", params }, ResultSchema, options)
          const listed: ReadonlyArray<unknown> = Array.isArray(page.tools) ? page.tools : []
          const taken: Array<Tool> = []
          const refused: Array<RefusedTool> = []
          for (const raw of listed) {
            const tool = ToolSchema.safeParse(raw)
            if (tool.success) taken.push(tool.data)
            else {
              const name = typeof raw === "object" && raw !== null && "name" in raw && typeof raw.name === "string" ? raw.name : undefined
              refused.push({ name, problem: problemOf(tool.error) })
            }
          }
          return { tools: taken, refused, nextCursor: typeof page.nextCursor === "string" ? page.nextCursor : undefined }
        }
      }
      const tools = new Map<string, Tool>()
      const refused: Array<RefusedTool> = []
      const given = new Set<string>()
      const listed = (stopped?: string): Listed => ({ tools: [...tools.values()], refused, stopped })
      let cursor: string | undefined
      for (let pages = 1;; pages++) {
        const page = await pageAt(cursor)
        for (const tool of page.tools) if (!tools.has(tool.name)) tools.set(tool.name, tool)
        refused.push(...page.refused)
        cursor = page.nextCursor
        if (cursor === undefined || cursor === "") return listed()
        if (given.has(cursor)) return listed(`it gave a cursor of tools/list a second time (${JSON.stringify(cursor.slice(0, 100))})`)
        if (pages === maxToolPages) return listed(`its tools/list has more than ${maxToolPages} pages`)
        given.add(cursor)
      }
    },
    catch: messageOf
  })).pipe(
    Effect.timeoutFail({ duration: Duration.millis(millis), onTimeout: () => `it did not list its tools within ${durationText(Duration.millis(millis))}` })
  )
