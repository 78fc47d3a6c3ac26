/**
 * Secrets on the paths that are not the happy one: a secret that fails its schema is not quoted
 * back, a config sent back as the API showed it keeps the installed secret (and changes nothing),
 * `"<redacted>"` where no secret is installed is refused, and an id taken by another instance is a
 * conflict even with a new provisioning key.
 */
import { randomBytes } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import Sqlite from "better-sqlite3"
import { Effect } from "effect"
import { http, startServer } from "../support/server.js"
import { allEvents, instancesProject } from "./apiProject.js"

const sealedOf = (storeFile: string, instance: string): unknown => {
  const db = new Sqlite(storeFile, { readonly: true })
  try {
    const row: unknown = db.prepare("SELECT secrets FROM foundry_installations WHERE instance_id = ?").get(instance)
    return typeof row === "object" && row !== null && "secrets" in row ? row.secrets : undefined
  } finally {
    db.close()
  }
}

describe("instance secrets off the happy path", () => {
  it.scopedLive("a wrong secret is not quoted back; a config sent back as shown keeps its secret; a placeholder alone is refused", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject())
      const api = `${server.url}/api/instances`
      const secret = `sk-${randomBytes(8).toString("hex")}`

      // A secret of the wrong type: the 400 names the field without its value.
      const wrongNumber = 80_000_000 + Math.floor(Math.random() * 9_999_999)
      const refused = yield* http(api, {
        body: { agent: "echo", id: "wrong", installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm.test", apiKey: wrongNumber } }] }
      })
      expect(refused.status).toBe(400)
      expect(refused.text).toContain("installations[0].config.apiKey")
      expect(refused.text).not.toContain(String(wrongNumber))

      // Installed, then sent back exactly as GET shows it: nothing changes, the secret is kept.
      const made = yield* http(api, {
        body: { agent: "echo", id: "acme", installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm.test", apiKey: secret } }] }
      })
      expect(made.status).toBe(201)
      const sealed = sealedOf(server.storeFile, "acme")
      expect(typeof sealed).toBe("string")
      const shown = yield* http(`${api}/acme?agent=echo`)
      expect(shown.text).toContain("<redacted>")
      const installations = typeof shown.json === "object" && shown.json !== null && "installations" in shown.json ? shown.json.installations : []
      const before = (yield* allEvents(server.url, "type=instance.installed")).events.length
      const sentBack = yield* http(`${api}/acme?agent=echo`, { method: "PATCH", body: { installations } })
      expect(sentBack.status).toBe(200)
      expect(sealedOf(server.storeFile, "acme")).toBe(sealed)
      expect((yield* allEvents(server.url, "type=instance.installed")).events.length).toBe(before)

      // A changed public field with the secret shown as "<redacted>": the field changes, the secret stays as sealed.
      const moved = yield* http(`${api}/acme?agent=echo`, {
        method: "PATCH",
        body: { installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm2.test", apiKey: "<redacted>" } }] }
      })
      expect(moved.status).toBe(200)
      expect(moved.text).toContain("https://crm2.test")
      expect(sealedOf(server.storeFile, "acme")).toBe(sealed)

      // "<redacted>" where nothing is installed is not a secret.
      const placeholder = yield* http(`${api}/fresh/installations?agent=echo`, { method: "POST", body: { kind: "tool", id: "crm-notes", config: {} } })
      expect(placeholder.status).toBe(404)
      yield* http(api, { body: { agent: "echo", id: "fresh" } })
      const onlyPlaceholder = yield* http(`${api}/fresh/installations?agent=echo`, {
        body: { kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm.test", apiKey: "<redacted>" } }
      })
      expect(onlyPlaceholder.status).toBe(400)
      expect(onlyPlaceholder.text).toContain("send the secret itself")

      const everything = yield* allEvents(server.url)
      expect(everything.texts.join("\n")).not.toContain(secret)
      expect(everything.texts.join("\n")).not.toContain(String(wrongNumber))
    }))

  it.scopedLive("an id taken by another instance is a conflict, even with a new provisioning key; a repeated key answers its instance, unless another id is asked for", () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* instancesProject())
      const api = `${server.url}/api/instances`
      expect((yield* http(api, { body: { agent: "echo", id: "acme", provisioningKey: "k1" } })).status).toBe(201)
      const other = yield* http(api, { body: { agent: "echo", id: "acme", provisioningKey: "k2" } })
      expect(other.status).toBe(409)
      expect(other.text).toContain(`provisioning key \\"k1\\"`)
      const again = yield* http(api, { body: { agent: "echo", provisioningKey: "k1" } })
      expect(again.json).toMatchObject({ id: "acme", created: false })
      expect((yield* http(api, { body: { agent: "echo", id: "acme", provisioningKey: "k1" } })).json).toMatchObject({ id: "acme", created: false })
      // A key and an id of two instances: neither is the one asked for.
      const mixed = yield* http(api, { body: { agent: "echo", id: "whatever", provisioningKey: "k1" } })
      expect(mixed.status).toBe(409)
      expect(mixed.json).toMatchObject({ message: expect.stringContaining(`provisioning key "k1" belongs to instance "acme" of agent "echo", not "whatever"`) })
      expect((yield* http(`${api}/whatever?agent=echo`)).status).toBe(404)
      // An archived instance changes no more, installations included.
      expect((yield* http(`${api}/acme?agent=echo`, { method: "DELETE" })).status).toBe(200)
      const uninstall = yield* http(`${api}/acme/installations?agent=echo&kind=tool&capability=crm-notes`, { method: "DELETE" })
      expect(uninstall.status).toBe(409)
      expect(uninstall.text).toContain("archived")
    }))
})
