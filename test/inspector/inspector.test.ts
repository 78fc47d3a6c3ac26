import { tmpdir } from "node:os"
import { join } from "node:path"
import { randomUUID } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, Schedule, Stream } from "effect"
import type { Page } from "playwright-core"
import type { LanguageModel, ModelChunk } from "../../src/models/Model.js"
import * as Scripted from "../../src/models/scripted.js"
import { browserPage, skipBrowser } from "../support/browser.js"
import { devOverview } from "../support/devInBrowser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, pendingApproval, runIdOf, startServer, waitForRun } from "../support/server.js"
import { answeringAgentFile, answerToolFile, tempProject } from "../support/tempProject.js"

const answer = "Your order is on its way and should arrive on Thursday"

/** Records a line, then answers slowly, one word at a time, so the reply can be watched streaming. */
const chatModel = Scripted.make((_request, index) =>
  index === 0
    ? { toolCalls: [{ name: "record", arguments: { line: "looked up" } }] }
    : { text: answer, chunkDelay: "120 millis" })

/**
 * The chat model's run with its reply let go in parts: its first four words at once, then one word
 * once the first gate opens, the rest (paced) once the second does.
 */
const gatedReply = (gates: readonly [Deferred.Deferred<void>, Deferred.Deferred<void>]): LanguageModel => {
  const delta = (text: string): ModelChunk => ({ _tag: "TextDelta", text })
  const words = Scripted.splitText(answer)
  const after = (gate: Deferred.Deferred<void>) => Stream.drain(Stream.fromEffect(Deferred.await(gate)))
  const reply = Stream.fromIterable(words.slice(0, 4).map(delta)).pipe(
    Stream.concat(after(gates[0])),
    Stream.concat(Stream.fromIterable(words.slice(4, 5).map(delta))),
    Stream.concat(after(gates[1])),
    Stream.concat(Stream.fromIterable(words.slice(5).map(delta)).pipe(Stream.tap(() => Effect.sleep("50 millis"))))
  )
  return {
    name: "scripted:gated",
    stream: (request) => Scripted.turnIndex(request.messages) === 0 ? chatModel.stream(request) : reply
  }
}

const setup = (model = plannedModel) =>
  Effect.gen(function*() {
    const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)))
    const server = yield* startServer(root, { model })
    const page = yield* browserPage
    return { url: server.url, page }
  })

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

/** A playbook on the `tickets` webhook that starts the worker when `when` holds for the ticket `t`. */
const playbookFile = (when: string) => `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import worker from "../agents/worker/agent.js"
export default definePlaybook({
  on: webhook("tickets", Schema.Struct({ id: Schema.String, priority: Schema.Number })),
  when: (t) => ${when},
  agent: worker,
  message: (t) => ${JSON.stringify(plan({}))}
})
`

/** Opens `path` and waits until the page follows the live event stream, so no event is missed. */
const openLive = (page: Page, url: string, path: string) =>
  Effect.gen(function*() {
    yield* promise(() => page.goto(`${url}${path}`))
    yield* promise(() => page.waitForSelector("#live.on"))
  })

describe.skipIf(skipBrowser)("the inspector in Chromium", () => {
  it.scopedLive("sends a message from the chat view and shows the reply as it streams", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup(chatModel)
      yield* promise(() => page.goto(`${url}/conversations`))
      yield* promise(() => page.selectOption("select[name=agent]", "worker"))
      yield* promise(() => page.fill("input[name=message]", "Where is my order?"))
      yield* promise(() => page.click("form.composer button"))
      yield* promise(() => page.waitForURL(/\/conversations\/conv_/))
      // Part of the answer is on screen before all of it is.
      // Polled from here: the page's CSP (script-src 'self') forbids evaluating a string in it.
      const partial = yield* promise(() => page.textContent("[data-testid=streaming]")).pipe(
        Effect.filterOrFail((text): text is string => text !== null && text.length > 0 && text.length < answer.length, () => "not yet"),
        Effect.retry({ schedule: Schedule.spaced("10 millis"), times: 1000 })
      )
      expect(answer.startsWith(String(partial).trim())).toBe(true)
      yield* promise(() => page.waitForSelector(`[data-testid=chat] .bubble.assistant >> text=${answer}`))
      const roles = yield* promise(() => page.$$eval("[data-testid=chat] .bubble", (els) => els.map((e) => e.getAttribute("data-role"))))
      expect(roles).toEqual(["user", "assistant", "tool", "assistant"])
    }))

  it.scopedLive("the inspector holds one event stream, with the replies' words only while their conversation's page is open", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup(chatModel)
      // The event streams the page has open (a browser keeps six connections to a server, across its tabs).
      const streams = new Set<string>()
      const opened: Array<string> = []
      page.on("request", (request) => {
        // Streams only: where the first one starts is read from `/api/events` too.
        if (request.resourceType() !== "eventsource") return
        streams.add(request.url())
        opened.push(request.url())
      })
      const closed = (request: { url: () => string }) => streams.delete(request.url())
      page.on("requestfailed", closed)
      page.on("requestfinished", closed)
      // One stream, without deltas; the first starts after the newest event at load, one that
      // replaces another goes on after the last event it had.
      const only = (query: string, after: boolean) => {
        expect(streams.size).toBe(1)
        expect([...streams][0]).toMatch(new RegExp(`^${url}/api/events\\?${query}${after ? "&after=\\d+" : ""}$`))
      }
      yield* openLive(page, url, "/conversations")
      only("deltas=false", true)
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: "Where is my order?" } })
      const { conversationId } = created.json as { conversationId: string }
      yield* promise(() => page.click(`a[href="/conversations/${conversationId}"]`))
      yield* promise(() => page.waitForSelector(`[data-testid=chat] .bubble.assistant >> text=${answer}`))
      // The words streamed, over the one stream, which asks for this conversation's.
      expect(opened.some((stream) => stream.startsWith(`${url}/api/events?deltasOf=${conversationId}`))).toBe(true)
      only(`deltasOf=${conversationId}`, true)
      yield* promise(() => page.goBack())
      yield* promise(() => page.waitForURL(`${url}/conversations`))
      yield* Effect.sleep("500 millis")
      only("deltas=false", true)
      // Each switch opened one stream: leaving a page and opening the next switch once.
      expect(opened).toHaveLength(3)
    }))

  it.scopedLive("a conversation opened while its reply streams shows the words it missed as an ellipsis, then the rest as it comes", () =>
    Effect.gen(function*() {
      // The reply's words go in three parts, each let go by the test rather than by a clock: a page
      // that is slow to open (a loaded machine) cannot miss the whole reply.
      const followed = yield* Deferred.make<void>()
      const shown = yield* Deferred.make<void>()
      const { page, url } = yield* setup(gatedReply([followed, shown]))
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: "Where is my order?" } })
      const { conversationId, runId } = created.json as { conversationId: string; runId: string }
      // The reply's turn has started, and its first words have gone by before the page opens.
      for (let attempt = 0; attempt < 400; attempt++) {
        const events = (yield* http(`${url}/api/runs/${runId}/events`)).json as ReadonlyArray<{ type: string; data: { turn?: number } }>
        if (events.some((event) => event.type === "model.turn.started" && event.data.turn === 2)) break
        yield* Effect.sleep("10 millis")
      }
      yield* Effect.sleep("200 millis")
      // The page follows the stream that carries this conversation's words once its answer's head came.
      const following = yield* Effect.fork(promise(() => page.waitForResponse((response) => response.url().includes(`deltasOf=${conversationId}`))))
      yield* openLive(page, url, `/conversations/${conversationId}`)
      yield* Fiber.join(following)
      yield* Deferred.succeed(followed, undefined)
      const partial = yield* promise(() => page.textContent("[data-testid=streaming]")).pipe(
        Effect.filterOrFail((text): text is string => text !== null && text.includes("its"), () => "not yet"),
        Effect.retry({ schedule: Schedule.spaced("10 millis"), times: 1000 })
      )
      expect(partial.trim()).toBe("… its")
      yield* Deferred.succeed(shown, undefined)
      yield* promise(() => page.waitForSelector(`[data-testid=chat] .bubble.assistant >> text=${answer}`))
    }))

  it.scopedLive("on a phone's screen no page is wider than the screen; an unknown conversation says so", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      const created = yield* http(`${url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "on a phone" } }] }) }
      })
      const { runId } = created.json as { runId: string }
      yield* waitForRun(url, runId)
      // A run that waits on a person, its input a long word and its tool's input a long value: its
      // page has the cancel and steer controls, its conversation an approval card.
      const long = "x".repeat(300)
      const waiting = yield* http(`${url}/api/runs`, {
        body: { agent: "worker", message: JSON.stringify({ calls: [{ name: "transfer", arguments: { amount: 5, note: long } }], note: long }) }
      })
      const waitingRun = runIdOf(waiting.json)
      yield* pendingApproval(url, waitingRun)
      const waitingConversation = (waiting.json as { conversationId: string }).conversationId
      yield* promise(() => page.setViewportSize({ width: 390, height: 844 }))
      const paths = [
        "/", "/agents", "/instances", "/conversations", "/runs", "/approvals", "/schedules", "/playbooks", "/releases", `/runs/${runId}`,
        `/runs/${waitingRun}`, `/conversations/${waitingConversation}`
      ]
      const widths: Record<string, number> = {}
      for (const path of paths) {
        yield* promise(() => page.goto(`${url}${path}`))
        yield* promise(() => page.waitForSelector("main h1"))
        yield* Effect.sleep("300 millis")
        widths[path] = yield* promise(() => page.evaluate<number>("document.documentElement.scrollWidth"))
      }
      expect(widths).toEqual(Object.fromEntries(paths.map((path) => [path, 390])))

      yield* promise(() => page.goto(`${url}/conversations/conv_nope`))
      yield* promise(() => page.waitForSelector("h1:has-text('Conversation not found')"))
      expect(yield* promise(() => page.textContent(".error-line"))).toContain(`there is no conversation "conv_nope"`)
      expect(yield* promise(() => page.locator("form.composer").count())).toBe(0)
      expect(errors).toEqual([])
    }))

  it.scopedLive("a deep link to a run loads directly and its waterfall shows the tool span with input and output", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const created = yield* http(`${url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "hello inspector" } }] }) }
      })
      const { runId } = created.json as { runId: string }
      yield* waitForRun(url, runId)
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("[data-testid=waterfall] .span.tool"))
      expect(yield* promise(() => page.textContent("h1"))).toContain(runId)
      // Its instance is a link to the instance's page.
      expect(yield* promise(() => page.getAttribute("a[href^='/instances/']", "href"))).toMatch(/^\/instances\/.+default/)
      const tool = page.locator("[data-testid=waterfall] .span.tool").first()
      expect(yield* promise(() => tool.locator(".span-label").textContent())).toContain("tool record")
      expect(JSON.parse((yield* promise(() => tool.locator("[data-testid=span-input]").textContent())) ?? "{}")).toEqual({ line: "hello inspector" })
      expect(yield* promise(() => tool.locator("[data-testid=span-output]").textContent())).toContain("recorded hello inspector")
      // Shown open, and said so; a click folds it.
      expect(yield* promise(() => tool.locator(".span-label").textContent())).toMatch(/^▾ /)
      yield* promise(() => tool.locator(".span-row").click())
      yield* promise(() => page.locator("[data-testid=waterfall] .span.tool [data-testid=span-input]").waitFor({ state: "detached" }))
      expect(yield* promise(() => page.locator("[data-testid=waterfall] .span.tool .span-label").first().textContent())).toMatch(/^▸ /)
      expect(yield* promise(() => page.locator("[data-testid=waterfall] .span.model").count())).toBe(2)
      expect(yield* promise(() => page.textContent("[data-testid=run-output]"))).toBe("done: recorded hello inspector")
    }))

  it.scopedLive("approving a pending approval in the UI lets the run complete", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const created = yield* http(`${url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 75 } }] }) }
      })
      const { runId } = created.json as { runId: string }
      yield* promise(() => page.goto(`${url}/approvals`))
      const card = page.locator("[data-testid=pending] .approval").first()
      yield* promise(() => card.waitFor())
      expect(yield* promise(() => card.locator("pre").textContent())).toContain("75")
      yield* promise(() => card.locator("button.approve-conversation").click())
      const done = yield* waitForRun(url, runId)
      expect(done).toMatchObject({ status: "completed", output: "done: transferred 75" })
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("[data-status=completed]"))
      // The decision says it covers the conversation, and the next transfer there shows the grant in its timeline.
      yield* promise(() => page.goto(`${url}/approvals`))
      yield* promise(() => page.waitForSelector("[data-testid=decided] [data-testid=approval-decision] >> text=approved for the rest of the conversation"))
      const { conversationId } = created.json as { conversationId: string }
      const again = yield* http(`${url}/api/runs`, {
        body: { agent: "worker", conversation: conversationId, message: plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }) }
      })
      const next = runIdOf(again.json)
      expect(yield* waitForRun(url, next)).toMatchObject({ status: "completed" })
      yield* promise(() => page.goto(`${url}/runs/${next}`))
      yield* promise(() => page.waitForSelector("[data-testid=waterfall] .span.approval >> text=approval for transfer (granted for the conversation)"))
    }))

  it.scopedLive("a conversation shows what waits on a person, and denying it there with a reason tells the agent why", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const created = yield* http(`${url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 75 } }] }) }
      })
      const { runId, conversationId } = created.json as { runId: string; conversationId: string }
      yield* pendingApproval(url, runId)
      yield* promise(() => page.goto(`${url}/conversations/${conversationId}`))
      const card = page.locator("[data-testid=conversation-approvals] .approval").first()
      yield* promise(() => card.waitFor())
      expect(yield* promise(() => card.textContent())).toContain("transfer waits for your approval")
      // The run waits, so it can be stopped from here; still so once a later run of the conversation has answered.
      yield* promise(() => page.locator("[data-testid=stop]:visible").waitFor())
      const later = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}), conversation: conversationId } })
      yield* waitForRun(url, runIdOf(later.json))
      yield* promise(() => page.waitForSelector("[data-testid=chat] .bubble.assistant >> text=nothing to do"))
      expect(yield* promise(() => page.locator("[data-testid=stop]:visible").count())).toBe(1)
      yield* promise(() => card.locator("input[name=reason]").fill("not above 50"))
      yield* promise(() => card.locator("button.deny").click())
      const done = yield* waitForRun(url, runId)
      expect(done.output).toContain("not above 50")
      // The card leaves the conversation, and the approvals page shows the decision, its time and reason.
      yield* promise(() => page.locator("[data-testid=conversation-approvals] .approval").waitFor({ state: "detached" }))
      yield* promise(() => page.goto(`${url}/approvals`))
      const decision = page.locator("[data-testid=decided] .approval [data-testid=approval-decision]").first()
      yield* promise(() => decision.waitFor())
      expect(yield* promise(() => decision.textContent())).toMatch(/^denied at .+ · not above 50$/)

      // In a tab that missed the news (its live stream cut off), a decision taken elsewhere first: the
      // card it becomes says that the reader's own did not apply, and why.
      const stale = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }) } })
      const staleApproval = yield* pendingApproval(url, runIdOf(stale.json))
      // By path: the stream's URL carries a query (`?deltas=false`), which a glob would have to spell.
      let cut = 0
      yield* promise(() =>
        page.route((address) => address.pathname === "/api/events", (route) => {
          cut += 1
          return route.abort()
        })
      )
      yield* promise(() => page.goto(`${url}/approvals`))
      const waiting = page.locator(`[data-testid=pending] [data-approval="${staleApproval}"]`)
      yield* promise(() => waiting.waitFor())
      yield* http(`${url}/api/approvals/${staleApproval}`, { body: { decision: "approve" } })
      // Time enough for a page that heard the decision to have drawn it (it gathers events for 150 ms):
      // this one did not, so the card still waits.
      yield* Effect.sleep("1 second")
      expect(cut, "the tab's event stream was asked for, and cut").toBeGreaterThan(0)
      yield* promise(() => waiting.locator("button.deny").click())
      const note = page.locator(`[data-testid=decided] [data-approval="${staleApproval}"] [data-testid=approval-note]`)
      yield* promise(() => note.waitFor())
      expect(yield* promise(() => note.textContent())).toContain("is already approved")
    }))

  it.scopedLive("a run that has not ended is cancelled or steered from its page", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const waiting = (amount: number) =>
        Effect.map(http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount } }] }) } }),
          (created) => runIdOf(created.json))
      const cancelled = yield* waiting(10)
      yield* pendingApproval(url, cancelled)
      yield* promise(() => page.goto(`${url}/runs/${cancelled}`))
      yield* promise(() => page.locator(".run-controls button.cancel").click())
      yield* promise(() => page.waitForSelector("h1 + p [data-status=cancelled]"))
      expect(yield* promise(() => page.locator(".run-controls").count())).toBe(0)
      // Its approval expired with it: nothing is left to approve.
      expect(yield* promise(() => page.locator(".card.approval").count())).toBe(0)

      const steered = yield* waiting(20)
      yield* pendingApproval(url, steered)
      yield* promise(() => page.goto(`${url}/runs/${steered}`))
      // Steering with nothing to say says so, and steers nothing.
      yield* promise(() => page.click(".run-controls form button"))
      expect(yield* promise(() => page.textContent("[data-testid=run-control-error]"))).toContain("type the message")
      yield* promise(() => page.fill(".run-controls input[name=steer]", plan({})))
      yield* promise(() => page.click(".run-controls form button"))
      yield* promise(() => page.waitForURL((address) => address.pathname.startsWith("/runs/") && !address.pathname.endsWith(steered)))
      yield* promise(() => page.waitForSelector(`a[href="/runs/${steered}"]`))
      const next = page.url().split("/runs/")[1] ?? ""
      expect(yield* waitForRun(url, next)).toMatchObject({ status: "completed", output: "nothing to do", steeredFrom: steered })
      expect(yield* waitForRun(url, steered)).toMatchObject({ status: "cancelled" })
      // The steered run's page leads to the run that went on in its place.
      yield* promise(() => page.goto(`${url}/runs/${steered}`))
      yield* promise(() => page.waitForSelector(`[data-testid=steered-to] a[href="/runs/${next}"]`))

      // The cancelled run's conversation says that it was stopped, after its last words.
      const { conversationId } = (yield* http(`${url}/api/runs/${cancelled}`)).json as { conversationId: string }
      yield* promise(() => page.goto(`${url}/conversations/${conversationId}`))
      const note = page.locator("[data-testid=chat] .bubble.system")
      yield* promise(() => note.waitFor())
      expect(yield* promise(() => note.textContent())).toContain("run cancelled")
    }))

  it.scopedLive("a page that is none says so inside the inspector, with its navigation", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const response = yield* promise(() => page.goto(`${url}/no/such/page`))
      expect(response?.status()).toBe(404)
      // A run's id has no slash: a deeper path under /runs is no page either.
      expect((yield* promise(() => page.goto(`${url}/runs/a/b`)))?.status()).toBe(404)
      yield* promise(() => page.waitForSelector("main h1:has-text('Not found')"))
      expect(yield* promise(() => page.locator("header nav a").count())).toBeGreaterThan(3)
      // A path that is not even valid percent-encoding: the same page, no script error.
      const errors: Array<string> = []
      page.on("pageerror", (error) => errors.push(error.message))
      yield* promise(() => page.goto(`${url}/no/such/%E0%A4%A`))
      yield* promise(() => page.waitForSelector("main h1:has-text('Not found')"))
      expect(errors).toEqual([])
    }))

  it.scopedLive("the overview says foundry dev serves only the routes that build, and lists what is left out", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        "agents/helper/agent.ts": answeringAgentFile,
        "agents/helper/tools/answer.tool.ts": answerToolFile(`"sound"`),
        "agents/other/agent.ts": answeringAgentFile,
        "agents/other/tools/answer.tool.ts": "export default 42\n"
      })
      const { card } = yield* devOverview(root)
      yield* promise(() => card.getByTestId("build-serving").waitFor())
      expect(yield* promise(() => card.getByTestId("build-serving").textContent())).toContain("Serving only the routes that build")
      const files = yield* promise(() => card.getByTestId("build-problems").locator("li code").allTextContents())
      expect(files.sort()).toEqual(["agents/other/agent.ts", "agents/other/tools/answer.tool.ts"])
    }))

  it.scopedLive("the runs list updates live and keeps the reader's filters", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      yield* promise(() => page.goto(`${url}/runs?status=completed`))
      yield* promise(() => page.waitForSelector("table.table"))
      expect(yield* promise(() => page.locator("tr[data-run]").count())).toBe(0)
      yield* promise(() => page.waitForSelector("[data-testid=no-runs]:has-text('No runs match these filters.')"))
      const created = yield* http(`${url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "live" } }] }) }
      })
      const { runId } = created.json as { runId: string }
      yield* promise(() => page.waitForSelector(`tr[data-run="${runId}"] [data-status=completed]`))
      expect(yield* promise(() => page.inputValue("select[name=status]"))).toBe("completed")
      expect(yield* promise(() => page.isHidden("[data-testid=no-runs]"))).toBe(true)
      expect(page.url()).toBe(`${url}/runs?status=completed`)
    }))

  it.scopedLive("a run of another day shows its date beside its time; one of today only its time", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })
      const { runId } = created.json as { runId: string }
      yield* waitForRun(url, runId)
      const run = (yield* http(`${url}/api/runs/${runId}`)).json as { createdAt: number }
      const started = new Date(run.createdAt)
      const cell = page.locator(`tr[data-run="${runId}"] td`).nth(5)
      yield* promise(() => page.clock.setFixedTime(started))
      yield* promise(() => page.goto(`${url}/runs`))
      const today = yield* promise(() => cell.textContent())
      expect(today).toBe(started.toLocaleTimeString("en-US"))
      // Three days on, the same run says which day it was.
      yield* promise(() => page.clock.setFixedTime(new Date(run.createdAt + 3 * 86_400_000)))
      yield* promise(() => page.goto(`${url}/runs`))
      const later = yield* promise(() => cell.textContent())
      expect(later).toContain(started.toLocaleString("en-US", { month: "short" }))
      expect(later).toContain(String(started.getDate()))
      expect(later).not.toContain(String(started.getFullYear()))
    }))

  it.scopedLive("the playbooks page shows a delivery, what matched and what was skipped and why", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)),
        "playbooks/urgent.ts": playbookFile("t.priority >= 3"),
        "playbooks/calm.ts": playbookFile("t.priority < 3"),
        // Its own code fails: the others still take the ticket, and the page says what it did.
        "playbooks/broken.ts": playbookFile(`(() => { throw new Error("no rule for " + t.id) })()`)
      })
      const server = yield* startServer(root, { model: plannedModel })
      const page = yield* browserPage
      const delivered = yield* http(`${server.url}/hooks/tickets`, { body: { id: "t-1", priority: 4 }, headers: { "x-event-id": "t-1" } })
      expect(delivered.status).toBe(202)
      expect(delivered.json).toMatchObject({ failed: [{ playbook: "broken" }] })
      yield* promise(() => page.goto(`${server.url}/playbooks`))
      const card = page.locator("[data-delivery='tickets:t-1']")
      yield* promise(() => card.waitFor())
      const text = yield* promise(() => card.textContent())
      expect(text).toContain("matched urgent")
      expect(text).toContain("skipped calm: when(event) is false")
      expect(text).toContain("failed broken: playbooks/broken.ts: when(event) threw Error: no rule for t-1")
    }))

  it.scopedLive("the playbooks page shows a delivery that arrives while it is open, without a reload", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)),
        "playbooks/urgent.ts": playbookFile("t.priority >= 3")
      })
      const server = yield* startServer(root, { model: plannedModel })
      const page = yield* browserPage
      yield* openLive(page, server.url, "/playbooks")
      yield* promise(() => page.waitForSelector("[data-testid=deliveries] >> text=No deliveries yet."))
      const delivered = yield* http(`${server.url}/hooks/tickets`, { body: { id: "t-2", priority: 5 }, headers: { "x-event-id": "t-2" } })
      expect(delivered.status).toBe(202)
      const card = page.locator("[data-delivery='tickets:t-2']")
      yield* promise(() => card.waitFor({ timeout: 10_000 }))
      expect(yield* promise(() => card.textContent())).toContain("matched urgent")
    }))

  it.scopedLive("the runs list names what started each run: a schedule, an agent's timer, a webhook's playbook or the API", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`), "", { timers: true }),
        "schedules/nightly.ts": `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({ agent: worker, every: "1 day", message: ${JSON.stringify(plan({}))} })
`,
        "schedules/bygone.ts": `import { defineSchedule } from "foundry"
import worker from "../agents/worker/agent.js"
export default defineSchedule({ agent: worker, at: "2020-01-01T00:00:00Z", message: ${JSON.stringify(plan({}))} })
`,
        "playbooks/urgent.ts": playbookFile("t.priority >= 3")
      })
      const server = yield* startServer(root, { model: plannedModel })
      const page = yield* browserPage
      // From the API: a run that arms a timer for itself.
      const created = yield* http(`${server.url}/api/runs`, {
        body: { agent: "worker", message: plan({ calls: [{ name: "foundry_schedule", arguments: { in: "1 day", message: plan({}) } }] }) }
      })
      const fromApi = (created.json as { runId: string }).runId
      yield* waitForRun(server.url, fromApi)
      const schedules = (yield* http(`${server.url}/api/schedules`)).json as ReadonlyArray<{ id: string; lastRunId: string | null }>
      const timer = schedules.find((s) => s.id.startsWith("agent:"))?.id ?? "no agent timer"
      const fire = (id: string) =>
        Effect.map(http(`${server.url}/api/schedules/${encodeURIComponent(id)}/trigger`, { method: "POST" }), (r) => (r.json as { lastRunId: string }).lastRunId)
      const fromSchedule = yield* fire("nightly")
      const fromTimer = yield* fire(timer)
      const delivered = yield* http(`${server.url}/hooks/tickets`, { body: { id: "t-3", priority: 5 } })
      const fromWebhook = (delivered.json as { runs: ReadonlyArray<{ runId: string }> }).runs[0]?.runId ?? "no webhook run"
      yield* promise(() => page.goto(`${server.url}/runs`))
      const source = (runId: string) =>
        promise(() => page.locator(`tr[data-run="${runId}"] [data-source]`).evaluate((td) => [td.getAttribute("data-source"), td.textContent]))
      expect(yield* source(fromSchedule)).toEqual(["schedule", "schedule nightly"])
      expect(yield* source(fromTimer)).toEqual(["timer", `timer ${timer.slice("agent:".length)}`])
      expect(yield* source(fromWebhook)).toEqual(["webhook", "playbook urgent on /hooks/tickets"])
      expect(yield* source(fromApi)).toEqual(["api", "api"])

      // A paused schedule shows that it will not fire, not a time it will not keep; resumed, its time again.
      yield* promise(() => page.goto(`${server.url}/schedules`))
      const nextFire = page.locator(`tr[data-schedule="nightly"] [data-testid=next-fire]`)
      yield* promise(() => nextFire.waitFor())
      expect(yield* promise(() => nextFire.textContent())).toMatch(/\d/)
      // An `at` already past when armed is done, and the page says why.
      expect(yield* promise(() => page.locator(`tr[data-schedule="bygone"]`).textContent())).toMatch(/done.*had passed when it was armed/)
      yield* promise(() => page.locator(`tr[data-schedule="nightly"] button >> text=Pause`).click())
      yield* promise(() => page.waitForSelector(`tr[data-schedule="nightly"] [data-testid=next-fire] >> text=not while paused`))
      yield* promise(() => page.locator(`tr[data-schedule="nightly"] button >> text=Resume`).click())
      yield* promise(() => page.waitForSelector(`tr[data-schedule="nightly"] button >> text=Pause`))
      expect(yield* promise(() => nextFire.textContent())).toMatch(/\d/)
      // Run now on a paused instance says why nothing ran.
      yield* http(`${server.url}/api/instances/default?agent=worker`, { method: "PATCH", body: { paused: true } })
      yield* promise(() => page.locator(`tr[data-schedule="nightly"] button >> text=Run now`).click())
      yield* promise(() => page.waitForSelector("[data-testid=schedules-problem] >> text=/did not fire: .*paused/"))
    }))

  it.scopedLive("tokens and cost show on the run, the conversation and the agent's page, with charts per day and latency percentiles", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "record", arguments: { line: "usage" } }] }) } })
      const { conversationId, runId } = created.json as { runId: string; conversationId: string }
      yield* waitForRun(url, runId)
      // The scripted model reports 10 input and 5 output tokens a turn; this run has two turns.
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("[data-testid=run-usage] >> text=20 in / 10 out tokens"))
      yield* promise(() => page.goto(`${url}/conversations/${conversationId}`))
      yield* promise(() => page.waitForSelector("[data-testid=conversation-usage] >> text=1 run · 20 in / 10 out tokens"))
      yield* promise(() => page.goto(`${url}/agents/worker`))
      yield* promise(() => page.waitForSelector("[data-testid=agent-charts] figure"))
      const charts = yield* promise(() => page.$$eval("[data-testid=agent-charts] figure", (figures) =>
        figures.map((f) => ({ title: f.getAttribute("data-chart"), bars: f.querySelectorAll("rect").length }))))
      expect(charts).toEqual([
        { title: "runs per day", bars: 1 },
        { title: "tokens per day", bars: 1 },
        { title: "cost per day", bars: 1 }
      ])
      const latency = yield* promise(() => page.textContent("[data-testid=agent-latency]"))
      expect(latency).toMatch(/p50 \d+(\.\d+)? m?s · p95/)
      expect(yield* promise(() => page.textContent("[data-testid=agent-usage]"))).toMatch(/^1 run · /)

      // The agent's page and the conversations list follow new runs without a reload.
      const another = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })
      const next = another.json as { runId: string; conversationId: string }
      yield* promise(() => page.waitForSelector(`[data-testid=agent-runs] a[href="/runs/${next.runId}"]`))
      yield* promise(() => page.waitForSelector("[data-testid=agent-usage] >> text=/^2 runs · /"))
      yield* promise(() => page.goto(`${url}/conversations`))
      yield* promise(() => page.waitForSelector(`[data-conversation="${conversationId}"]`))
      const third = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({}) } })
      yield* promise(() => page.waitForSelector(`[data-conversation="${(third.json as { conversationId: string }).conversationId}"]`))
    }))

  it.scopedLive("a compacted conversation shows where the summary took over, and the messages before it stay", () =>
    Effect.gen(function*() {
      // Long messages over a small window: by the third message the older turns are summarized.
      const model = Scripted.make((request) =>
        request.system.startsWith("You compact") ? { text: "The user asked about three long topics." } : { text: "noted" })
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`), `{ context: { windows: { "scripted:script": 1000 } } }`)
      })
      const server = yield* startServer(root, { model })
      const page = yield* browserPage
      let conversation: string | undefined
      for (const topic of ["first", "second", "third"]) {
        const created = yield* http(`${server.url}/api/runs`, {
          body: { agent: "worker", message: `${topic}: ${"a long message ".repeat(60)}`, ...(conversation === undefined ? {} : { conversation }) }
        })
        const body = created.json as { runId: string; conversationId: string }
        conversation = body.conversationId
        expect(yield* waitForRun(server.url, body.runId)).toMatchObject({ status: "completed" })
      }
      yield* promise(() => page.goto(`${server.url}/conversations/${conversation}`))
      yield* promise(() => page.waitForSelector("[data-testid=chat] .bubble.compaction >> text=The user asked about three long topics."))
      const roles = yield* promise(() => page.$$eval("[data-testid=chat] .bubble", (els) => els.map((e) => e.getAttribute("data-role"))))
      expect(roles.slice(0, 4)).toEqual(["user", "assistant", "user", "assistant"])
      expect(roles).toContain("summary")
    }))

  it.scopedLive("a message sent while a run goes on stays in the chat, marked queued with its time, until its run takes it", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      // Long enough for the page's draws, two seconds apart on events, to show the next one queued.
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "slow", arguments: { ms: 8000 } }] }) } })
      const { runId, conversationId } = created.json as { runId: string; conversationId: string }
      yield* openLive(page, url, `/conversations/${conversationId}`)
      yield* promise(() => page.waitForSelector("[data-testid=stop]:visible"))
      const text = plan({ calls: [{ name: "record", arguments: { line: "after the slow one" } }] })
      yield* promise(() => page.fill("form.composer input[name=message]", text))
      yield* promise(() => page.click("form.composer button[type=submit]"))
      // The run it starts is queued behind the slow one: the page redraws on its events, and the message stays.
      const queued = page.locator("[data-testid=chat] [data-waiting=queued]")
      yield* promise(() => queued.waitFor())
      yield* Effect.sleep("1 second")
      expect(yield* promise(() => queued.locator(".text").textContent())).toBe(text)
      expect(yield* promise(() => queued.locator(".meta").textContent())).toMatch(/^queued · \d/)
      expect((yield* http(`${url}/api/runs/${runId}`)).json).toMatchObject({ status: "running" })
      // Once its run starts, the message is the stored one, shown once.
      yield* waitForRun(url, runId)
      yield* promise(() => page.waitForSelector("[data-testid=chat] .bubble.assistant >> text=done: recorded after the slow one"))
      expect(yield* promise(() => page.locator("[data-testid=chat] [data-waiting]").count())).toBe(0)
      expect(yield* promise(() => page.locator(`[data-testid=chat] .bubble.user:has-text(${JSON.stringify("after the slow one")})`).count())).toBe(1)
    }))

  it.scopedLive("a queued message whose run Stop cancelled before it started stays in the chat, after the run before it, saying so", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "slow", arguments: { ms: 6000 } }] }) } })
      const { conversationId, runId } = created.json as { runId: string; conversationId: string }
      const text = plan({ calls: [{ name: "record", arguments: { line: "never sent" } }] })
      const queued = (yield* http(`${url}/api/runs`, { body: { agent: "worker", message: text, conversation: conversationId } })).json as { runId: string }
      yield* openLive(page, url, `/conversations/${conversationId}`)
      yield* promise(() => page.waitForSelector("[data-testid=chat] [data-waiting=queued]"))
      yield* promise(() => page.click("[data-testid=stop]"))
      const unsent = page.locator("[data-testid=chat] [data-unsent=cancelled]")
      yield* promise(() => unsent.waitFor())
      expect(yield* promise(() => unsent.locator(".text").textContent())).toBe(text)
      expect(yield* promise(() => unsent.locator(".meta").textContent())).toMatch(/^cancelled before it started · \d/)
      expect(yield* promise(() => unsent.locator("a").getAttribute("href"))).toBe(`/runs/${queued.runId}`)
      // After the first run's bubbles and the line that says it was cancelled.
      const order = yield* promise(() => page.$$eval("[data-testid=chat] .bubble", (els) => els.map((e) => e.getAttribute("data-unsent") ?? e.getAttribute("data-role"))))
      expect(order.slice(-2)).toEqual(["system", "cancelled"])
      expect((yield* http(`${url}/api/runs/${runId}`)).json).toMatchObject({ status: "cancelled" })
    }))

  it.scopedLive("the overview reads again on events, and polls only what events do not say, rarely", () =>
    Effect.gen(function*() {
      const { page, url } = yield* setup()
      const reads: Array<string> = []
      page.on("request", (request) => {
        const path = new URL(request.url()).pathname
        if ((path.startsWith("/api/") && path !== "/api/events") || path === "/health") reads.push(path)
      })
      yield* openLive(page, url, "/")
      yield* promise(() => page.waitForSelector("[data-testid=build] >> text=/build \\d+ since/"))
      yield* Effect.sleep("500 millis")
      const first = reads.length
      // An idle server: nothing happens for six seconds, and the page asks for nothing.
      yield* Effect.sleep("6 seconds")
      expect(reads.slice(first)).toEqual([])
      // A run that waits on a person shows without a reload.
      const created = yield* http(`${url}/api/runs`, { body: { agent: "worker", message: plan({ calls: [{ name: "transfer", arguments: { amount: 5 } }] }) } })
      yield* pendingApproval(url, runIdOf(created.json))
      yield* promise(() => page.waitForSelector(`main a[href="/runs/${runIdOf(created.json)}"]`))
      yield* promise(() => page.waitForSelector("main h2 >> text=Waiting on you (1)"))
    }))
})

