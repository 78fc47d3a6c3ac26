/**
 * The system group's handlers: the route table, the build and health.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { BuildStatus } from "../../../compiler/BuildStatus.js"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import { manifestOf } from "../../../router/codegen.js"
import { FoundryApi } from "../api/FoundryApi.js"

/** Handlers for `/api/routes`, `/api/build` and `/health`. */
export const SystemLive = HttpApiBuilder.group(FoundryApi, "system", (handlers) =>
  Effect.gen(function*() {
    const current = yield* CurrentApp
    const status = yield* BuildStatus
    const startedAt = yield* Clock.currentTimeMillis
    return handlers
      .handle("routes", () => Effect.map(current.get, (app) => manifestOf(app.table)))
      .handle("build", () => status.get)
      .handle("health", () =>
        Effect.gen(function*() {
          const app = yield* current.get
          const now = yield* Clock.currentTimeMillis
          return { status: "ok" as const, agents: app.agents.size, uptimeMs: now - startedAt }
        }))
  }))
