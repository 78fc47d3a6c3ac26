/**
 * The schedules group's handlers.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { Schedules, type ScheduleView } from "../../../triggers/Schedules.js"
import { FoundryApi } from "../api/FoundryApi.js"
import { orStoreUnavailable } from "./storeUnavailable.js"

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
      .handle("list", () => schedules.list.pipe(Effect.map((all) => all.map(flat)), orStoreUnavailable))
      .handle("pause", ({ path }) => schedules.pause(path.scheduleId).pipe(Effect.map(flat), orStoreUnavailable))
      .handle("resume", ({ path }) => schedules.resume(path.scheduleId).pipe(Effect.map(flat), orStoreUnavailable))
      .handle("trigger", ({ path }) => schedules.trigger(path.scheduleId).pipe(Effect.map(flat), orStoreUnavailable))
  }))
