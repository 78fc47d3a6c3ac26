/**
 * The system group's handlers: the route table, the build and health.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Clock, Effect } from "effect"
import { BuildStatus } from "../../../compiler/BuildStatus.js"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import { ModelResolver, runsOnInstead } from "../../../models/Model.js"
import { manifestOf } from "../../../router/codegen.js"
import { FoundryApi } from "../api/FoundryApi.js"

/** Handlers for `/api/routes`, `/api/build` and `/health`. */
export const SystemLive = HttpApiBuilder.group(FoundryApi, "system", (handlers) =>
  Effect.gen(function*() {
    const current = yield* CurrentApp
    const status = yield* BuildStatus
    const startedAt = yield* Clock.currentTimeMillis
    const models = yield* ModelResolver
    // What the route table says an agent asks for, and beside it what it gets when that differs.
    const withModelsRunOn = (manifest: ReturnType<typeof manifestOf>) => ({
      ...manifest,
      routes: manifest.routes.map((route) => {
        const runsOn = route.kind === "agent" && route.model !== undefined ? runsOnInstead(models, route.model) : undefined
        return runsOn === undefined ? route : { ...route, runsOn }
      })
    })
    return handlers
      .handle("routes", () => Effect.map(current.get, (app) => withModelsRunOn(manifestOf(app.table))))
      .handle("build", () => status.get)
      .handle("health", () =>
        Effect.gen(function*() {
          const app = yield* current.get
          const now = yield* Clock.currentTimeMillis
          const leftOut = app.leftOut?.length ?? 0
          return { status: "ok" as const, agents: app.agents.size, uptimeMs: now - startedAt, ...(leftOut === 0 ? {} : { leftOut }) }
        }))
  }))
