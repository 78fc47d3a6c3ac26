/**
 * The project's `images` budget: a conversation whose tool results showed more images than one
 * model request may carry sends the newest, the older results saying theirs were left out. Through
 * a real project served over HTTP, a stdio MCP server's screenshots and a scripted model that sees.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import type { ChatMessage } from "../../src/models/Model.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { screenshotPng } from "./fixtures/fixtureTools.js"
import { mcpProject, steppedModel, steps } from "./mcpProject.js"

/** Runs a turn for each of `tools` (of the `files` server), under the config's `images`; the messages of each request. */
const turnsCalling = (images: string, tools: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const root = yield* tempProject(mcpProject({ log: join(tmpdir(), `foundry-mcp-${randomUUID()}.log`), config: `images: ${images},` }))
    const { model, sent } = steppedModel({ vision: true })
    const server = yield* startServer(root, { model })
    const turns = tools.map((tool) => [{ name: `files__${tool}`, arguments: {} }])
    const created = yield* http(`${server.url}/api/runs`, { body: { agent: "worker", message: steps(...turns) } })
    const { runId } = created.json as { runId: string }
    expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
    return sent
  })

/** Three turns that each take a screenshot (one PNG shown each). */
const threeScreenshots = (images: string) => turnsCalling(images, ["screenshot", "screenshot", "screenshot"])

const toolMessages = (messages: ReadonlyArray<ChatMessage> | undefined) => (messages ?? []).filter((message) => message._tag === "tool")

const page = "the page\n[image 1: image/png, 70 bytes, shown]\n[image: image/tiff, 3 bytes, not shown: a model is shown PNG, JPEG, GIF or WebP]"

describe("images per model request", () => {
  it.scopedLive("past images.maxPerRequest the oldest images are left out of the request, the newest kept, each left-out place saying why", () =>
    Effect.gen(function*() {
      const sent = yield* threeScreenshots("{ maxPerRequest: 2 }")
      // Two images fit: the second turn's request is as the transcript has it.
      expect(toolMessages(sent[2]).map((message) => message._tag === "tool" ? message.images : undefined)).toEqual([
        [{ mediaType: "image/png", data: screenshotPng }],
        [{ mediaType: "image/png", data: screenshotPng }]
      ])
      const last = toolMessages(sent[3])
      expect(last).toHaveLength(3)
      expect(last[0]).toEqual({
        _tag: "tool",
        toolCallId: "call_1_1",
        name: "files__screenshot",
        content: `${page}\n(the image this tool showed is left out of this request, to keep it within images.maxPerRequest (2 images) of foundry.config.ts; newer images are shown)`
      })
      for (const newer of last.slice(1)) {
        expect(newer).toMatchObject({ content: page, images: [{ mediaType: "image/png", data: screenshotPng }] })
      }
    }), { timeout: 60_000 })

  it.scopedLive("past images.maxBytesPerRequest the same, by the images' size as sent", () =>
    Effect.gen(function*() {
      // Room for two of the screenshots' base64, not three.
      const sent = yield* threeScreenshots(`{ maxBytesPerRequest: ${screenshotPng.length * 2 + 10} }`)
      const last = toolMessages(sent[3])
      expect(last.map((message) => message._tag === "tool" && message.images !== undefined)).toEqual([false, true, true])
      expect(last[0]?.content).toContain(
        `(the image this tool showed is left out of this request, to keep it within images.maxBytesPerRequest (${screenshotPng.length * 2 + 10} bytes) of foundry.config.ts`
      )
    }), { timeout: 60_000 })

  it.scopedLive("an older image that still fits is kept where a newer, larger one was left out", () =>
    Effect.gen(function*() {
      // A tiny picture, then two screenshots: room for one screenshot and the picture, not two screenshots.
      const budget = screenshotPng.length + 10
      const sent = yield* turnsCalling(`{ maxBytesPerRequest: ${budget} }`, ["picture", "screenshot", "screenshot"])
      const last = toolMessages(sent[3])
      expect(last.map((message) => message._tag === "tool" ? message.images : undefined)).toEqual([
        [{ mediaType: "image/png", data: "AAAA" }],
        undefined,
        [{ mediaType: "image/png", data: screenshotPng }]
      ])
      expect(last[0]?.content).not.toContain("left out")
      expect(last[1]?.content).toBe(
        `${page}\n(the image this tool showed is left out of this request, to keep it within images.maxBytesPerRequest (${budget} bytes) of foundry.config.ts; newer images are shown)`
      )
    }), { timeout: 60_000 })
})
