import { describe, expect, it } from "@effect/vitest"
import { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js"
import { Effect } from "effect"
import OpenAI from "openai"
import { startServer } from "../support/server.js"
import { authProject, bearer, issue } from "./support.js"

const outcome = <A>(f: () => Promise<A>) => Effect.promise(() => f().then((value) => ({ value }), (error: unknown) => ({ error })))

describe("tokens with the real clients", () => {
  it.scopedLive("the openai client: a token is its API key; an unknown key is AuthenticationError, a read token cannot complete", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const read = yield* issue(server.storeFile, "read")
      const run = yield* issue(server.storeFile, "run")
      const client = (apiKey: string) => new OpenAI({ baseURL: `${server.url}/v1`, apiKey, maxRetries: 0 })

      const models = yield* outcome(() => client(read.token).models.list())
      expect("value" in models && models.value.data.map((m) => m.id)).toContain("echo")
      const anonymous = yield* outcome(() => client("sk-not-a-foundry-token").models.list())
      expect("error" in anonymous && anonymous.error).toBeInstanceOf(OpenAI.AuthenticationError)
      const readOnly = yield* outcome(() => client(read.token).chat.completions.create({ model: "echo", messages: [{ role: "user", content: "hi" }] }))
      expect("error" in readOnly && readOnly.error).toBeInstanceOf(OpenAI.PermissionDeniedError)
      expect("error" in readOnly && String(readOnly.error)).toContain(`scope "run"`)
      const completed = yield* outcome(() => client(run.token).chat.completions.create({ model: "echo", messages: [{ role: "user", content: "hi" }] }))
      expect("value" in completed && completed.value.object).toBe("chat.completion")
    }))

  it.scopedLive("the MCP SDK client: /mcp needs a run token, sent as a header of the transport", () =>
    Effect.gen(function*() {
      const root = yield* authProject()
      const server = yield* startServer(root)
      const read = yield* issue(server.storeFile, "read")
      const run = yield* issue(server.storeFile, "run")
      const connect = (headers: Record<string, string>) =>
        Effect.acquireRelease(
          outcome(async () => {
            const client = new Client({ name: "foundry-auth-test", version: "1.0.0" })
            await client.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { requestInit: { headers } }))
            return client
          }),
          (result) => "value" in result ? Effect.promise(() => result.value.close()) : Effect.void
        )
      const anonymous = yield* connect({})
      expect("error" in anonymous && String(anonymous.error)).toMatch(/401|Unauthorized/)
      const readOnly = yield* connect(bearer(read.token))
      expect("error" in readOnly && String(readOnly.error)).toMatch(/403|Forbidden/)
      const allowed = yield* connect(bearer(run.token))
      if (!("value" in allowed)) return expect.fail(`connect failed: ${String(allowed.error)}`)
      const tools = yield* Effect.promise(() => allowed.value.listTools())
      expect(tools.tools.map((tool) => tool.name)).toContain("echo")
    }))
})
