/**
 * What can go wrong with an MCP server or one of its tool calls. Each message names the server
 * (and the tool), since it is what the model, or the person reading a failed run, is shown.
 */
import { Schema } from "effect"
import type { McpMount } from "./McpMount.js"

/** A server could not be started or connected to, and none of its tools are known yet. */
export class McpServerUnavailable extends Schema.TaggedError<McpServerUnavailable>()("McpServerUnavailable", {
  server: Schema.String,
  declaredIn: Schema.String,
  /** For a server an instance installed: which one (`instance "a" of agent "support"`), whose config to check. */
  installedOn: Schema.optional(Schema.String),
  reason: Schema.String
}) {
  override get message(): string {
    const where = this.installedOn === undefined ? `declared in ${this.declaredIn}` : `${this.declaredIn}, installed on ${this.installedOn}`
    return `MCP server ${this.server} (${where}) could not be reached: ${this.reason}`
  }
}

/** `mount`'s server could not be reached, for `reason`. */
export const unavailable = (mount: McpMount, reason: string): McpServerUnavailable =>
  new McpServerUnavailable({
    server: mount.name,
    declaredIn: mount.declaredIn,
    ...(mount.instance === undefined ? {} : { installedOn: `instance "${mount.instance.id}" of agent "${mount.instance.agent}"` }),
    reason
  })

/** The server went away (its process exited, its endpoint stopped answering); a restart is under way. */
export class McpServerNotRunning extends Schema.TaggedError<McpServerNotRunning>()("McpServerNotRunning", {
  server: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `MCP server ${this.server} is not running: ${this.reason}; restarting`
  }
}

/** A call outlasted its server's `timeout` and was cancelled. */
export class McpCallTimedOut extends Schema.TaggedError<McpCallTimedOut>()("McpCallTimedOut", {
  server: Schema.String,
  tool: Schema.String,
  timeout: Schema.String
}) {
  override get message(): string {
    return `MCP server ${this.server} did not answer the call to ${this.tool} within ${this.timeout} (the server's timeout), so it was cancelled`
  }
}

/** The server answered the call with an error (`isError`, or a JSON-RPC error). */
export class McpToolFailed extends Schema.TaggedError<McpToolFailed>()("McpToolFailed", {
  server: Schema.String,
  tool: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `${this.tool} on MCP server ${this.server}: ${this.reason}`
  }
}

/** Any way an MCP tool call fails. */
export type McpCallError = McpServerUnavailable | McpServerNotRunning | McpCallTimedOut | McpToolFailed
