import { randomBytes } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { describe, expect, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Effect, Fiber } from "effect"
import { plannedModel } from "../support/plannedModel.js"
import { connect, freshDatabase, holdLocks, skipPostgres, someoneWaitsForALock } from "../support/postgres.js"
import { http, startServer, startServerOnItsStore, waitForRun } from "../support/server.js"
import { until } from "../support/until.js"
import { allEvents, instancesProject } from "./apiProject.js"

interface Issue {
  readonly path: string
  readonly message: string
}

const issuesOf = (body: unknown): ReadonlyArray<Issue> =>
  typeof body === "object" && body !== null && "issues" in body && Array.isArray(body.issues) ? body.issues : []

const field = (body: unknown, key: string): unknown =>
  typeof body === "object" && body !== null && key in body ? Object.entries(body).find(([name]) => name === key)?.[1] : undefined

const stackTrace = /\bat .*\.[jt]s:\d+/

describe("the instances API", () => {
  it.scopedLive("an instance's round trip: create, read, change, pause, resume, uninstall, install, archive, each change an event", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject())
      const api = `${server.url}/api/instances`
      const created = yield* http(api, {
        body: {
          agent: "desk",
          id: "acme",
          provisioningKey: "customer-17",
          context: { company: "Acme" },
          installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm.acme.test", apiKey: "key-one" } }]
        }
      })
      expect(created.status).toBe(201)
      expect(created.json).toMatchObject({
        agent: "desk",
        id: "acme",
        provisioningKey: "customer-17",
        status: "active",
        statusReason: null,
        context: { company: "Acme", seats: 1 },
        created: true,
        installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm.acme.test", apiKey: "<redacted>" } }]
      })

      // The provisioning key names the instance: asking again answers it, unchanged.
      const again = yield* http(api, { body: { agent: "desk", provisioningKey: "customer-17", context: { company: "Other" } } })
      expect(again.status).toBe(201)
      expect(again.json).toMatchObject({ id: "acme", created: false, context: { company: "Acme" } })
      const taken = yield* http(api, { body: { agent: "desk", id: "acme", context: { company: "Acme" } } })
      expect(taken.status).toBe(409)
      expect(taken.json).toMatchObject({ _tag: "InstanceConflict", agent: "desk", instance: "acme" })
      const noAgent = yield* http(api, { body: { agent: "billing" } })
      expect(noAgent.status).toBe(404)
      expect(noAgent.json).toMatchObject({ _tag: "AgentNotFound", agent: "billing" })

      const read = yield* http(`${api}/acme`)
      expect(read.status).toBe(200)
      expect(read.json).toMatchObject({ agent: "desk", id: "acme", installations: [{ id: "crm-notes" }] })
      expect(field(read.json, "created")).toBeUndefined()
      const elsewhere = yield* http(`${api}/acme?agent=echo`)
      expect(elsewhere.status).toBe(404)
      expect(elsewhere.json).toMatchObject({ _tag: "InstanceNotFound", agent: "echo", instance: "acme" })
      expect((yield* http(`${api}/nobody`)).status).toBe(404)
      // A misspelt agent is said to be one, with the agent meant.
      const misspelt = yield* http(`${api}/acme?agent=dsk`)
      expect(misspelt.status).toBe(404)
      expect(misspelt.json).toMatchObject({ message: expect.stringContaining(`there is no agent "dsk"; did you mean "desk"?`) })

      const changed = yield* http(`${api}/acme?agent=desk`, { method: "PATCH", body: { context: { company: "Acme Corp", seats: 5 } } })
      expect(changed.status).toBe(200)
      expect(changed.json).toMatchObject({ context: { company: "Acme Corp", seats: 5 }, status: "active" })
      // A reason alone would change nothing: refused, saying what it goes with.
      const reasonAlone = yield* http(`${api}/acme`, { method: "PATCH", body: { reason: "invoice overdue" } })
      expect(reasonAlone.status).toBe(400)
      expect(reasonAlone.json).toMatchObject({ message: expect.stringContaining(`reason: goes with "paused"`) })
      const paused = yield* http(`${api}/acme`, { method: "PATCH", body: { paused: true, reason: "invoice overdue" } })
      expect(paused.json).toMatchObject({ status: "paused", statusReason: "invoice overdue", context: { company: "Acme Corp" } })
      const resumed = yield* http(`${api}/acme`, { method: "PATCH", body: { paused: false } })
      expect(resumed.json).toMatchObject({ status: "active", statusReason: null })

      const uninstalled = yield* http(`${api}/acme/installations?agent=desk&kind=tool&capability=crm-notes`, { method: "DELETE" })
      expect(uninstalled.status).toBe(204)
      expect(uninstalled.text).toBe("")
      // Again: nothing is installed under that name any more, and the client is told so.
      const uninstalledAgain = yield* http(`${api}/acme/installations?agent=desk&kind=tool&capability=crm-notes`, { method: "DELETE" })
      expect(uninstalledAgain.status).toBe(404)
      expect(uninstalledAgain.json).toMatchObject({ _tag: "NotInstalled", message: expect.stringContaining(`has no tool "crm-notes" installed`) })
      expect((yield* http(`${api}/acme`)).json).toMatchObject({ installations: [] })
      const installed = yield* http(`${api}/acme/installations`, {
        body: { kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm2.acme.test", apiKey: "key-two" } }
      })
      expect(installed.status).toBe(201)
      expect(installed.json).toEqual({
        kind: "tool",
        id: "crm-notes",
        config: { baseUrl: "https://crm2.acme.test", apiKey: "<redacted>" },
        createdAt: expect.any(Number),
        updatedAt: expect.any(Number)
      })
      // The whole set again, without a config: the installed one keeps its config, and nothing changes.
      const kept = yield* http(`${api}/acme`, { method: "PATCH", body: { installations: [{ kind: "tool", id: "crm-notes" }] } })
      expect(kept.json).toMatchObject({ installations: [{ id: "crm-notes", config: { baseUrl: "https://crm2.acme.test" } }] })
      // One capability twice is refused, not settled by the last entry: nothing changes.
      const twice = yield* http(`${api}/acme`, {
        method: "PATCH",
        body: { installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "https://a.test", apiKey: "a" } }, { kind: "tool", id: "crm-notes" }] }
      })
      expect(twice.status).toBe(400)
      expect(field(twice.json, "message")).toEqual(expect.stringContaining(`the tool "crm-notes" is listed twice`))
      expect(twice.json).toMatchObject({ issues: [{ path: "installations[1].id" }] })
      expect((yield* http(`${api}/acme`)).json).toMatchObject({ installations: [{ config: { baseUrl: "https://crm2.acme.test" } }] })

      // A second agent with an instance of the same id: the id alone no longer says which.
      expect((yield* http(api, { body: { agent: "echo", id: "acme" } })).status).toBe(201)
      const ambiguous = yield* http(`${api}/acme`)
      expect(ambiguous.status).toBe(400)
      expect(ambiguous.json).toMatchObject({ _tag: "BadRequest", issues: [{ path: "agent" }] })
      expect(field(ambiguous.json, "message")).toEqual(expect.stringContaining(`agents "desk", "echo" each have an instance "acme"`))

      const listed = yield* http(`${api}?agent=desk`)
      expect(listed.json).toMatchObject({ instances: [{ agent: "desk", id: "acme", installations: 1, status: "active" }], next: null })

      const archived = yield* http(`${api}/acme?agent=desk&reason=contract%20ended`, { method: "DELETE" })
      expect(archived.status).toBe(200)
      expect(archived.json).toMatchObject({ status: "archived", statusReason: "contract ended" })
      const afterArchive = yield* http(`${api}/acme?agent=desk`, { method: "PATCH", body: { paused: true } })
      expect(afterArchive.status).toBe(409)
      expect(afterArchive.json).toMatchObject({ _tag: "InstanceConflict", message: expect.stringContaining("archived") })
      // Its id stays taken: the 409 says the instance is archived, for good, and to take another id (not to PATCH it).
      const reused = yield* http(api, { body: { agent: "desk", id: "acme", context: { company: "Acme" } } })
      expect(reused.status).toBe(409)
      expect(reused.json).toMatchObject({ _tag: "InstanceConflict", agent: "desk", instance: "acme" })
      expect(field(reused.json, "message")).toEqual(
        `agent "desk" has an archived instance "acme" (contract ended): archiving is final (there is no unarchive) and the instance keeps its id with its history; create the new instance with another id`
      )
      // A provisioning retried with the archived instance's key is told, not handed an instance that takes nothing.
      const reprovisioned = yield* http(api, { body: { agent: "desk", id: "acme-2", provisioningKey: "customer-17", context: { company: "Acme" } } })
      expect(reprovisioned.status).toBe(409)
      expect(reprovisioned.json).toMatchObject({ _tag: "InstanceConflict", message: expect.stringContaining(`belongs to instance "acme"`) })
      expect((yield* http(`${api}?agent=desk&status=archived`)).json).toMatchObject({ instances: [{ id: "acme" }] })
      expect((yield* http(`${api}?agent=desk&status=active`)).json).toEqual({ instances: [], next: null })

      const { events } = yield* allEvents(server.url, "agent=desk&instanceId=acme")
      expect(events.map((event) => event.type)).toEqual([
        "instance.created",
        "instance.installed",
        "instance.updated",
        "instance.paused",
        "instance.resumed",
        "instance.uninstalled",
        "instance.installed",
        "instance.archived"
      ])
      expect(events.map((event) => event.data)).toEqual([
        { provisioningKey: "customer-17", context: { company: "Acme", seats: 1 }, installations: [{ kind: "tool", capability: "crm-notes" }] },
        { kind: "tool", capability: "crm-notes", config: { baseUrl: "https://crm.acme.test", apiKey: "<redacted>" } },
        { context: { company: "Acme Corp", seats: 5 } },
        { reason: "invoice overdue" },
        {},
        { kind: "tool", capability: "crm-notes" },
        { kind: "tool", capability: "crm-notes", config: { baseUrl: "https://crm2.acme.test", apiKey: "<redacted>" } },
        { reason: "contract ended" }
      ])
    }))

  it.scopedLive("a config that fails its schema is a 400 listing every wrong field; so is an invalid context, naming context.company", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject())
      const api = `${server.url}/api/instances`
      expect((yield* http(api, { body: { agent: "desk", id: "acme", context: { company: "Acme" } } })).status).toBe(201)

      const wrongConfig = yield* http(`${api}/acme/installations?agent=desk`, {
        body: { kind: "tool", id: "crm-notes", config: { baseUrl: 42, token: "misspelt" } }
      })
      expect(wrongConfig.status).toBe(400)
      expect(wrongConfig.json).toMatchObject({ _tag: "InvalidInstance" })
      expect(issuesOf(wrongConfig.json).map((issue) => issue.path).sort()).toEqual(["config.apiKey", "config.baseUrl", "config.token"])
      expect(issuesOf(wrongConfig.json)).toEqual(expect.arrayContaining([
        { path: "config.baseUrl", message: "expected a string" },
        { path: "config.apiKey", message: "is missing" },
        { path: "config.token", message: expect.stringMatching(/^is not allowed; did you mean "apiKey"\?|^is not allowed \(the fields here: /) }
      ]))
      expect(field(wrongConfig.json, "message")).toEqual(expect.stringContaining("config.baseUrl: expected a string"))
      const unknownCapability = yield* http(`${api}/acme/installations?agent=desk`, { body: { kind: "tool", id: "crm", config: {} } })
      expect(unknownCapability.status).toBe(400)
      expect(issuesOf(unknownCapability.json)).toEqual([{ path: "id", message: expect.stringContaining("tool crm-notes") }])
      const atCreate = yield* http(api, {
        body: { agent: "desk", id: "globex", context: { company: "Globex" }, installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "x" } }] }
      })
      expect(atCreate.status).toBe(400)
      expect(issuesOf(atCreate.json)).toEqual([{ path: "installations[0].config.apiKey", message: "is missing" }])
      expect((yield* http(`${api}/globex?agent=desk`)).status).toBe(404)
      expect((yield* http(`${api}/acme?agent=desk`)).json).toMatchObject({ installations: [] })

      const badContext = yield* http(api, { body: { agent: "desk", id: "initech", context: { company: 7 } } })
      expect(badContext.status).toBe(400)
      expect(badContext.json).toMatchObject({ _tag: "InvalidInstance", issues: [{ path: "context.company", message: "expected a string, got 7" }] })
      const noContext = yield* http(api, { body: { agent: "desk", id: "initech" } })
      expect(noContext.status).toBe(400)
      expect(issuesOf(noContext.json)).toEqual([{ path: "context.company", message: "is missing" }])
      const badPatch = yield* http(`${api}/acme?agent=desk`, { method: "PATCH", body: { context: { seats: "many" } } })
      expect(badPatch.status).toBe(400)
      expect(issuesOf(badPatch.json).map((issue) => issue.path).sort()).toEqual(["context.company", "context.seats"])
      expect((yield* http(`${api}/acme?agent=desk`)).json).toMatchObject({ context: { company: "Acme", seats: 1 } })
      const badId = yield* http(api, { body: { agent: "echo", id: "no spaces/here" } })
      expect(badId.status).toBe(400)
      expect(issuesOf(badId.json).map((issue) => issue.path)).toEqual(["id"])
      const badBody = yield* http(api, { body: { agent: "desk", installations: [{ kind: "plugin", id: "x" }] } })
      expect(badBody.status).toBe(400)
      expect(badBody.json).toMatchObject({ _tag: "BadRequest", issues: [{ path: "installations[0].kind" }] })

      for (const response of [wrongConfig, unknownCapability, atCreate, badContext, noContext, badPatch, badId, badBody]) {
        expect(response.text).not.toMatch(stackTrace)
      }
    }))

  it.scopedLive("a secret is in no API response, no event and nowhere in the database file as plain text", () =>
    Effect.gen(function*() {
      const secret = `sk-secret-${randomBytes(12).toString("hex")}`
      const second = `sk-secret-${randomBytes(12).toString("hex")}`
      const root = yield* instancesProject()
      const server = yield* startServer(root)
      const api = `${server.url}/api/instances`
      const texts: Array<string> = []
      const keep = <A extends { readonly text: string; readonly status: number }>(response: A): A => {
        texts.push(response.text)
        return response
      }
      const config = (apiKey: string) => ({ baseUrl: "https://crm.acme.test", apiKey })

      const created = keep(yield* http(api, {
        body: { agent: "desk", id: "acme", context: { company: "Acme" }, installations: [{ kind: "tool", id: "crm-notes", config: config(secret) }] }
      }))
      expect(created.status).toBe(201)
      keep(yield* http(api, { body: { agent: "echo", id: "beta" } }))
      const installed = keep(yield* http(`${api}/beta/installations`, { body: { kind: "tool", id: "crm-notes", config: config(secret) } }))
      expect(installed.status).toBe(201)
      const replaced = keep(yield* http(`${api}/acme`, {
        method: "PATCH",
        body: { installations: [{ kind: "tool", id: "crm-notes", config: config(second) }] }
      }))
      expect(replaced.status).toBe(200)
      // A refused config names the field, never its value.
      const refused = keep(yield* http(`${api}/beta/installations`, { body: { kind: "tool", id: "crm-notes", config: { apiKey: secret, baseUrl: 1 } } }))
      expect(refused.status).toBe(400)
      const run = keep(yield* http(`${server.url}/api/runs`, { body: { agent: "desk", instance: "acme", message: "Any notes on customer 7?" } }))
      expect(run.status).toBe(202)
      const runId = String(field(run.json, "runId"))
      yield* waitForRun(server.url, runId)
      keep(yield* http(`${server.url}/api/runs/${runId}/events`))
      keep(yield* http(`${api}/acme`))
      keep(yield* http(`${api}/beta`))
      keep(yield* http(api))
      keep(yield* http(`${api}/acme/conversations`))
      keep(yield* http(`${server.url}/api/capabilities`))
      const { events, texts: eventPages } = yield* allEvents(server.url)
      texts.push(...eventPages)

      expect(events.filter((event) => event.type === "instance.installed")).toHaveLength(3)
      expect(JSON.stringify(events)).toContain("<redacted>")
      for (const text of texts) {
        expect(text).not.toContain(secret)
        expect(text).not.toContain(second)
      }

      // The secrets are kept, sealed: the store holds them, never as the text that was sent.
      const db = new Sqlite(server.storeFile, { readonly: true })
      const rows = db.prepare("SELECT instance_id AS instance, secrets FROM foundry_installations ORDER BY instance_id").all()
      db.close()
      expect(rows).toEqual([{ instance: "acme", secrets: expect.any(String) }, { instance: "beta", secrets: expect.any(String) }])
      // The write-ahead log holds what is not yet checkpointed into the file: both are read.
      const bytes = Buffer.concat([server.storeFile, `${server.storeFile}-wal`].filter(existsSync).map((file) => readFileSync(file)))
      expect(bytes.includes(Buffer.from("crm.acme.test"))).toBe(true)
      expect(bytes.includes(Buffer.from(secret))).toBe(false)
      expect(bytes.includes(Buffer.from(second))).toBe(false)
    }))

  it.scopedLive("a paused instance refuses runs with 409 saying how to resume, then runs once resumed; an archived one refuses runs and keeps its history", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject())
      const api = `${server.url}/api/instances`
      expect((yield* http(api, { body: { agent: "desk", id: "acme", context: { company: "Acme" } } })).status).toBe(201)
      yield* http(`${api}/acme?agent=desk`, { method: "PATCH", body: { paused: true, reason: "invoice overdue" } })

      const refused = yield* http(`${server.url}/api/runs`, { body: { agent: "desk", instance: "acme", message: "hello" } })
      expect(refused.status).toBe(409)
      expect(refused.json).toMatchObject({ _tag: "InstanceUnavailable", agent: "desk", instance: "acme", reason: "paused" })
      const message = String(field(refused.json, "message"))
      expect(message).toContain("paused")
      expect(message).toContain("invoice overdue")
      expect(message).toContain(`PATCH /api/instances/acme?agent=desk {"paused": false}`)
      expect((yield* http(`${server.url}/api/runs?agent=desk`)).json).toEqual([])

      yield* http(`${api}/acme?agent=desk`, { method: "PATCH", body: { paused: false } })
      const accepted = yield* http(`${server.url}/api/runs`, { body: { agent: "desk", instance: "acme", message: "hello" } })
      expect(accepted.status).toBe(202)
      const { conversationId, runId } = accepted.json as { runId: string; conversationId: string }
      expect(yield* waitForRun(server.url, runId)).toMatchObject({ status: "completed", instanceId: "acme" })
      const other = yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "hello" } })
      yield* waitForRun(server.url, String(field(other.json, "runId")))

      const archived = yield* http(`${api}/acme?agent=desk`, { method: "DELETE" })
      expect(archived.json).toMatchObject({ status: "archived" })
      const afterArchive = yield* http(`${server.url}/api/runs`, { body: { agent: "desk", instance: "acme", message: "again" } })
      expect(afterArchive.status).toBe(409)
      expect(afterArchive.json).toMatchObject({ _tag: "InstanceUnavailable", reason: "archived", message: expect.stringContaining("archived") })
      const inConversation = yield* http(`${server.url}/api/runs`, {
        body: { agent: "desk", instance: "acme", conversation: conversationId, message: "again" }
      })
      expect(inConversation.status).toBe(409)

      // The history stays readable.
      const messages = yield* http(`${server.url}/api/conversations/${conversationId}/messages`)
      expect(messages.status).toBe(200)
      expect(messages.json).toEqual(expect.arrayContaining([expect.objectContaining({ role: "user", content: "hello", runId })]))
      expect((yield* http(`${server.url}/api/runs/${runId}`)).json).toMatchObject({ status: "completed" })
      const runs = yield* http(`${server.url}/api/runs?agent=desk&instance=acme`)
      expect((runs.json as Array<{ id: string }>).map((run) => run.id)).toEqual([runId])
      expect((yield* http(`${server.url}/api/runs?instance=default`)).json).toMatchObject([{ agent: "echo" }])
      // An agent's default instance is its own: archiving it would leave the agent taking no runs.
      const archiveDefault = yield* http(`${api}/default?agent=echo`, { method: "DELETE" })
      expect(archiveDefault.status).toBe(409)
      expect(archiveDefault.json).toMatchObject({ _tag: "InstanceConflict", message: expect.stringContaining("pause it instead") })
      expect((yield* http(`${api}/default?agent=echo`)).json).toMatchObject({ status: "active" })
      const conversations = yield* http(`${api}/acme/conversations?agent=desk`)
      expect(conversations.status).toBe(200)
      const acmeConversation = {
        id: conversationId,
        agent: "desk",
        instanceId: "acme",
        createdAt: expect.any(Number),
        updatedAt: expect.any(Number),
        runs: 1,
        lastRun: { id: runId, status: "completed", createdAt: expect.any(Number), input: "hello" }
      }
      expect(conversations.json).toEqual([acmeConversation])
      expect((yield* http(`${api}/nobody/conversations?agent=desk`)).status).toBe(404)

      // Every conversation, most recently active first, a page at a time; or an agent's, or an instance's.
      const echoConversation = String(field(other.json, "conversationId"))
      const all = yield* http(`${server.url}/api/conversations`)
      expect(all.status).toBe(200)
      expect(all.json).toMatchObject({ conversations: [{ id: echoConversation, agent: "echo", instanceId: "default" }, acmeConversation], next: null })
      const first = (yield* http(`${server.url}/api/conversations?limit=1`)).json as { conversations: ReadonlyArray<{ id: string }>; next: string }
      expect(first.conversations.map((c) => c.id)).toEqual([echoConversation])
      const second = yield* http(`${server.url}/api/conversations?limit=1&before=${encodeURIComponent(first.next)}`)
      expect(second.json).toMatchObject({ conversations: [{ id: conversationId }], next: null })
      expect((yield* http(`${server.url}/api/conversations?agent=desk`)).json).toMatchObject({ conversations: [{ id: conversationId }] })
      expect((yield* http(`${server.url}/api/conversations?instance=default`)).json).toMatchObject({ conversations: [{ id: echoConversation }] })
      const badCursor = yield* http(`${server.url}/api/conversations?before=nonsense`)
      expect(badCursor.status).toBe(400)
      expect(badCursor.text).toContain("expected the `next` of a previous page")
    }))

  it.scopedLive("a run for an instance that does not exist yet, of an agent that needs a context, is a 409 saying to create it; once created it runs", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject())
      const refused = yield* http(`${server.url}/api/runs`, { body: { agent: "desk", instance: "globex", message: "hello" } })
      expect(refused.status).toBe(409)
      expect(refused.json).toMatchObject({ _tag: "InstanceUnavailable", reason: "context", instance: "globex" })
      expect(String(field(refused.json, "message"))).toContain(`POST /api/instances {"agent": "desk", "id": "globex", "context": {...}}`)
      expect((yield* http(`${server.url}/api/instances/globex`)).status).toBe(404)

      const created = yield* http(`${server.url}/api/instances`, { body: { agent: "desk", id: "globex", context: { company: "Globex", seats: 3 } } })
      expect(created.status).toBe(201)
      const accepted = yield* http(`${server.url}/api/runs`, { body: { agent: "desk", instance: "globex", message: "hello" } })
      expect(accepted.status).toBe(202)
      expect(yield* waitForRun(server.url, String(field(accepted.json, "runId")))).toMatchObject({ status: "completed", instanceId: "globex" })
      // An agent without a context schema still makes its instances on first use.
      const implicit = yield* http(`${server.url}/api/runs`, { body: { agent: "echo", instance: "walk-in", message: "hello" } })
      expect(implicit.status).toBe(202)
      expect((yield* http(`${server.url}/api/instances/walk-in`)).json).toMatchObject({ agent: "echo", context: {}, status: "active" })
    }))
})

/** A server on a fresh PostgreSQL database with instance "acme" of agent "desk" (with `installations`), and a client of the database. */
const acmeOnPostgres = (installations: ReadonlyArray<unknown> = []) =>
  Effect.gen(function*() {
    const url = yield* freshDatabase
    const project = yield* instancesProject(`import { defineConfig } from "foundry"
export default defineConfig({ store: { postgres: ${JSON.stringify(url)} } })
`)
    const server = yield* startServerOnItsStore(project, plannedModel)
    const api = `${server}/api/instances`
    expect((yield* http(api, { body: { agent: "desk", id: "acme", context: { company: "Acme" }, installations } })).status).toBe(201)
    // A second server on the store: a server writes one transaction at a time (its group commit),
    // so changes at the same moment that each wait in the database come from two.
    const another = Effect.map(startServerOnItsStore(project, plannedModel), (other) => `${other}/api/instances`)
    return { api, another, server, sql: yield* connect(url) }
  })

describe.skipIf(skipPostgres)("the instances API on PostgreSQL", () => {
  it.scopedLive("two archives of one instance at once: both answer archived, one instance.archived with the reason that stuck", () =>
    Effect.gen(function*() {
      // On PostgreSQL, where both read the instance before either writes.
      const { api, server } = yield* acmeOnPostgres()
      const answers = yield* Effect.all(
        ["moved away", "contract ended"].map((reason) => http(`${api}/acme?agent=desk&reason=${encodeURIComponent(reason)}`, { method: "DELETE" })),
        { concurrency: "unbounded" }
      )
      expect(answers.map((answer) => answer.status)).toEqual([200, 200])
      const stuck = field((yield* http(`${api}/acme?agent=desk`)).json, "statusReason")
      const { events } = yield* allEvents(server, "agent=desk&instanceId=acme")
      expect(events.filter((event) => event.type === "instance.archived").map((event) => event.data)).toEqual([{ reason: stuck }])
    }))

  it.scopedLive("two pauses of one instance at once, both read while it was active: both answer paused, one instance.paused", () =>
    Effect.gen(function*() {
      const { another, api, server, sql } = yield* acmeOnPostgres()
      const apis = [api, yield* another]
      // Both read the instance active, then wait to write it (one for the instance, the other for the first).
      const release = yield* holdLocks(sql, sql`SELECT id FROM foundry_instances WHERE agent = 'desk' AND id = 'acme' FOR UPDATE`)
      const pausing = yield* Effect.fork(Effect.all(
        ["invoice overdue", "moving offices"].map((reason, index) =>
          http(`${apis[index]}/acme?agent=desk`, { method: "PATCH", body: { paused: true, reason } })
        ),
        { concurrency: "unbounded" }
      ))
      yield* until("both pauses wait", someoneWaitsForALock(sql, "%", 2))
      yield* release
      expect((yield* Fiber.join(pausing)).map((answer) => [answer.status, field(answer.json, "status")])).toEqual([[200, "paused"], [200, "paused"]])
      const stuck = field((yield* http(`${api}/acme?agent=desk`)).json, "statusReason")
      const { events } = yield* allEvents(server, "agent=desk&instanceId=acme")
      expect(events.filter((event) => event.type === "instance.paused").map((event) => event.data)).toEqual([{ reason: stuck }])
    }))

  it.scopedLive("a secret rotated while a change made from an earlier read waits to be written: the change keeps the rotated secret", () =>
    Effect.gen(function*() {
      const crm = (config: Record<string, string>) => ({ kind: "tool", id: "crm-notes", config })
      const { another, api, sql } = yield* acmeOnPostgres([crm({ baseUrl: "https://crm.acme.test", apiKey: "key-one" })])
      const rotator = yield* another
      const sealed = Effect.map(sql<{ readonly secrets: string; readonly config: string }>`SELECT secrets, config FROM foundry_installations WHERE instance_id = 'acme'`, (rows) => rows[0])
      const first = yield* sealed
      // Every write of an instance is written with its events, and waits for the events' lock:
      // held here, B's rotation of the key (from a second server) waits for it first; then A's
      // change (a new context, and the CRM's address with its key kept) reads the installation and
      // waits behind it. Released, B's rotation is written before A's change (the lock's waiters go in turn).
      const eventsLock = "SELECT pg_advisory_xact_lock(hashtext('foundry_events'), hashtext(current_schema()))"
      const release = yield* holdLocks(sql, sql.unsafe(eventsLock))
      const rotating = yield* Effect.fork(http(`${rotator}/acme/installations?agent=desk`, { body: crm({ baseUrl: "https://crm.acme.test", apiKey: "key-two" }) }))
      yield* until("the rotation waits", someoneWaitsForALock(sql, "%pg_advisory_xact_lock%"))
      const changing = yield* Effect.fork(http(`${api}/acme?agent=desk`, {
        method: "PATCH",
        body: { context: { company: "Acme Corp" }, installations: [crm({ baseUrl: "https://crm2.acme.test", apiKey: "<redacted>" })] }
      }))
      yield* until("the change waits", someoneWaitsForALock(sql, "%pg_advisory_xact_lock%", 2))
      yield* release
      expect((yield* Fiber.join(rotating)).status).toBe(201)
      expect((yield* Fiber.join(changing)).status).toBe(200)
      const last = yield* sealed
      // The key is B's (sealed anew), the address A's: A's change was made again over B's.
      expect(last?.secrets).not.toBe(first?.secrets)
      expect(JSON.parse(last?.config ?? "{}")).toMatchObject({ baseUrl: "https://crm2.acme.test" })
    }))
})
