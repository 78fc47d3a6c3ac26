/**
 * Schedules: every `schedules/*.ts` route is a durable activation in the store (id
 * `schedule:<route id>`), armed from the store on boot and driven by Effect's `Clock`. One fiber
 * sleeps until the soonest activation is due, however many there are. A firing is a run whose
 * `source` names the schedule and the scheduled time; after downtime, `misfire` decides what
 * missed firings become, and `overlap` what happens while the last firing's run still goes. A
 * firing is missed when it comes later than the config's `schedules.misfireGrace` after its time.
 */
import { Cause, Clock, Context, Duration, Effect, Layer, Option, Queue, Schema } from "effect"
import { type CompiledApp, leftOutOf } from "../compiler/CompiledApp.js"
import { isSourcesBuild } from "../compiler/projectRelease.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import type { ScheduleTiming } from "../definitions/defineSchedule.js"
import { latestFirings, nextFireAfter } from "../definitions/scheduleTiming.js"
import { Singletons } from "../dispatch/Singletons.js"
import { Dispatcher } from "../dispatch/Dispatcher.js"
import {
  type ActivationKind,
  type ActivationRecord,
  type ActivationSpec,
  ActivationStorage,
  type ActivationUpdate
} from "../durable/ActivationStorage.js"
import { finalStatuses } from "../durable/records.js"
import { Store } from "../durable/Store.js"
import type { StoreError } from "../durable/StoreError.js"
import { firingTimes } from "./firingTimes.js"

/** A schedule as the API shows it. */
export interface ScheduleView {
  readonly id: string
  readonly agent: string
  readonly instance: string
  readonly timing: ScheduleTiming
  readonly overlap: string
  readonly misfire: string
  readonly status: "active" | "paused" | "done"
  /** Why a `done` schedule will not fire again; `null` while it is not done. */
  readonly reason: string | null
  readonly nextFire: number | null
  readonly lastFire: number | null
  readonly lastRunId: string | null
}

/** No schedule has that id. */
export class ScheduleNotFound extends Schema.TaggedError<ScheduleNotFound>()("ScheduleNotFound", {
  schedule: Schema.String,
  message: Schema.String
}) {}

/**
 * A firing asked for by a person (`trigger`) that started no run: the last one still runs under
 * `overlap: "skip"`, or the instance is paused or archived, or the agent is gone. Said, rather
 * than answered as if it had fired.
 */
export class ScheduleFiringSkipped extends Schema.TaggedError<ScheduleFiringSkipped>()("ScheduleFiringSkipped", {
  schedule: Schema.String,
  message: Schema.String
}) {}

/** A schedule that is done (an `at` whose one time has come or passed) fires no more: pausing or resuming it changes nothing. */
export class ScheduleDone extends Schema.TaggedError<ScheduleDone>()("ScheduleDone", {
  schedule: Schema.String,
  message: Schema.String
}) {}

/** A firing's outcome: the run it started, or why it started none. */
type Firing = { readonly _tag: "Started"; readonly runId: string } | { readonly _tag: "Skipped"; readonly reason: string }

/** The schedules of the running project. */
export class Schedules extends Context.Tag("foundry/Schedules")<Schedules, {
  /**
   * Brings the activations in line with the build's schedule routes (new, edited, deleted); those
   * the build left out (`CompiledApp.leftOut`) keep their state and do not fire until served again.
   */
  readonly sync: (app: CompiledApp) => Effect.Effect<void, StoreError>
  readonly list: Effect.Effect<ReadonlyArray<ScheduleView>, StoreError>
  readonly pause: (id: string) => Effect.Effect<ScheduleView, ScheduleNotFound | ScheduleDone | StoreError>
  readonly resume: (id: string) => Effect.Effect<ScheduleView, ScheduleNotFound | ScheduleDone | StoreError>
  /** Fires the schedule now, whatever its timing; its next firing stays as it was. */
  readonly trigger: (id: string) => Effect.Effect<ScheduleView, ScheduleNotFound | ScheduleFiringSkipped | StoreError>
}>() {}

/** The kinds of activation the schedules list: schedule routes, and timers agents set for their own instance. */
const activationKinds: ReadonlyArray<ActivationKind> = ["schedule", "agent"]

/** Due activations read at a time. */
const duePage = 100
/** Catch-up runs at most this many missed firings. */
const catchUpLimit = 10
/** The longest the timer sleeps before it looks again. */
const maxSleep = Duration.hours(1)
/**
 * How long an agent's timer that is done (fired for good) is kept, listed with why it fires no
 * more: the run it started stays, and names it. Kept for ever, with every instance sleeping once a
 * day they would pile up by the million.
 */
const doneTimersKept = Duration.days(1)
/** How often done timers past `doneTimersKept` are looked for. */
const pruneEvery = Duration.hours(1)

const viewOf = (activation: ActivationRecord): ScheduleView => {
  const spec = activation.spec
  return {
    id: spec.schedule,
    agent: spec.agent,
    instance: spec.instance,
    timing: spec.timing,
    overlap: spec.overlap,
    misfire: spec.misfire,
    status: activation.status,
    reason: activation.status === "done" ? doneReason(activation) : null,
    nextFire: activation.nextFire,
    lastFire: activation.lastFire,
    lastRunId: activation.lastRunId
  }
}

/**
 * Why a schedule fires no more. Only an `at` ends: it came to its one time, or that time had
 * passed before it could fire (armed or resumed after it, or missed under `misfire: "skip"`).
 */
const doneReason = (activation: ActivationRecord): string => {
  const timing = activation.spec.timing
  if (!("at" in timing)) return "its timing has no firing left"
  const time = Date.parse(timing.at)
  if (activation.lastFire === time) return `its one time, ${timing.at}, has come`
  // Only a firing asked for by a person (Run now) comes after the time: catch-ups record the time they stand for.
  if (activation.lastFire !== null && activation.lastFire > time) {
    return `its one time, ${timing.at}, has passed; Run now started its last run, at ${new Date(activation.lastFire).toISOString()}`
  }
  return `its one time, ${timing.at}, had passed when it was armed or resumed, or was missed under misfire "skip": it never fired`
}

/** The schedules over the store and the dispatcher. */
export const SchedulesLive = Layer.scoped(
  Schedules,
  Effect.gen(function*() {
    const store = yield* Store
    const activations = yield* ActivationStorage
    const dispatcher = yield* Dispatcher
    // Woken by every change to an activation: a schedule synced or paused, a timer an agent armed.
    const changes = yield* activations.changes
    const current = yield* CurrentApp
    const singletons = yield* Singletons
    // Another process may change activations (a reload, a timer an agent armed there): look again soon.
    const longestSleep = Option.match(singletons.lookEvery, { onNone: () => maxSleep, onSome: (every) => Duration.min(every, maxSleep) })

    const activationOf = (id: string) =>
      Effect.flatMap(activations.get(`schedule:${id}`), (found) => Option.isSome(found) ? Effect.succeed(found) : activations.get(id)).pipe(
        Effect.flatMap(Option.match({
          onNone: () => Effect.fail(new ScheduleNotFound({ schedule: id, message: `there is no schedule "${id}"` })),
          onSome: Effect.succeed
        }))
      )

    /** Starts one firing's run, or says why none started (`overlap: "skip"`, a paused instance, a gone agent). */
    const start = (spec: ActivationSpec, activation: ActivationRecord, scheduledFor: number, overlap = spec.overlap, catchingUp = false) =>
      Effect.gen(function*() {
        const last = activation.lastRunId === null ? Option.none() : yield* store.getRun(activation.lastRunId)
        const running = Option.isSome(last) && !finalStatuses.has(last.value.status)
        // `queue` keeps one firing waiting: firings faster than their runs would pile up without end.
        if (overlap === "queue" && !catchingUp && Option.isSome(last) && last.value.status === "queued") {
          const skipped: Firing = { _tag: "Skipped", reason: `its last firing's run ${last.value.id} is still queued, and its overlap is "queue": one firing waits at most` }
          return skipped
        }
        if (running && overlap === "skip" && Option.isSome(last)) {
          const skipped: Firing = {
            _tag: "Skipped",
            reason: `its last run ${last.value.id} is still ${last.value.status}, and its overlap is "skip"`
          }
          return skipped
        }
        return yield* dispatcher.submit({
          agent: spec.agent,
          instance: spec.instance,
          message: spec.message,
          // A sleeping conversation is woken in place; `queue` puts the firing behind the running one.
          ...(spec.conversation !== undefined
            ? { conversation: spec.conversation }
            : running && overlap === "queue" && Option.isSome(last)
            ? { conversation: last.value.conversationId }
            : {}),
          source: { schedule: spec.schedule, scheduledFor: new Date(scheduledFor).toISOString() },
          // One run per firing, even when the timer moves to another process before it saved the firing.
          idempotencyKey: `${activation.id}@${scheduledFor}`
        }).pipe(
          Effect.map((run): Firing => ({ _tag: "Started", runId: run.id })),
          Effect.catchTags({
            AgentNotFound: (error) => Effect.succeed<Firing>({ _tag: "Skipped", reason: error.message }),
            ConversationNotFound: (error) => Effect.succeed<Firing>({ _tag: "Skipped", reason: error.message }),
            // A paused or archived instance takes no firings; the timer goes on for when it resumes.
            InstanceUnavailable: (error) =>
              Effect.as(Effect.logInfo(`schedule ${spec.schedule}: firing skipped, ${error.message}`), { _tag: "Skipped", reason: error.message } satisfies Firing)
          })
        )
      })

    // When this process's timer began (it runs in one process of a cluster at a time): a firing
    // due before then fell due while no timer ran.
    let timerStartedAt = Number.POSITIVE_INFINITY
    const fire = (activation: ActivationRecord, now: number) =>
      Effect.gen(function*() {
        const spec = activation.spec
        const scheduled = activation.nextFire
        if (scheduled === null) return
        // The latest of the firings due by now (the one scheduled first, and those missed since).
        const missed = latestFirings(spec.timing, scheduled, now, catchUpLimit)
        const { misfireGrace } = (yield* current.get).table.config.schedules
        const graceMillis = Duration.toMillis(Duration.decode(misfireGrace))
        const times = firingTimes(spec.misfire, { scheduled, due: missed, now, graceMillis, timerStartedAt }, catchUpLimit)
        let lastRunId = activation.lastRunId
        // Caught-up firings go as one: `overlap` decides, against the run still going from before,
        // whether they start at all, and those that start queue behind each other rather than skip
        // one another. So when the first starts no run, none of the others does.
        for (const [index, time] of times.entries()) {
          const firing = yield* start(spec, { ...activation, lastRunId }, time, index === 0 ? spec.overlap : "queue", index > 0)
          if (firing._tag === "Skipped") break
          lastRunId = firing.runId
        }
        const lastFire = times[times.length - 1] ?? activation.lastFire
        const nextFire = nextFireAfter(spec.timing, Math.max(now, missed[missed.length - 1] ?? scheduled), scheduled)
        yield* activations.fired(activation.id, { lastFire, lastRunId, next: { readAt: activation.updatedAt, nextFire } })
      })

    // Schedules a build of the project's sound part left out (`foundry dev` while their files, or
    // their agent's, do not build): their state is kept, and they do not fire until served again.
    const heldBy = (app: CompiledApp): ReadonlySet<string> =>
      new Set(leftOutOf(app, "schedule").map((route) => `schedule:${route.id}`))
    let held = heldBy(yield* current.get)

    // A firing that failed (its run could not be stored) is tried again later and later, up to once
    // a minute, by activation: the others due go on meanwhile.
    const failing = new Map<string, { readonly tries: number; readonly retryAt: number }>()
    const fireAlone = (activation: ActivationRecord, now: number) =>
      fire(activation, now).pipe(
        Effect.tap(() => Effect.sync(() => failing.delete(activation.id))),
        Effect.catchAllCause((cause) => {
          if (Cause.isInterruptedOnly(cause)) return Effect.failCause(cause)
          const tries = (failing.get(activation.id)?.tries ?? 0) + 1
          const wait = Math.min(60_000, 1_000 * 2 ** (tries - 1))
          failing.set(activation.id, { tries, retryAt: now + wait })
          return Effect.logWarning(
            `schedule ${activation.spec.schedule}: its firing due at ${new Date(activation.nextFire ?? now).toISOString()} failed ` +
              `(tried ${tries} ${tries === 1 ? "time" : "times"}); tried again in ${Duration.format(Duration.millis(wait))}`,
            cause
          )
        })
      )

    let prunedAt = Number.NEGATIVE_INFINITY
    // The timer: fire what is due, then sleep until the soonest activation (or a change).
    const timer = Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      // An agent's timer waits while its agent is not in the build (a file being renamed, a deploy
      // without it): fired now, its wake-up would be lost for good.
      const agents = (yield* current.get).agents
      const fires = (activation: ActivationRecord) =>
        !held.has(activation.id) && (activation.kind === "schedule" || agents.has(activation.spec.agent)) &&
        (failing.get(activation.id)?.retryAt ?? 0) <= now
      // Every due activation, page by page: those that wait (held, or their agent gone) do not keep
      // the ones after them from firing.
      let waiting = false
      const seen = new Set<string>()
      let after: { readonly nextFire: number; readonly id: string } | undefined
      while (true) {
        const due = yield* activations.due(now, duePage, after)
        for (const activation of due) {
          seen.add(activation.id)
          if (fires(activation)) yield* fireAlone(activation, now)
          if (!fires(activation)) waiting = true
        }
        const last = due[due.length - 1]
        if (due.length < duePage || last === undefined) break
        after = { nextFire: last.nextFire ?? now, id: last.id }
      }
      // After the firings, which it must not hold up: a prune that fails is tried again next time.
      if (now - prunedAt >= Duration.toMillis(pruneEvery)) {
        yield* activations.pruneDone(now - Duration.toMillis(doneTimersKept)).pipe(
          Effect.tap(() => Effect.sync(() => prunedAt = now)),
          Effect.catchAll((error) => Effect.logWarning("pruning the agents' done timers failed", error))
        )
      }
      // Until the soonest of: the next activation due, a failed firing's next try, and, while some
      // wait, a look again a minute on (a build wakes the timer sooner: it may bring them back).
      let wake = (yield* activations.nextFireAfter(now)) ?? Number.POSITIVE_INFINITY
      for (const [id, { retryAt }] of failing) {
        // No longer due (removed, paused, or fired by another process): nothing to try again.
        if (!seen.has(id)) failing.delete(id)
        else wake = Math.min(wake, retryAt)
      }
      if (waiting) wake = Math.min(wake, now + 60_000)
      yield* Effect.race(Effect.sleep(Duration.min(Duration.millis(Math.max(0, wake - now)), longestSleep)), Queue.take(changes))
    }).pipe(
      Effect.catchAllCause((cause) => Effect.zipRight(Effect.logWarning("schedule timer failed", cause), Effect.sleep("1 second"))),
      Effect.forever
    )

    const sync = Effect.fn("Schedules.sync")(function*(app: CompiledApp) {
      const now = yield* Clock.currentTimeMillis
      held = heldBy(app)
      // The timer looks again: a build may bring back what waits (a held schedule, an agent's timers).
      yield* activations.changed
      const stored = new Map((yield* activations.list("schedule")).map((activation) => [activation.id, activation]))
      const saves: Array<ActivationUpdate> = []
      for (const route of app.table.schedules) {
        const id = `schedule:${route.id}`
        const definition = route.definition
        const spec: ActivationSpec = {
          schedule: route.id,
          agent: app.table.idOf(definition.agent) ?? "",
          instance: definition.instance,
          message: definition.message,
          timing: definition.timing,
          overlap: definition.overlap,
          misfire: definition.misfire
        }
        const existing = stored.get(id)
        if (existing !== undefined && JSON.stringify(existing.spec) === JSON.stringify(spec)) continue
        // An `at` already past has nothing to wait for: it is done, not active with no next firing.
        const nextFire = nextFireAfter(spec.timing, now, now)
        // A paused schedule stays paused, and its last firing stays, as stored when this is written.
        saves.push({ id, kind: "schedule", spec, status: nextFire === null ? "done" : "active", nextFire })
      }
      const wanted = new Set(app.table.schedules.map((route) => `schedule:${route.id}`))
      const removes = [...stored.keys()].filter((id) => !wanted.has(id) && !held.has(id))
      // A release's, written only while the store's current release is it (or none was deployed): a
      // runner that syncs after another's later deploy (or as it starts, on the release it read before
      // that deploy) would bring the older schedules back until the next deploy. A build of sources
      // (`foundry dev`) writes its own, as it serves them, whatever was deployed to its store.
      const written = yield* activations.write({ saves, removes, ...(isSourcesBuild(app.release) ? {} : { whileCurrent: app.release }) })
      if (!written) {
        yield* Effect.logInfo(`the schedules of release ${app.release} are not written: another release is the store's current one, and its schedules are`)
      }
    })

    // Synced before the timer starts: it would fire what the store had before (a schedule this
    // build removed or changed) first.
    yield* sync(yield* current.get)
    yield* singletons.run("foundry/schedules", Effect.zipRight(Effect.map(Clock.currentTimeMillis, (now) => {
      timerStartedAt = now
    }), timer))

    const view = (activation: ActivationRecord) => Effect.succeed(viewOf(activation))

    const setStatus = (id: string, status: "active" | "paused") =>
      Effect.gen(function*() {
        const activation = yield* activationOf(id)
        if (activation.status === "done") {
          return yield* new ScheduleDone({
            schedule: id,
            message: `schedule "${id}" is done (${doneReason(activation)}): it fires no more, so there is nothing to ${status === "active" ? "resume" : "pause"}; Run now still starts a run`
          })
        }
        const now = yield* Clock.currentTimeMillis
        // Resuming re-arms from now: what was missed while paused is not made up, so an `at` whose
        // time passed meanwhile is done.
        const nextFire = status === "active" ? nextFireAfter(activation.spec.timing, now, now) : activation.nextFire
        const done = status === "active" && nextFire === null
        yield* activations.setStatus(activation.id, done ? "done" : status, nextFire)
        return yield* view(yield* activationOf(id))
      })

    return Schedules.of({
      sync,
      list: Effect.flatMap(
        Effect.forEach(activationKinds, (kind) => activations.list(kind)),
        (all) => Effect.forEach(all.flat(), view)
      ),
      pause: (id) => setStatus(id, "paused"),
      resume: (id) => setStatus(id, "active"),
      trigger: (id) =>
        Effect.gen(function*() {
          const activation = yield* activationOf(id)
          const now = yield* Clock.currentTimeMillis
          const firing = yield* start(activation.spec, activation, now)
          if (firing._tag === "Skipped") {
            return yield* new ScheduleFiringSkipped({ schedule: id, message: `schedule "${id}" did not fire: ${firing.reason}` })
          }
          yield* activations.fired(activation.id, { lastFire: now, lastRunId: firing.runId })
          return yield* view(yield* activationOf(id))
        })
    })
  })
)
