/**
 * The system group's handlers: the route table and health.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import { manifestOf } from "../../../router/codegen.js"
import { FoundryApi } from "../api/FoundryApi.js"

/** Handlers for `/api/routes` and `/health`. */
export const SystemLive = HttpApiBuilder.group(FoundryApi, "system", (handlers) =>
  Effect.gen(function*() {
    const current = yield* CurrentApp
    const startedAt = yield* Clock.currentTimeMillis
    return handlers
      .handle("routes", () => Effect.map(current.get, (app) => manifestOf(app.table)))
      .handle("health", () =>
        Effect.gen(function*() {
          const app = yield* current.get
          const now = yield* Clock.currentTimeMillis
          return { status: "ok" as const, agents: app.agents.size, uptimeMs: now - startedAt }
        }))
  }))
