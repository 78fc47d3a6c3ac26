/**
 * The tools an agent can opt into for its own time (`timers` in `defineAgent`): `foundry_schedule`
 * (one-shot or recurring work for its instance), `foundry_schedules` (list, pause, resume, cancel
 * its own) and `foundry_sleep` (wake this conversation later with a message). Timers are
 * activations in the store, owned by the agent's instance: an agent never sees or touches another
 * instance's. The config's `timers` limits keep a model from flooding the scheduler.
 */
import { createHash } from "node:crypto"
import { Clock, Duration, Effect, Option, Schema } from "effect"
import { ScheduleInput, SchedulesInput, SleepInput, type TimerTool } from "../compiler/timerTools.js"
import type { ConfigDefinition } from "../definitions/defineConfig.js"
import type { ScheduleTiming } from "../definitions/defineSchedule.js"
import { nextFireAfter, ScheduleTimingSchema, timingProblem } from "../definitions/scheduleTiming.js"
import { type ActivationRecord, ActivationStorage, type ActivationUpdate } from "../durable/ActivationStorage.js"
import type { RunRecord } from "../durable/records.js"
import { durationText } from "../definitions/configFields.js"
import type { TimerChange } from "../journal/journalRecords.js"
import { failedOutcome, type ToolOutcome } from "./executeTool.js"

const durationOf = (value: string): Option.Option<number> => Option.map(Duration.decodeUnknown(value), Duration.toMillis)

// The latest time a timer may be armed for: JavaScript's dates end in the year 275760.
const latestTime = 8.64e15

/** The ISO time `ms` after `now`, or why there is none (`what` names the field). */
const timeAfter = (what: string, value: string, now: number): string | { readonly at: string } => {
  const ms = durationOf(value)
  if (Option.isNone(ms)) return `${what} "${value}" is not a duration: give it with a unit, e.g. "30 minutes" or "2 days"`
  const at = now + ms.value
  return Number.isFinite(at) && at <= latestTime ? { at: new Date(at).toISOString() } : `${what} "${value}" is further ahead than any date`
}

/** When a request to schedule fires, or why it cannot. */
const timingOf = (input: typeof ScheduleInput.Type, now: number): ScheduleTiming | string => {
  if (input.cron !== undefined) return input.timezone === undefined ? { cron: input.cron } : { cron: input.cron, timezone: input.timezone }
  if (input.every !== undefined) return Option.isSome(durationOf(input.every)) ? { every: input.every } : `every "${input.every}" is not a duration`
  if (input.in !== undefined) {
    return timeAfter("in", input.in, now)
  }
  if (input.at !== undefined) return Number.isNaN(Date.parse(input.at)) ? `at "${input.at}" is not an ISO time` : { at: input.at }
  return "give one of at, in, every or cron"
}

/** The config's limits on agent timers. */
export type TimerLimits = ConfigDefinition["timers"]

/**
 * Why a recurring timing fires too often for `minInterval`, judged by its next two firings (an
 * `every`, or a cron such as every 10 seconds), or `undefined` when it does not.
 */
const tooFrequent = (timing: ScheduleTiming, now: number, limits: TimerLimits): string | undefined => {
  if ("at" in timing) return undefined
  const first = nextFireAfter(timing, now, now)
  const second = first === null ? null : nextFireAfter(timing, first, now)
  const minimum = Duration.toMillis(Duration.decode(limits.minInterval))
  if (first === null || second === null || second - first >= minimum) return undefined
  const gap = Duration.format(Duration.millis(second - first))
  return `refused: this timer would fire every ${gap}, more often than allowed ` +
    `(timers.minInterval: ${durationText(limits.minInterval)} in the project's config); choose a longer interval`
}

/** Why this instance may not have another active timer, or `undefined` when it may. */
const tooMany = (active: number, limits: TimerLimits): string | undefined =>
  active < limits.maxPendingPerInstance
    ? undefined
    : `refused: this instance already has ${active} active timers, the most it may have ` +
      `(timers.maxPendingPerInstance: ${limits.maxPendingPerInstance} in the project's config); cancel one first`

/** When a timer fires next, as the model reads it; `null` for one that will not. */
const fireTime = (at: number | null): string | null => at === null ? null : new Date(at).toISOString()

const describe = (activation: ActivationRecord) => ({
  id: activation.id,
  status: activation.status,
  timing: activation.spec.timing,
  message: activation.spec.message,
  nextFire: fireTime(activation.nextFire)
})

/**
 * The id of the timer that call `callId` of run `runId` arms: the same every time the call runs
 * (after a crash, or a step the store did not take, it runs again), so that its answer names the
 * same timer.
 */
const timerIdOf = (runId: string, callId: string): string =>
  `agent:tmr_${createHash("sha256").update(`${runId}\n${callId}`).digest("hex").slice(0, 20)}`

/**
 * Timer `id` of `run`'s agent and instance, active until `nextFire`: it tells the agent `message`
 * in a new conversation, or in `conversation` (a sleep) when given.
 */
export const agentTimer = (
  run: RunRecord,
  id: string,
  timing: ScheduleTiming,
  message: string,
  nextFire: number,
  conversation?: string
): ActivationUpdate => ({
  id,
  kind: "agent",
  spec: {
    schedule: id,
    agent: run.agent,
    instance: run.instanceId,
    message,
    timing,
    overlap: "allow",
    misfire: "run-once",
    ...(conversation === undefined ? {} : { conversation })
  },
  status: "active",
  nextFire
})

/** A timer a call armed: its id, and when it fires next (ISO). */
export interface ArmedTimer {
  readonly id: string
  readonly firesAt: string
}

/**
 * A timer tool call's answer to the model, the timer it arms, if it arms one (a list, pause or
 * cancel arms none), and its change to the instance's timers, if it makes one: nothing is stored
 * here, the change goes with the step that stores the answer (`StepBuffer.timer`).
 */
export interface TimerCall {
  readonly outcome: ToolOutcome
  readonly armed: ArmedTimer | undefined
  readonly change: TimerChange | undefined
}

/**
 * Runs timer tool call `callId` for `run` within the config's `limits`, as the instance's timers
 * are stored now; the result goes back to the model.
 */
export const runTimerTool = Effect.fn("engine.runTimerTool")(function*(
  which: TimerTool,
  raw: unknown,
  run: RunRecord,
  callId: string,
  limits: TimerLimits
) {
  const activations = yield* ActivationStorage
  const now = yield* Clock.currentTimeMillis
  const refused = (error: string): TimerCall => ({ outcome: failedOutcome(raw, error), armed: undefined, change: undefined })
  const done = (output: unknown, change?: TimerChange, armed?: ArmedTimer): TimerCall => ({
    outcome: { _tag: "Succeeded", input: raw, output, content: JSON.stringify(output) },
    armed,
    change
  })
  /** Timer `id` armed to fire at `nextFire`; none when it fires no more. */
  const armedAt = (id: string, nextFire: number | null): ArmedTimer | undefined =>
    nextFire === null ? undefined : { id, firesAt: new Date(nextFire).toISOString() }
  // Only the instance's own, read by its columns: an instance never sees another's timers, and a
  // call does not read every instance's (many, with every instance sleeping once a day).
  const mine = activations.listFor("agent", run.agent, run.instanceId)
  /** The instance's active timers, but for `except`. */
  const activeTimers = (except?: string) =>
    Effect.map(mine, (all) => all.filter((a) => a.status === "active" && a.id !== except).length)
  const arm = (timing: ScheduleTiming, message: string, conversation?: string) =>
    Effect.gen(function*() {
      const nextFire = nextFireAfter(timing, now, now)
      if (nextFire === null) {
        const asked = "at" in timing ? `${timing.at} is` : "that time is"
        return refused(`${asked} in the past (it is ${new Date(now).toISOString()} now): give a time after now`)
      }
      const id = timerIdOf(run.id, callId)
      // A timer of this call's own id is not one more (Foundry before `82ba693` stored it before the call's answer).
      const refusal = tooFrequent(timing, now, limits) ?? tooMany(yield* activeTimers(id), limits)
      if (refusal !== undefined) return refused(refusal)
      const activation = agentTimer(run, id, timing, message, nextFire, conversation)
      return done({ id, nextFire: fireTime(nextFire) }, { _tag: "Save", activation }, armedAt(id, nextFire))
    })

  switch (which) {
    case "schedule": {
      const input = Schema.decodeUnknownOption(ScheduleInput)(raw)
      if (Option.isNone(input)) return refused("foundry_schedule needs a message and one of at, in, every or cron")
      const timing = timingOf(input.value, now)
      if (typeof timing === "string") return refused(timing)
      // The same rules as a schedule route's timing, so an agent cannot arm a timer that never fires.
      const problem = timingProblem(timing)
      return problem === undefined ? yield* arm(timing, input.value.message) : refused(`${problem.problem}; ${problem.fix}`)
    }
    case "sleep": {
      const input = Schema.decodeUnknownOption(SleepInput)(raw)
      if (Option.isNone(input)) return refused("foundry_sleep needs a message and until or for")
      const { for: duration, message, until } = input.value
      const wake = duration !== undefined
        ? timeAfter("for", duration, now)
        : until === undefined
        ? "foundry_sleep needs until (an ISO time) or for (a duration)"
        : Number.isNaN(Date.parse(until))
        ? `until "${until}" is not an ISO time, e.g. "2026-07-01T09:00:00Z"`
        : { at: new Date(Date.parse(until)).toISOString() }
      if (typeof wake === "string") return refused(wake)
      return yield* arm(wake, message, run.conversationId)
    }
    case "schedules": {
      const input = Schema.decodeUnknownOption(SchedulesInput)(raw)
      if (Option.isNone(input)) return refused("foundry_schedules needs an action: list, pause, resume or cancel")
      const timers = yield* mine
      if (input.value.action === "list") return done(timers.map(describe))
      const target = timers.find((a) => a.id === input.value.id)
      if (target === undefined) {
        return refused(input.value.id === undefined
          ? `${input.value.action} needs the id of one of your schedules (action "list" shows them)`
          : `you have no schedule "${input.value.id}"`)
      }
      if (input.value.action === "cancel") return done({ id: target.id, cancelled: true }, { _tag: "Remove", id: target.id })
      if (target.status === "done") {
        return refused(`your schedule "${target.id}" is done: its one time has passed and it fires no more, so there is nothing to ${input.value.action}; cancel it, or set a new one`)
      }
      const status = input.value.action === "pause" ? "paused" : "active"
      // Resuming makes a timer active again: pausing must not be a way around the limit.
      const refusal = status === "active" && target.status === "paused" ? tooMany(yield* activeTimers(), limits) : undefined
      if (refusal !== undefined) return refused(refusal)
      const timing = Schema.decodeUnknownOption(ScheduleTimingSchema)(target.spec.timing)
      const nextFire = status === "active" && Option.isSome(timing) ? nextFireAfter(timing.value, now, now) : target.nextFire
      const change: TimerChange = { _tag: "SetStatus", id: target.id, status: status === "active" && nextFire === null ? "done" : status, nextFire }
      // Resumed, the timer is armed again until its next time.
      return done({ id: target.id, status }, change, status === "active" ? armedAt(target.id, nextFire) : undefined)
    }
  }
})
