/**
 * The scope a verb of workspace `environment` runs in for the environment tests: a call of clerk's
 * run `runId` in instance `acme`, with `mounts` (the agent's MCP servers) if any.
 */
import { tmpdir } from "node:os"
import { Effect } from "effect"
import type { EnvironmentDefinition } from "../../../src/definitions/defineEnvironment.js"
import type { VerbScope } from "../../../src/environments/Environments.js"
import type { McpMount } from "../../../src/mcp/McpMount.js"

export const verbScope = (
  environment: EnvironmentDefinition,
  call: { readonly runId: string; readonly toolCallId: string },
  mounts: ReadonlyArray<McpMount> = []
): VerbScope => ({
  environmentId: "workspace",
  environment,
  root: tmpdir(),
  release: "r1",
  mounts,
  permissions: [],
  toolNames: new Map(),
  context: {
    runId: call.runId,
    toolCallId: call.toolCallId,
    conversationId: "c1",
    instanceId: "acme",
    agent: "clerk",
    instance: { id: "acme", context: {} },
    config: undefined,
    resultLimit: 16_000,
    spawn: () => Effect.dieMessage("not in this test"),
    emit: () => Effect.dieMessage("not in this test")
  }
})
