/**
 * Processes that share a store must seal installation secrets with one key: a process whose key
 * does not open the secrets sealed last refuses to start, saying which key to set, instead of
 * leaving the other key's installed tools out of every run it takes with a warning.
 */
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { ConfigProvider, Effect, Exit } from "effect"
import { http, startServer } from "../support/server.js"
import { instancesProject } from "./apiProject.js"

const withSettings = (settings: Record<string, string>) => Effect.withConfigProvider(ConfigProvider.fromMap(new Map(Object.entries(settings))))

describe("the secret key of processes sharing a store", () => {
  it.scopedLive("a process whose key does not open the store's secrets refuses to start, and starts with the same key", () =>
    Effect.gen(function*() {
      // Two copies of one project, each with a key of its own in .foundry/secret.key, on one store.
      const first = yield* instancesProject()
      const second = yield* instancesProject()
      const server = yield* startServer(first)
      const storeFile = server.storeFile
      const made = yield* http(`${server.url}/api/instances`, {
        body: { agent: "echo", id: "acme", installations: [{ kind: "tool", id: "crm-notes", config: { baseUrl: "https://crm.test", apiKey: "sk-1" } }] }
      })
      expect(made.status).toBe(201)

      const refused = yield* Effect.exit(Effect.scoped(startServer(second, { storeFile })))
      expect(Exit.isFailure(refused)).toBe(true)
      const message = Exit.isFailure(refused) ? JSON.stringify(refused.cause) : ""
      expect(message).toContain("SecretKeyMismatch")
      expect(message).toContain("does not open the installation secrets in the store")
      expect(message).toContain(`the tool \\"crm-notes\\" of instance \\"acme\\" of agent \\"echo\\"`)
      expect(message).toContain("Set FOUNDRY_SECRET_KEY to the key the other processes use")

      // The first project's key, given as FOUNDRY_SECRET_KEY, opens them: the second process starts.
      const key = readFileSync(join(first, ".foundry", "secret.key"), "utf8").trim()
      const same = yield* Effect.exit(Effect.scoped(withSettings({ FOUNDRY_SECRET_KEY: key })(startServer(second, { storeFile }))))
      expect(Exit.isSuccess(same)).toBe(true)
      // A lost key: started anyway when told to.
      const anyway = yield* Effect.exit(Effect.scoped(withSettings({ FOUNDRY_SECRET_KEY_CHECK: "off" })(startServer(second, { storeFile }))))
      expect(Exit.isSuccess(anyway)).toBe(true)
      // The process that sealed them starts again as before.
      const again = yield* Effect.exit(Effect.scoped(startServer(first, { storeFile })))
      expect(Exit.isSuccess(again)).toBe(true)
    }))
})
