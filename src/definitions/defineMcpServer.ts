/**
 * `defineMcpServer` (route files `mcp/<name>.ts`): an MCP server in the project's catalogue.
 * Installable per instance, it declares the schema of the config an installation carries and
 * makes the server's declaration from one instance's config (its URL, its credentials), so that
 * two instances of one agent reach two servers, each with its own secrets.
 */
import type { Schema } from "effect"
import type { McpServerSpec } from "../mcp/McpServerSpec.js"
import type { AnySchema } from "./defineAgent.js"
import type { Installable } from "./defineTool.js"
import { brand, type Branded } from "./RouteKind.js"

/** An MCP server definition; `Config` is what an installation's config decodes to. */
export interface McpServerDefinition<Config = unknown> extends Branded<"mcp"> {
  /** What the server offers, shown where installations are chosen. */
  readonly description: string
  readonly installable: Installable
  /** The server's declaration for one installation's config. */
  readonly connect: { bivariant(config: Config): McpServerSpec }["bivariant"]
  /** The type the config decodes to; never set, only read by types. */
  readonly configType?: Config
}

/** Defines an installable MCP server. */
export const defineMcpServer = <Config, ConfigEncoded>(definition: {
  readonly description: string
  /** The config each installation carries; `Schema.Redacted(...)` fields are secrets. */
  readonly installable: { readonly config: Schema.Schema<Config, ConfigEncoded> }
  /** The server for one installation: `{ url, headers }` (Streamable HTTP) or `{ command, args, env }` (stdio). */
  readonly connect: (config: Config) => McpServerSpec
}): McpServerDefinition<Config> => {
  const config: AnySchema = definition.installable.config
  return brand("mcp", { description: definition.description, installable: { config }, connect: definition.connect })
}
