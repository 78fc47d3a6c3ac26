/**
 * Agents using MCP servers' tools: a stdio server run as a child process and a Streamable HTTP
 * server on loopback, both written with the MCP SDK (test/mcp/fixtures), reached through a real
 * project served over HTTP with a scripted model.
 */
import { existsSync, readFileSync } from "node:fs"
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"
import { screenshotPng } from "./fixtures/fixtureTools.js"
import { startHttpServer } from "./fixtures/httpServer.js"
import { startSessionHttpServer } from "./fixtures/sessionHttpServer.js"
import { authVariable, mcpProject, steppedModel, steps } from "./mcpProject.js"

interface Created {
  readonly runId: string
  readonly conversationId: string
}

interface Event {
  readonly type: string
  readonly data: Record<string, unknown>
}

const newLog = () => join(tmpdir(), `foundry-mcp-${randomUUID()}.log`)

/** The pids the stdio fixture logged as it started, in order. */
const starts = (log: string): ReadonlyArray<string> =>
  existsSync(log) ? readFileSync(log, "utf8").trim().split("\n").filter((line) => line !== "").map((line) => line.replace("started ", "")) : []

const submit = (url: string, message: string, conversation?: string) =>
  Effect.map(http(`${url}/api/runs`, { body: { agent: "worker", message, ...(conversation === undefined ? {} : { conversation }) } }), (r) => {
    expect(r.status).toBe(202)
    return r.json as Created
  })

const eventsOf = (url: string, runId: string) => Effect.map(http(`${url}/api/runs/${runId}/events`), (r) => r.json as ReadonlyArray<Event>)

/** Polls until `check` holds. */
const eventually = <A>(what: string, probe: Effect.Effect<A>, check: (value: A) => boolean) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 600; attempt++) {
      const value = yield* probe
      if (check(value)) return value
      yield* Effect.sleep("25 millis")
    }
    return yield* Effect.die(new Error(`never happened: ${what}`))
  })

/** Waits until run `runId` has started its call to `tool`. */
const callStarted = (url: string, runId: string, tool: string) =>
  eventually(`the call to ${tool} started`, eventsOf(url, runId), (events) =>
    events.some((e) => e.type === "tool.call.started" && e.data.tool === tool))

const status = (url: string, runId: string) => Effect.map(http(`${url}/api/runs/${runId}`), (r) => (r.json as { status: string }).status)

const token = `secret-${randomUUID()}`

/** The project with the stdio server as `files` and the HTTP server as `web`, served with the stepped model. */
const setup = (options: { readonly files?: string; readonly config?: string; readonly vision?: boolean; readonly json?: boolean } = {}) =>
  Effect.gen(function*() {
    process.env[authVariable] = `Bearer ${token}`
    yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[authVariable]))
    const web = yield* startHttpServer(token, { json: options.json === true })
    const log = newLog()
    const root = yield* tempProject(mcpProject({ log, httpUrl: web.url, ...options }))
    const { model, offered, sent } = steppedModel({ vision: options.vision })
    const server = yield* startServer(root, { model })
    return { url: server.url, log, web, offered, sent, root, storeFile: server.storeFile }
  })

describe("MCP client", () => {
  it.scopedLive("an agent uses a stdio server's tool and a Streamable HTTP server's tool in one run, journaled like any tool", () =>
    Effect.gen(function*() {
      const { log, offered, url, web } = yield* setup()
      const run = yield* submit(url, steps([
        { name: "files__echo", arguments: { text: "from stdio" } },
        { name: "web__weather", arguments: { city: "Oslo" } }
      ]))
      expect(yield* waitForRun(url, run.runId)).toMatchObject({ status: "completed", output: "done: from stdio | sunny in Oslo" })

      // The model saw both servers' tools under their prefixes, with the servers' own JSON Schemas.
      const names = offered[0]?.tools.map((tool) => tool.name) ?? []
      expect(names).toEqual(expect.arrayContaining(["files__echo", "files__pid", "files__dotted_name", "web__weather", "web__echo"]))
      expect(offered[0]?.tools.find((tool) => tool.name === "web__weather")).toEqual({
        name: "web__weather",
        description: "Today's weather in a city",
        parameters: { type: "object", properties: { city: { type: "string", minLength: 1 } }, required: ["city"] }
      })

      const events = yield* eventsOf(url, run.runId)
      for (const tool of ["files__echo", "web__weather"]) {
        expect(events.find((e) => e.type === "tool.call.started" && e.data.tool === tool)).toBeDefined()
        expect(events.find((e) => e.type === "tool.call.completed" && e.data.tool === tool)).toBeDefined()
      }
      expect(events.find((e) => e.type === "tool.call.completed" && e.data.tool === "web__weather")?.data).toMatchObject({
        input: { city: "Oslo" },
        output: "sunny in Oslo"
      })
      // The header was read from its Config and sent; it appears in no event.
      expect(web.authorizations).toContain(`Bearer ${token}`)
      expect(JSON.stringify(events)).not.toContain(token)

      const transcript = yield* http(`${url}/api/conversations/${run.conversationId}/messages`)
      expect(transcript.text).toContain("sunny in Oslo")
      expect(transcript.text).toContain("from stdio")
      expect(starts(log)).toHaveLength(1)
    }))

  it.scopedLive("a killed stdio server: the call in flight and a call meanwhile are tool errors, and after the restart a call works", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const first = yield* submit(url, steps([{ name: "files__pid", arguments: {} }]))
      const firstRun = yield* waitForRun(url, first.runId)
      const pid = firstRun.output?.replace("done: ", "") ?? ""
      expect(starts(log)).toEqual([pid])

      const killed = yield* submit(url, steps([{ name: "files__slow", arguments: { ms: 20_000 } }], [{ name: "files__pid", arguments: {} }]), first.conversationId)
      yield* callStarted(url, killed.runId, "files__slow")
      process.kill(Number(pid), "SIGKILL")
      const notRunning = `MCP server files is not running: its process ${pid} exited; restarting`
      const ended = yield* waitForRun(url, killed.runId)
      expect(ended.status).toBe("completed")
      expect(ended.output).toBe(`done: Error: files__slow failed: McpServerNotRunning: ${notRunning} | Error: files__pid failed: McpServerNotRunning: ${notRunning}`)

      const restarted = yield* eventually("the server restarted", Effect.sync(() => starts(log)), (pids) => pids.length === 2)
      expect(restarted[1]).not.toBe(pid)
      // Its process is up; until the client's handshake is done, calls are still refused.
      const pidCall = steps([{ name: "files__pid", arguments: {} }])
      const outputs: Array<string | undefined> = []
      yield* eventually(
        "a call after the restart answered",
        Effect.flatMap(submit(url, pidCall, first.conversationId), (run) => waitForRun(url, run.runId)),
        (run) => {
          outputs.push(run.output)
          return run.output === `done: ${restarted[1]}`
        }
      )
      expect(outputs.slice(0, -1).every((output) => output?.includes("McpServerNotRunning"))).toBe(true)
    }))

  it.scopedLive("a stdio server's message over the SDK's 10 MB is a tool error saying so, not a process that exited, and a call after works", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const run = yield* submit(url, steps([{ name: "files__huge", arguments: { bytes: 11 * 1024 * 1024 } }]))
      const ended = yield* waitForRun(url, run.runId)
      expect(ended.output).toContain("files__huge failed: McpServerNotRunning: MCP server files is not running: it sent a message over 10485760 bytes")
      expect(ended.output).toContain("have the tool return less")
      expect(ended.output).not.toContain("exited")
      yield* eventually("the server restarted", Effect.sync(() => starts(log)), (pids) => pids.length === 2)
      yield* eventually(
        "a call after the restart answered",
        Effect.flatMap(submit(url, steps([{ name: "files__echo", arguments: { text: "small" } }]), run.conversationId), (next) => waitForRun(url, next.runId)),
        (next) => next.output === "done: small"
      )
    }))

  it.scopedLive.each([{ answers: "an event stream", json: false }, { answers: "JSON", json: true }])(
    "a Streamable HTTP server's answer over 10 MB ($answers) is not read: that call's tool error says so, another call in flight and a call after are answered",
    ({ json }) =>
      Effect.gen(function*() {
        const { url } = yield* setup({ json })
        const slow = yield* submit(url, steps([{ name: "web__slow", arguments: { ms: 1_500 } }]))
        const huge = yield* submit(url, steps([{ name: "web__huge", arguments: { bytes: 11 * 1024 * 1024 } }]))
        const ended = yield* waitForRun(url, huge.runId)
        expect(ended.output).toContain(
          "web__huge failed: McpToolFailed: huge on MCP server web: MCP error -32603: Foundry did not read the server's answer: it was over 10485760 bytes"
        )
        expect(ended.output).toContain("have the tool return less")
        // The tool event holds the error, not the text.
        const events = yield* eventsOf(url, huge.runId)
        expect(JSON.stringify(events).length).toBeLessThan(1024 * 1024)
        expect(yield* waitForRun(url, slow.runId)).toMatchObject({ status: "completed", output: "done: slept 1500 ms" })
        // Just under the limit is read whole (the JSON-RPC envelope and the result's shape take the
        // rest), and cut for the model as any long output is.
        const under = yield* submit(url, steps([{ name: "web__huge", arguments: { bytes: 10 * 1024 * 1024 - 1024 } }]), huge.conversationId)
        const read = yield* waitForRun(url, under.runId)
        expect(read.output).toMatch(/^done: x+\n\[output truncated: \d+ of 10484736 characters cut/)
      }),
    { timeout: 60_000 }
  )

  it.scopedLive("a Streamable HTTP server that stops answering: calls are tool errors until it is back, then they work", () =>
    Effect.gen(function*() {
      const { url, web } = yield* setup()
      const weather = steps([{ name: "web__weather", arguments: { city: "Bergen" } }])
      const first = yield* submit(url, weather)
      expect(yield* waitForRun(url, first.runId)).toMatchObject({ output: "done: sunny in Bergen" })
      yield* web.stop
      const down = yield* submit(url, weather, first.conversationId)
      const failed = yield* waitForRun(url, down.runId)
      expect(failed.output).toMatch(/^done: Error: web__weather failed: McpServerNotRunning: MCP server web is not running: .+; restarting$/)
      yield* web.start
      yield* eventually(
        "a call after the server came back answered",
        Effect.flatMap(submit(url, weather, first.conversationId), (run) => waitForRun(url, run.runId)),
        (run) => run.output === "done: sunny in Bergen"
      )
    }))

  it.scopedLive("a Streamable HTTP server that dies during a call: the call fails at once as not running, not after its timeout", () =>
    Effect.gen(function*() {
      const { url, web } = yield* setup()
      const run = yield* submit(url, steps([{ name: "web__slow", arguments: { ms: 30_000 } }]))
      yield* callStarted(url, run.runId, "web__slow")
      yield* Effect.sleep("200 millis")
      const died = Date.now()
      yield* web.stop
      // 400 polls 25 ms apart: 10 seconds, well within the call's 60 seconds.
      const ended = yield* waitForRun(url, run.runId)
      expect(ended.output).toMatch(/^done: Error: web__slow failed: McpServerNotRunning: MCP server web is not running: .+; restarting$/)
      expect(Date.now() - died).toBeLessThan(5_000)
    }))

  it.scopedLive("a Streamable HTTP server restarted between calls (its session unknown to it, 404): the next call opens a new session and is answered", () =>
    Effect.gen(function*() {
      const web = yield* startSessionHttpServer()
      process.env[authVariable] = `Bearer ${token}`
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[authVariable]))
      const root = yield* tempProject(mcpProject({ log: newLog(), httpUrl: web.url }))
      const server = yield* startServer(root, { model: steppedModel().model })
      const weather = steps([{ name: "web__weather", arguments: { city: "Bergen" } }])
      const first = yield* submit(server.url, weather)
      expect(yield* waitForRun(server.url, first.runId)).toMatchObject({ output: "done: sunny in Bergen" })
      expect(web.sessionsOpened()).toBe(1)

      yield* web.forgetSessions
      const second = yield* submit(server.url, steps([{ name: "web__weather", arguments: { city: "Oslo" } }]), first.conversationId)
      expect(yield* waitForRun(server.url, second.runId)).toMatchObject({ status: "completed", output: "done: sunny in Oslo" })
      expect(web.sessionsOpened()).toBe(2)
    }))

  it.scopedLive("permission rules match MCP tools by their model-facing names; a run resumed after an approval does not call its recorded MCP calls again", () =>
    Effect.gen(function*() {
      const { url, web } = yield* setup({
        config: `permissions: [
          { tool: "files__*", action: "deny", reason: "no files today" },
          { tool: "web__weather", action: "ask" }
        ]`
      })
      const run = yield* submit(url, steps(
        [{ name: "files__echo", arguments: { text: "x" } }, { name: "web__echo", arguments: { text: "before" } }],
        [{ name: "web__weather", arguments: { city: "Rome" } }]
      ))
      yield* eventually("the run waits for an approval", status(url, run.runId), (s) => s === "suspended")
      const pending = (yield* http(`${url}/api/approvals?status=pending`)).json as ReadonlyArray<{ id: string; runId: string; tool: string }>
      expect(pending.map((a) => a.tool)).toEqual(["web__weather"])
      expect(web.calls).toEqual(["echo"])
      yield* http(`${url}/api/approvals/${pending[0]?.id}`, { body: { decision: "approve" } })
      expect(yield* waitForRun(url, run.runId)).toMatchObject({
        status: "completed",
        output: "done: Error: denied by the project's permission rules: no files today | before | sunny in Rome"
      })
      // The resumed run read the recorded echo from its journal: the server saw it once.
      expect(web.calls).toEqual(["echo", "weather"])
      const events = yield* eventsOf(url, run.runId)
      expect(events.map((e) => e.type)).toContain("run.resumed")
      expect(events.some((e) => e.type === "tool.call.started" && e.data.tool === "files__echo")).toBe(false)
    }))

  it.scopedLive("list_changed: a tool the server adds during a run is offered on the next turn and can be called", () =>
    Effect.gen(function*() {
      const { offered, url } = yield* setup()
      const run = yield* submit(url, steps([{ name: "files__add_tool", arguments: { name: "greet" } }], [{ name: "files__greet", arguments: {} }]))
      expect(yield* waitForRun(url, run.runId)).toMatchObject({ status: "completed", output: "done: added greet | hello from greet" })
      const namesOn = (turn: number) => offered.find((o) => o.turn === turn)?.tools.map((tool) => tool.name) ?? []
      expect(namesOn(0)).not.toContain("files__greet")
      expect(namesOn(1)).toContain("files__greet")
    }))

  it.scopedLive("list_changed over HTTP: a tool the server adds during a call is offered on the next turn, its notification on another stream or none", () =>
    Effect.gen(function*() {
      // No GET stream: the server's notification is lost, and only listing again finds the tool.
      const web = yield* startSessionHttpServer({ standaloneStream: false })
      process.env[authVariable] = `Bearer ${token}`
      yield* Effect.addFinalizer(() => Effect.sync(() => delete process.env[authVariable]))
      const root = yield* tempProject(mcpProject({ log: newLog(), httpUrl: web.url }))
      const { model, offered } = steppedModel()
      const server = yield* startServer(root, { model })
      const run = yield* submit(server.url, steps([{ name: "web__add_tool", arguments: { name: "greet" } }], [{ name: "web__greet", arguments: {} }]))
      expect(yield* waitForRun(server.url, run.runId)).toMatchObject({ status: "completed", output: "done: added greet | hello from greet" })
      const namesOn = (turn: number) => offered.find((o) => o.turn === turn)?.tools.map((tool) => tool.name) ?? []
      expect(namesOn(0)).not.toContain("web__greet")
      expect(namesOn(1)).toContain("web__greet")
    }))

  it.scopedLive("a stdio server that stops answering anything (a call times out, and a ping after it) is restarted", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup({ files: `timeout: "500 millis"` })
      const frozen = yield* submit(url, steps([{ name: "files__pid", arguments: {} }], [{ name: "files__freeze", arguments: {} }]))
      const ended = yield* waitForRun(url, frozen.runId)
      expect(ended.output).toContain("files__freeze failed: McpCallTimedOut")
      const pid = ended.output?.split("done: ")[1]?.split(" |")[0] ?? ""
      const restarted = yield* eventually("the server restarted", Effect.sync(() => starts(log)), (pids) => pids.length === 2)
      expect(restarted[0]).toBe(pid)
      yield* eventually(
        "a call after the restart answered",
        Effect.flatMap(submit(url, steps([{ name: "files__pid", arguments: {} }]), frozen.conversationId), (run) => waitForRun(url, run.runId)),
        (run) => run.output === `done: ${restarted[1]}`
      )
    }))

  it.scopedLive("a result the SDK's schema rejects and a server's own JSON-RPC errors are that call's tool errors: another run's call in flight completes, the server keeps running", () =>
    Effect.gen(function*() {
      const { log, url } = yield* setup()
      const slow = yield* submit(url, steps([{ name: "files__slow", arguments: { ms: 3_000 } }]))
      yield* callStarted(url, slow.runId, "files__slow")
      // -32000 and -32001 are the codes the SDK uses for its own closed connection and timeout.
      const bad = yield* submit(url, steps(
        [{ name: "files__data_url_picture", arguments: {} }],
        [{ name: "files__rpc_error", arguments: { code: -32000 } }],
        // Between the errors: three failed calls in a row would end the run (maxToolFailures).
        [{ name: "files__pid", arguments: {} }],
        [{ name: "files__rpc_error", arguments: { code: -32001 } }],
        [{ name: "files__pid", arguments: {} }]
      ))
      const ended = yield* waitForRun(url, bad.runId)
      const pid = starts(log)[0]
      expect(ended, JSON.stringify(ended)).toMatchObject({ status: "completed" })
      const [picture, closed, between, timedOut, answered] = ended.output?.replace("done: ", "").split(" | ") ?? []
      expect(picture).toMatch(/^Error: files__data_url_picture failed: McpToolFailed: data_url_picture on MCP server files: .*content\.0\.data/)
      expect(closed).toBe("Error: files__rpc_error failed: McpToolFailed: rpc_error on MCP server files: MCP error -32000: refused with -32000")
      expect(timedOut).toBe("Error: files__rpc_error failed: McpToolFailed: rpc_error on MCP server files: MCP error -32001: refused with -32001")
      expect([between, answered]).toEqual([pid, pid])
      expect(yield* waitForRun(url, slow.runId)).toMatchObject({ status: "completed", output: "done: slept 3000 ms" })
      expect(starts(log)).toEqual([pid])
    }))

  it.scopedLive("an HTTP error status answering a call (a gateway's 502) is that call's tool error, not a server gone", () =>
    Effect.gen(function*() {
      const { url, web } = yield* setup()
      const weather = (city: string) => steps([{ name: "web__weather", arguments: { city } }])
      const first = yield* submit(url, weather("Bergen"))
      expect(yield* waitForRun(url, first.runId)).toMatchObject({ output: "done: sunny in Bergen" })
      web.failCalls(502)
      const failed = yield* submit(url, weather("Oslo"), first.conversationId)
      expect((yield* waitForRun(url, failed.runId)).output).toMatch(
        /^done: Error: web__weather failed: McpToolFailed: weather on MCP server web: the server answered HTTP 502: .*502 Bad Gateway/
      )
      web.failCalls(undefined)
      // At once: no restart to wait for.
      const after = yield* submit(url, weather("Rome"), first.conversationId)
      expect(yield* waitForRun(url, after.runId)).toMatchObject({ output: "done: sunny in Rome" })
    }))

  it.scopedLive("a call over the server's timeout is a tool error naming the server, the tool and the timeout; the server still answers", () =>
    Effect.gen(function*() {
      const { url } = yield* setup({ files: `timeout: "500 millis"` })
      const run = yield* submit(url, steps([{ name: "files__slow", arguments: { ms: 5_000 } }], [{ name: "files__echo", arguments: { text: "still here" } }]))
      expect(yield* waitForRun(url, run.runId)).toMatchObject({
        status: "completed",
        output: "done: Error: files__slow failed: McpCallTimedOut: MCP server files did not answer the call to slow within 500 millis (the server's timeout), so it was cancelled | still here"
      })
    }))

  it.scopedLive("results: an isError result is a tool error, other content is described, the tools allowlist hides the rest", () =>
    Effect.gen(function*() {
      const { offered, url } = yield* setup({ files: `tools: ["fail", "picture"]` })
      const run = yield* submit(url, steps([{ name: "files__fail", arguments: {} }, { name: "files__picture", arguments: {} }], [{ name: "files__echo", arguments: { text: "hidden" } }]))
      const done = yield* waitForRun(url, run.runId)
      expect(done.output).toContain("Error: files__fail failed: McpToolFailed: fail on MCP server files: it broke")
      expect(done.output).toContain("[image: image/png, 3 bytes, not shown]\na tiny square")
      expect(done.output).toContain(`Error: there is no tool named "files__echo"`)
      expect(offered[0]?.tools.map((tool) => tool.name).filter((name) => name.startsWith("files__")).sort()).toEqual(["files__fail", "files__picture"])
    }))

  it.scopedLive("a screenshot is shown to a model that sees, as an image of the tool message, and described to one that does not, also when the conversation goes on with one", () =>
    Effect.gen(function*() {
      const seeing = yield* setup({ vision: true })
      const run = yield* submit(seeing.url, steps([{ name: "files__screenshot", arguments: {} }]))
      expect((yield* waitForRun(seeing.url, run.runId)).status).toBe("completed")
      const shown = seeing.sent[1]?.find((message) => message._tag === "tool")
      expect(shown).toEqual({
        _tag: "tool",
        toolCallId: "call_1_1",
        name: "files__screenshot",
        content: "the page\n[image 1: image/png, 70 bytes, shown]\n[image: image/tiff, 3 bytes, not shown: a model is shown PNG, JPEG, GIF or WebP]",
        images: [{ mediaType: "image/png", data: screenshotPng }]
      })
      // The image lives in the transcript only: the events record the text.
      const events = yield* eventsOf(seeing.url, run.runId)
      expect(events.find((e) => e.type === "tool.call.completed")?.data).toMatchObject({ output: shown?.content })
      expect(JSON.stringify(events)).not.toContain(screenshotPng)

      // The conversation goes on with a model that takes no images (the agent's model changed): the
      // stored image is not sent to it (such a model refuses the whole request), and the result says so.
      const later = steppedModel()
      const changed = yield* startServer(seeing.root, { model: later.model, storeFile: seeing.storeFile })
      // No tool calls: the model answers at once.
      const next = yield* submit(changed.url, "[]", run.conversationId)
      expect((yield* waitForRun(changed.url, next.runId)).status).toBe("completed")
      expect(later.sent[0]?.find((message) => message._tag === "tool")).toEqual({
        _tag: "tool",
        toolCallId: "call_1_1",
        name: "files__screenshot",
        content: `${shown?._tag === "tool" ? shown.content : ""}\n(the image this tool showed is not shown: scripted:stepped takes no images)`
      })

      const blind = yield* setup()
      const described = yield* submit(blind.url, steps([{ name: "files__screenshot", arguments: {} }]))
      expect((yield* waitForRun(blind.url, described.runId)).status).toBe("completed")
      expect(blind.sent[1]?.find((message) => message._tag === "tool")).toEqual({
        _tag: "tool",
        toolCallId: "call_1_1",
        name: "files__screenshot",
        content: "the page\n[image: image/png, 70 bytes, not shown]\n[image: image/tiff, 3 bytes, not shown]"
      })
    }))
})
