/**
 * The inspector's instances pages in Chromium: a list paged with "Load more" and narrowed by
 * search, and an instance's page with its context, its installation (the secret shown only as
 * redacted) and pause and resume that the API enforces.
 */
import { randomUUID } from "node:crypto"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schedule } from "effect"
import type { Page } from "playwright-core"
import { browserPage, skipBrowser } from "../support/browser.js"
import { durableProject, plan } from "../support/durableProject.js"
import { plannedModel } from "../support/plannedModel.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

/** A shared tool any instance may install, with a secret in its config. */
const notesTool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Keep a note in the customer's notes service",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.String,
  installable: { config: Schema.Struct({ baseUrl: Schema.String, apiKey: Schema.Redacted(Schema.String) }) },
  run: ({ text }, { config }) => Effect.succeed("noted " + text + " at " + config.baseUrl)
})
`

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const isRunCreated = (body: unknown): body is { readonly runId: string; readonly conversationId: string } =>
  typeof body === "object" && body !== null && "runId" in body && typeof body.runId === "string" &&
  "conversationId" in body && typeof body.conversationId === "string"

/** Waits until the instances table shows `n` rows. */
const waitForRows = (page: Page, n: number) =>
  promise(() => page.locator("[data-testid=instances] tbody tr").count()).pipe(
    Effect.filterOrFail((count) => count === n, (count) => `the table shows ${count} rows, not ${n}`),
    Effect.retry({ schedule: Schedule.spaced("25 millis"), times: 400 })
  )

describe.skipIf(skipBrowser)("the inspector's instances pages in Chromium", () => {
  it.scopedLive("pages and searches 121 instances; an instance's page shows its context and redacted installation, and pauses and resumes it", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({
        ...durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)),
        "tools/notes.tool.ts": notesTool
      })
      const { url } = yield* startServer(root, { model: plannedModel })
      const secret = `sk-${randomUUID()}`

      const acme = yield* http(`${url}/api/instances`, {
        body: {
          agent: "worker",
          id: "acme",
          provisioningKey: "acct-acme",
          context: { company: "Acme Rockets", plan: "gold" },
          installations: [{ kind: "tool", id: "notes", config: { baseUrl: "https://notes.acme.test", apiKey: secret } }]
        }
      })
      expect(acme.status).toBe(201)
      expect(acme.text).not.toContain(secret)
      const created = yield* Effect.forEach(Array.from({ length: 120 }, (_, n) => String(n).padStart(3, "0")), (n) =>
        http(`${url}/api/instances`, { body: { agent: "worker", id: `customer-${n}`, provisioningKey: `acct-${n}` } }), { concurrency: 8 })
      expect(created.map((r) => r.status)).toEqual(created.map(() => 201))

      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/instances`))
      // The first page (50, ordered by agent then id), then more with each "Load more", until there is no more.
      yield* waitForRows(page, 50)
      expect(yield* promise(() => page.textContent("[data-testid=instances] tbody tr:first-child"))).toContain("acme")
      expect(yield* promise(() => page.locator("tr[data-instance=customer-119]").count())).toBe(0)
      yield* promise(() => page.click("[data-testid=load-more]"))
      yield* waitForRows(page, 100)
      yield* promise(() => page.click("[data-testid=load-more]"))
      yield* waitForRows(page, 121)
      expect(yield* promise(() => page.isHidden("[data-testid=load-more]"))).toBe(true)
      expect(yield* promise(() => page.textContent("[data-testid=instances-count]"))).toBe("121 instances")
      const acmeRow = page.locator("tr[data-instance=acme]")
      expect(yield* promise(() => acmeRow.locator("[data-status]").textContent())).toBe("active")
      expect(yield* promise(() => acmeRow.textContent())).toContain("acct-acme")

      // Search asks the server: it finds an instance that no page shown so far held.
      yield* promise(() => page.reload())
      yield* waitForRows(page, 50)
      yield* promise(() => page.fill("input[name=search]", "customer-117"))
      yield* waitForRows(page, 1)
      expect(yield* promise(() => page.locator("tr[data-instance=customer-117]").count())).toBe(1)
      expect(page.url()).toBe(`${url}/instances?search=customer-117`)
      yield* promise(() => page.fill("input[name=search]", "acct-acme"))
      yield* promise(() => page.waitForSelector("tr[data-instance=acme]"))
      yield* waitForRows(page, 1)

      yield* promise(() => page.click("tr[data-instance=acme] a[href^='/instances/']"))
      yield* promise(() => page.waitForURL(`${url}/instances/worker/acme`))
      yield* promise(() => page.waitForSelector("[data-installation='tool:notes']"))
      expect(JSON.parse((yield* promise(() => page.textContent("[data-testid=instance-context]"))) ?? "{}"))
        .toEqual({ company: "Acme Rockets", plan: "gold" })
      const installation = page.locator("[data-installation='tool:notes']")
      expect(yield* promise(() => installation.textContent())).toContain("https://notes.acme.test")
      expect(yield* promise(() => installation.locator(".redacted").count())).toBe(1)
      expect(yield* promise(() => page.content())).not.toContain(secret)
      expect(yield* promise(() => page.textContent("[data-testid=instance-environment]"))).toBe("none")

      // Pause: the page says so, and the API refuses a run for it.
      yield* promise(() => page.click("[data-testid=pause]"))
      yield* promise(() => page.waitForSelector("[data-testid=instance-status] [data-status=paused]"))
      const refused = yield* http(`${url}/api/runs`, { body: { agent: "worker", instance: "acme", message: plan({}) } })
      expect(refused.status).toBe(409)
      expect(refused.text).toContain("paused")

      // Resume: active again, and a run for it goes through and shows among its conversations.
      yield* promise(() => page.click("[data-testid=resume]"))
      yield* promise(() => page.waitForSelector("[data-testid=instance-status] [data-status=active]"))
      const accepted = yield* http(`${url}/api/runs`, { body: { agent: "worker", instance: "acme", message: plan({}) } })
      expect(accepted.status).toBe(202)
      if (!isRunCreated(accepted.json)) return expect.fail(`unexpected answer ${accepted.text}`)
      const { runId, conversationId } = accepted.json
      expect(yield* waitForRun(url, runId)).toMatchObject({ status: "completed" })
      yield* promise(() => page.waitForSelector(`[data-testid=instance-conversations] [data-conversation='${conversationId}']`))
      expect(yield* promise(() => page.content())).not.toContain(secret)

      // The conversation links back to its instance.
      yield* promise(() => page.click(`[data-conversation='${conversationId}'] a[href^='/conversations/']`))
      yield* promise(() => page.waitForSelector("[data-testid=conversation-instance] a"))
      expect(yield* promise(() => page.getAttribute("[data-testid=conversation-instance] a", "href"))).toBe("/instances/worker/acme")
    }))

  it.scopedLive("a conversation starts with a chosen instance: from its page, or by id on the conversations page; an archived one offers none", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)))
      const { url } = yield* startServer(root, { model: plannedModel })
      for (const id of ["acme", "globex"]) {
        expect((yield* http(`${url}/api/instances`, { body: { agent: "worker", id } })).status).toBe(201)
      }
      const page = yield* browserPage
      // From the instance's page: the conversation is the instance's.
      yield* promise(() => page.goto(`${url}/instances/worker/acme`))
      yield* promise(() => page.waitForSelector("[data-testid=instance-status] [data-status=active]"))
      yield* promise(() => page.fill("[data-testid=instance-composer] input[name=message]", plan({})))
      yield* promise(() => page.click("[data-testid=instance-composer] button"))
      yield* promise(() => page.waitForURL(/\/conversations\/conv_/))
      yield* promise(() => page.waitForSelector("[data-testid=conversation-instance] a"))
      expect(yield* promise(() => page.getAttribute("[data-testid=conversation-instance] a", "href"))).toBe("/instances/worker/acme")
      // From the conversations page, by id.
      yield* promise(() => page.goto(`${url}/conversations`))
      yield* promise(() => page.waitForSelector("select[name=agent] option[value=worker]", { state: "attached" }))
      yield* promise(() => page.selectOption("select[name=agent]", "worker"))
      yield* promise(() => page.fill("form.composer input[name=instance]", "globex"))
      yield* promise(() => page.fill("form.composer input[name=message]", plan({})))
      yield* promise(() => page.click("form.composer button"))
      yield* promise(() => page.waitForURL(/\/conversations\/conv_/))
      yield* promise(() => page.waitForSelector("[data-testid=conversation-instance] a"))
      expect(yield* promise(() => page.getAttribute("[data-testid=conversation-instance] a", "href"))).toBe("/instances/worker/globex")
      // An archived instance takes no runs, and its page offers no message box.
      expect((yield* http(`${url}/api/instances/acme?agent=worker`, { method: "DELETE" })).status).toBe(200)
      yield* promise(() => page.goto(`${url}/instances/worker/acme`))
      yield* promise(() => page.waitForSelector("[data-testid=instance-status] [data-status=archived]"))
      expect(yield* promise(() => page.isHidden("[data-testid=instance-composer]"))).toBe(true)
    }))

  it.scopedLive("an id that two agents' instances have: the page says so, stops loading, and links to each", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(durableProject(join(tmpdir(), `foundry-ui-${randomUUID()}.log`)))
      const { url } = yield* startServer(root, { model: plannedModel })
      for (const agent of ["worker", "lead"]) {
        const created = yield* http(`${url}/api/runs`, { body: { agent, message: plan({}) } })
        if (!isRunCreated(created.json)) return expect.fail(`unexpected answer ${created.text}`)
        yield* waitForRun(url, created.json.runId)
      }
      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/instances/default`))
      yield* promise(() => page.waitForSelector("[data-testid=instance-problem] >> text=say which"))
      const links = yield* promise(() => page.$$eval("[data-testid=instance-owners] a", (as) => as.map((a) => a.getAttribute("href")).sort()))
      expect(links).toEqual(["/instances/lead/default", "/instances/worker/default"])
      expect(yield* promise(() => page.getByText("Loading the files").isVisible())).toBe(false)
      yield* promise(() => page.click("[data-testid=instance-owners] a[href='/instances/lead/default']"))
      yield* promise(() => page.waitForSelector("[data-testid=instance-status] [data-status=active]"))
      expect(yield* promise(() => page.textContent("main p.muted"))).toContain("of lead")
    }))
})

