/**
 * `/api/schedules`: the project's schedules with their next and last firing; pause, resume, trigger.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import { ScheduleDone, ScheduleFiringSkipped, ScheduleNotFound } from "../../../triggers/Schedules.js"

/** A schedule as the API shows it. */
export const ScheduleView = Schema.Struct({
  id: Schema.String,
  agent: Schema.String,
  instance: Schema.String,
  timing: Schema.Record({ key: Schema.String, value: Schema.String }),
  overlap: Schema.String,
  misfire: Schema.String,
  status: Schema.Literal("active", "paused", "done"),
  /** Why a `done` schedule will not fire again; `null` while it is not done. */
  reason: Schema.NullOr(Schema.String),
  nextFire: Schema.NullOr(Schema.Number),
  lastFire: Schema.NullOr(Schema.Number),
  lastRunId: Schema.NullOr(Schema.String)
})

const SchedulePath = Schema.Struct({ scheduleId: Schema.String })

/** The schedules group. */
export class SchedulesGroup extends HttpApiGroup.make("schedules")
  .add(HttpApiEndpoint.get("list", "/api/schedules").addSuccess(Schema.Array(ScheduleView)))
  .add(
    HttpApiEndpoint.post("pause", "/api/schedules/:scheduleId/pause").setPath(SchedulePath).addSuccess(ScheduleView)
      .addError(ScheduleNotFound, { status: 404 })
      .addError(ScheduleDone, { status: 409 })
  )
  .add(
    HttpApiEndpoint.post("resume", "/api/schedules/:scheduleId/resume").setPath(SchedulePath).addSuccess(ScheduleView)
      .addError(ScheduleNotFound, { status: 404 })
      .addError(ScheduleDone, { status: 409 })
  )
  .add(
    HttpApiEndpoint.post("trigger", "/api/schedules/:scheduleId/trigger").setPath(SchedulePath).addSuccess(ScheduleView)
      .addError(ScheduleNotFound, { status: 404 })
      .addError(ScheduleFiringSkipped, { status: 409 })
  )
{}
