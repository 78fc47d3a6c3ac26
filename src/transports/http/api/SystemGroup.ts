/**
 * The project's routes, its build and the server's health.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { BuildReport } from "../../../compiler/BuildStatus.js"

/** A route as `GET /api/routes` lists it (the manifest's shape). */
export const RouteView = Schema.Struct({
  kind: Schema.Literal("agent", "tool", "mcp", "playbook", "schedule", "environment"),
  id: Schema.String,
  file: Schema.String,
  description: Schema.optional(Schema.String),
  tools: Schema.optional(Schema.Array(Schema.String)),
  /** The agents an agent delegates to, each through its tool `ask-<name>`. */
  subagents: Schema.optional(Schema.Array(Schema.Struct({ agent: Schema.String, tool: Schema.String }))),
  requires: Schema.optional(Schema.Array(Schema.String)),
  approval: Schema.optional(Schema.Literal("always", "by input")),
  agent: Schema.optional(Schema.String),
  environment: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  /** The model an agent runs on when it is not the one it asks for, and why (`demo` without an OpenAI key). */
  runsOn: Schema.optional(Schema.Struct({ model: Schema.String, reason: Schema.String })),
  schedules: Schema.optional(Schema.Array(Schema.String)),
  playbooks: Schema.optional(Schema.Array(Schema.String)),
  timing: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.String })),
  webhook: Schema.optional(Schema.String),
  event: Schema.optional(Schema.String),
  input: Schema.optional(Schema.Unknown),
  installable: Schema.optional(Schema.Literal(true)),
  context: Schema.optional(Schema.Unknown)
})

/** The system group. */
export class SystemGroup extends HttpApiGroup.make("system")
  .add(
    HttpApiEndpoint.get("routes", "/api/routes").addSuccess(Schema.Struct({
      config: Schema.NullOr(Schema.String),
      routes: Schema.Array(RouteView)
    }))
  )
  .add(HttpApiEndpoint.get("build", "/api/build").addSuccess(BuildReport))
  .add(
    HttpApiEndpoint.get("health", "/health").addSuccess(Schema.Struct({
      status: Schema.Literal("ok"),
      agents: Schema.Number,
      uptimeMs: Schema.Number,
      /** Routes the serving build leaves out (`foundry dev` while their files do not build; GET /api/build says why); absent when none is. */
      leftOut: Schema.optional(Schema.Number)
    }))
  )
{}
