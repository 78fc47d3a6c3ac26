/**
 * An agent offering more tools than OpenAI takes in one request (128): the run fails at once
 * naming the agent, the count and the fix, rather than on OpenAI's 400 "array too long" at every
 * turn. Through the server, the agent on the OpenAI adapter at the strict fake (which refuses
 * more than 128 tools as OpenAI does).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as OpenAiModel from "../../src/models/openai.js"
import { http, startServer, waitForRun } from "../support/server.js"
import * as Fake from "../support/strictOpenAi.js"
import { tempProject, toolFile } from "../support/tempProject.js"

/** A project whose agent `big` lists `count` tools, `t0` to `t<count-1>`. */
const project = (count: number) => {
  const names = Array.from({ length: count }, (_, i) => `t${i}`)
  const files: Record<string, string> = {
    "agents/big/agent.ts": `import { defineAgent } from "foundry"\n${names.map((name) => `import ${name} from "./tools/${name}.tool.js"`).join("\n")}\n\n` +
      `export default defineAgent({ description: "Does everything", model: "demo", tools: [${names.join(", ")}] })\n`
  }
  for (const name of names) files[`agents/big/tools/${name}.tool.ts`] = toolFile(`Tool ${name}`)
  return files
}

const tool = (name: string) => ({ type: "function", function: { name, parameters: { type: "object", properties: {} } } })

describe("more tools than the model takes", () => {
  it("the strict fake refuses more than 128 tools, as OpenAI does", () => {
    const body = (count: number) => ({ model: "gpt-4.1-mini", messages: [{ role: "user", content: "hi" }], tools: Array.from({ length: count }, (_, i) => tool(`t${i}`)) })
    expect(Fake.validateChatRequest(body(128))).toBeUndefined()
    expect(Fake.validateChatRequest(body(129))).toBe(
      "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 129 instead."
    )
  })

  it.scopedLive("fail the run before the model is asked, naming the agent, the count and the fix", () =>
    Effect.gen(function*() {
      const provider = yield* Fake.strictOpenAi({ otherwise: () => Fake.text("never") })
      const root = yield* tempProject(project(129))
      // OpenAI's limit, as the adapter keeps it for OpenAI itself (no `baseURL`); here the fake stands in for it.
      const server = yield* startServer(root, { model: OpenAiModel.make({ model: "gpt-4.1-mini", apiKey: "sk-test", baseURL: provider.url, maxTools: 128 }) })
      const created = yield* http(`${server.url}/api/runs`, { body: { agent: "big", message: "hello" } })
      expect(created.status, created.text).toBe(202)
      const { runId } = created.json as { runId: string }
      const run = (yield* waitForRun(server.url, runId)) as unknown as { readonly status: string; readonly error: string }
      expect(run.status).toBe("failed")
      expect(run.error).toBe(
        "agent \"big\" offers its model 129 tools, but openai:gpt-4.1-mini takes at most 128 in one request; list fewer tools in " +
          "agents/big/agent.ts (or narrow its MCP servers' tools with their `tools` allowlist, or install fewer on its instance), " +
          "or split it into agents that each need fewer"
      )
      expect(provider.requests).toEqual([])
    }))

  it("OpenAI's limit is kept for OpenAI itself; a compatible server's is its own unless one is given", () => {
    expect(OpenAiModel.make({ model: "gpt-4.1-mini", apiKey: "sk-test" }).maxTools).toBe(128)
    expect(OpenAiModel.make({ model: "llama-3.1-70b", apiKey: "sk-test", baseURL: "http://127.0.0.1:8000/v1" }).maxTools).toBeUndefined()
    expect(OpenAiModel.make({ model: "llama-3.1-70b", apiKey: "sk-test", baseURL: "http://127.0.0.1:8000/v1", maxTools: 64 }).maxTools).toBe(64)
  })
})
