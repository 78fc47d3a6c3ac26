/**
 * Artifacts and environments in the inspector, in Chromium: a run's page lists what the run
 * presented, with an XLSX previewed as a table and a download link; an instance's page shows its
 * environment as a file tree, a file's text on click, and an older version's content when that
 * version is chosen.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { environmentProject, png, seedArtifacts, seedVersions, workbook } from "../environments/support/seed.js"
import { browserPage, skipBrowser } from "../support/browser.js"
import { http, startServer, waitForRun } from "../support/server.js"

const promise = <A>(f: () => Promise<A>) => Effect.promise(f)

const isRunCreated = (body: unknown): body is { readonly runId: string; readonly conversationId: string } =>
  typeof body === "object" && body !== null && "runId" in body && typeof body.runId === "string" &&
  "conversationId" in body && typeof body.conversationId === "string"

describe.skipIf(skipBrowser)("artifacts and environments in the inspector, in Chromium", () => {
  it.scopedLive("a run's page shows its artifacts with a table preview; an instance's page browses its files at the latest and an older version", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* environmentProject())
      const { url } = server
      const created = yield* http(`${url}/api/runs`, { body: { agent: "echo", message: "zzz" } })
      if (!isRunCreated(created.json)) return expect.fail(created.text)
      const { conversationId, runId } = created.json
      yield* waitForRun(url, runId)
      const common = { runId, agent: "clerk", instanceId: "acme", conversationId }
      yield* seedArtifacts(server.storeFile, [
        [{ ...common, path: "/out/revenue.xlsx", caption: "Revenue by region", mediaType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet" }, workbook()],
        [{ ...common, path: "/out/chart.png", caption: "The chart", mediaType: "image/png" }, png]
      ])
      expect((yield* http(`${url}/api/instances`, { body: { agent: "clerk", id: "acme" } })).status).toBe(201)
      yield* seedVersions(server.storeFile, "run_seeded")

      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/runs/${runId}`))
      yield* promise(() => page.waitForSelector("[data-testid=artifacts] [data-testid=preview-table]"))
      const revenue = page.locator("[data-artifact]").first()
      expect(yield* promise(() => revenue.locator("[data-testid=artifact-caption]").textContent())).toBe("Revenue by region")
      const firstSheet = revenue.locator("[data-sheet=Revenue]")
      expect(yield* promise(() => firstSheet.locator("thead th").allTextContents())).toEqual(["region", "amount"])
      expect(yield* promise(() => firstSheet.locator("tbody tr").first().locator("td").allTextContents())).toEqual(["north", "165"])
      expect(yield* promise(() => revenue.locator("[data-testid=artifact-download]").getAttribute("href"))).toMatch(/^\/api\/artifacts\/art_/)
      const chart = page.locator("[data-artifact]").nth(1)
      yield* promise(() => chart.locator("[data-testid=preview-image]").waitFor())
      // The image loads from its download URL: the browser decoded it.
      yield* promise(() => page.waitForFunction(`(() => {
        const image = document.querySelector("[data-testid=preview-image]")
        return image !== null && image.complete && image.naturalWidth === 1
      })()`))

      yield* promise(() => page.goto(`${url}/instances/clerk/acme`))
      yield* promise(() => page.waitForSelector("[data-testid=environment-tree] [data-path='/out/notes.md']"))
      expect(yield* promise(() => page.textContent("[data-testid=instance-environment]"))).toBe("workspace")
      expect(yield* promise(() => page.locator("[data-testid=environment-tree] [data-folder='/inbox'] [data-path='/inbox/a.txt']").count())).toBe(1)
      expect(yield* promise(() => page.locator("[data-testid=environment-history] tbody tr").count())).toBe(2)
      expect(yield* promise(() => page.textContent("[data-testid=environment-history] tr[data-version='1']"))).toContain("write_file /out/notes.md")

      yield* promise(() => page.click("[data-path='/out/notes.md']"))
      yield* promise(() => page.waitForSelector("[data-testid=environment-file-text]"))
      expect(yield* promise(() => page.textContent("[data-testid=environment-file-text]"))).toBe("second draft")

      // An older version: the same file as it was then; the chart did not exist yet.
      yield* promise(() => page.selectOption("[data-testid=environment-version]", "1"))
      yield* promise(() => page.locator("[data-testid=environment-file-text]", { hasText: "first draft" }).waitFor())
      expect(yield* promise(() => page.textContent("[data-testid=environment-file-text]"))).toBe("first draft")
      expect(yield* promise(() => page.textContent("[data-testid=environment-summary]"))).toContain("version 1 of 2")
      expect(yield* promise(() => page.locator("[data-path='/out/chart.png']").count())).toBe(0)

      // Back to the latest: an image file shows as an image.
      yield* promise(() => page.selectOption("[data-testid=environment-version]", ""))
      yield* promise(() => page.waitForSelector("[data-path='/out/chart.png']"))
      yield* promise(() => page.click("[data-path='/out/chart.png']"))
      yield* promise(() => page.waitForSelector("[data-testid=environment-file-image]"))

      // A folder folds.
      yield* promise(() => page.click("[data-folder='/inbox'] > summary"))
      expect(yield* promise(() => page.isVisible("[data-path='/inbox/a.txt']"))).toBe(false)
    }))

  it.scopedLive("an instance whose files are kept per conversation, with no conversation yet, says so plainly, not as an error", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* environmentProject())
      const { url } = server
      expect((yield* http(`${url}/api/instances`, { body: { agent: "scribe", id: "fresh" } })).status).toBe(201)
      const page = yield* browserPage
      yield* promise(() => page.goto(`${url}/instances/scribe/fresh`))
      yield* promise(() => page.waitForSelector("[data-testid=environment-no-conversation]"))
      expect(yield* promise(() => page.textContent("[data-testid=environment-no-conversation]"))).toContain("no conversation yet")
      expect(yield* promise(() => page.locator("[data-testid=environment-problem]").count())).toBe(0)
    }))
})
