/**
 * The schedules group's handlers.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Schedules, type ScheduleView } from "../../../triggers/Schedules.js"
import { FoundryApi } from "../api/FoundryApi.js"

/** The schedule with its timing as plain string fields. */
const flat = (view: ScheduleView) => ({
  ...view,
  timing: Object.fromEntries(Object.entries(view.timing).flatMap(([k, v]) => typeof v === "string" ? [[k, v]] : []))
})

/** Handlers for `/api/schedules`. */
export const SchedulesHttpLive = HttpApiBuilder.group(FoundryApi, "schedules", (handlers) =>
  Effect.gen(function*() {
    const schedules = yield* Schedules
    return handlers
      .handle("list", () => schedules.list.pipe(Effect.map((all) => all.map(flat)), Effect.orDie))
      .handle("pause", ({ path }) => schedules.pause(path.scheduleId).pipe(Effect.map(flat), Effect.catchTag("StoreError", Effect.die)))
      .handle("resume", ({ path }) => schedules.resume(path.scheduleId).pipe(Effect.map(flat), Effect.catchTag("StoreError", Effect.die)))
      .handle("trigger", ({ path }) => schedules.trigger(path.scheduleId).pipe(Effect.map(flat), Effect.catchTag("StoreError", Effect.die)))
  }))
