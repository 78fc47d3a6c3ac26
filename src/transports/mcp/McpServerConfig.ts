/**
 * The MCP endpoint's tunables, with their defaults: how long an idle session is kept, how many
 * may be open at once, how often open sessions are checked (idle ones ended, a changed agent list
 * announced), and how many recent conversations `resources/list` names.
 */
import { Schema } from "effect"
import { DurationInputSchema, WholeAbove0 } from "../../definitions/configFields.js"

/** The tunables. */
export const McpServerConfig = Schema.Struct({
  /** A session with no request and no open stream for this long is ended. */
  sessionIdle: Schema.optionalWith(DurationInputSchema, { default: () => "30 minutes" }),
  /** Open sessions at most; an `initialize` beyond them gets a 503. */
  maxSessions: Schema.optionalWith(WholeAbove0, { default: () => 100 }),
  /** How often open sessions are checked; nothing is checked while none is open. */
  checkEvery: Schema.optionalWith(DurationInputSchema, { default: () => "1 second" }),
  /** Conversations `resources/list` names, the most recently active first. */
  recentConversations: Schema.optionalWith(WholeAbove0, { default: () => 50 })
})

/** The tunables, decoded. */
export type McpServerConfig = typeof McpServerConfig.Type

/** Every tunable at its default. */
export const defaults: McpServerConfig = Schema.decodeSync(McpServerConfig)({})
