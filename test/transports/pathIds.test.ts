/**
 * Ids in paths as long as their APIs allow: an instance id of 128 characters and a conversation id
 * of 200 are reached by URL like any other; a path whose percent-encoding is broken is a 400 that
 * says so (it was a 405 saying the method it was sent with is the one it takes).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const project = {
  "agents/helper/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Helps" })
`
}

describe("ids in paths", () => {
  it.scopedLive("a 128-character instance id and a 200-character conversation id are reached by URL; a broken path is a 400", () =>
    Effect.gen(function*() {
      const { url } = yield* startServer(yield* tempProject(project), { model: Scripted.make(() => ({ text: "hello" })) })
      const instance = "i".repeat(128)
      expect((yield* http(`${url}/api/instances`, { body: { agent: "helper", id: instance } })).status).toBe(201)
      const read = yield* http(`${url}/api/instances/${instance}?agent=helper`)
      expect(read.status, read.text).toBe(200)
      expect(read.json).toMatchObject({ id: instance, agent: "helper" })
      const paused = yield* http(`${url}/api/instances/${instance}?agent=helper`, { method: "PATCH", body: { paused: true } })
      expect(paused.status, paused.text).toBe(200)

      // /v1 names a conversation of up to 200 characters; its messages are read by that id.
      const conversation = "c".repeat(200)
      const answered = yield* http(`${url}/v1/chat/completions`, {
        body: { model: "helper", messages: [{ role: "user", content: "hi" }] },
        headers: { "x-foundry-conversation": conversation }
      })
      expect(answered.status, answered.text).toBe(200)
      const messages = yield* http(`${url}/api/conversations/${conversation}/messages`)
      expect(messages.status, messages.text).toBe(200)
      expect(JSON.stringify(messages.json)).toContain("hello")

      const run = (yield* http(`${url}/api/runs`, { body: { agent: "helper", message: "hi" } })).json as { runId: string }
      expect((yield* waitForRun(url, run.runId)).status).toBe("completed")
      const broken = yield* http(`${url}/api/runs/%E0%A4%A`)
      expect(broken.status).toBe(400)
      expect(broken.json).toMatchObject({ _tag: "BadPath", message: expect.stringContaining("the path could not be read") })
    }))
})
