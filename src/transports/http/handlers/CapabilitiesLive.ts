/**
 * The capabilities group's handler: what the build serving now offers for installation.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { capabilityView } from "./capabilityView.js"

/** Handlers for `/api/capabilities`. */
export const CapabilitiesLive = HttpApiBuilder.group(FoundryApi, "capabilities", (handlers) =>
  Effect.gen(function*() {
    const current = yield* CurrentApp
    return handlers.handle("list", () =>
      Effect.map(current.get, (app) =>
        [...app.capabilities.values()]
          .map(capabilityView)
          .sort((a, b) => a.kind.localeCompare(b.kind) || a.id.localeCompare(b.id))))
  }))
