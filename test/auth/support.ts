/**
 * Shared pieces of the auth tests: a project whose config asks for tokens on loopback, and tokens
 * issued straight into a server's store (as `foundry token create` does).
 */
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import * as TokenStorage from "../../src/auth/TokenStorage.js"
import type { TokenScope } from "../../src/auth/TokenScope.js"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"
import { agentFile, tempProject } from "../support/tempProject.js"

/** A project with one demo agent (`echo`) and `auth` set in its config. */
export const authProject = (auth: string = "{ required: true }") =>
  tempProject({
    "agents/echo/agent.ts": agentFile(),
    "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ auth: ${auth} })\n`
  })

/** A new token with `scope` in the store at `storeFile`: its id and its text. */
export const issue = (storeFile: string, scope: TokenScope, name = `${scope} test token`) =>
  Effect.scoped(
    Effect.gen(function*() {
      const tokens = yield* TokenStorage.TokenStorage
      const { record, token } = yield* tokens.create({ name, scope })
      return { id: record.id, token }
    }).pipe(Effect.provide(TokenStorage.layer.pipe(Layer.provide(SqliteDatabase.layer(storeFile)), Layer.provide(NodeContext.layer))))
  )

/** `Authorization` for a token. */
export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })

/** Revokes token `id` straight in the store at `storeFile`, as `foundry token revoke` does from another process. */
export const revokeIn = (storeFile: string, id: string) =>
  Effect.scoped(
    Effect.flatMap(TokenStorage.TokenStorage, (tokens) => tokens.revoke(id)).pipe(
      Effect.provide(TokenStorage.layer.pipe(Layer.provide(SqliteDatabase.layer(storeFile)), Layer.provide(NodeContext.layer)))
    )
  )
