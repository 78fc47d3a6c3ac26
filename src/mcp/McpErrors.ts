/**
 * What can go wrong with an MCP server or one of its tool calls. Each message names the server
 * (and the tool), since it is what the model, or the person reading a failed run, is shown.
 */
import { Schema } from "effect"

/** A server could not be started or connected to, and none of its tools are known yet. */
export class McpServerUnavailable extends Schema.TaggedError<McpServerUnavailable>()("McpServerUnavailable", {
  server: Schema.String,
  declaredIn: Schema.String,
  reason: Schema.String
}) {
  override get message(): string {
    return `MCP server ${this.server} (declared in ${this.declaredIn}) could not be reached: ${this.reason}`
  }
}

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
