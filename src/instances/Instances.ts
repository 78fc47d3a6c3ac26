/**
 * `Instances`: agent instances as managed data. Creating one, changing its context, pausing,
 * archiving, installing and uninstalling capabilities all go through here: the context is checked
 * against the agent's `context` schema, an installation's config against its capability's, secrets
 * are sealed before they reach the store, and every change is an event (which never holds a secret).
 */
import { Clock, Context, Data, Effect, Either, Layer, Option } from "effect"
import type { CompiledAgent, CompiledApp } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { instanceIdForm, isInstanceId } from "../definitions/instanceId.js"
import type { ReadableIssue } from "../definitions/readableIssues.js"
import { type AgentNotFound, agentNotFound } from "../dispatch/Dispatcher.js"
import { newId } from "../durable/ids.js"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import { CapabilityKind, InstallationRecord, type InstanceRecord, type InstanceRef, type NewInstallation } from "../durable/records.js"
import type { StoreError } from "../durable/StoreError.js"
import { EventLog } from "../events/EventLog.js"
import type { EventContent } from "../events/FoundryEvent.js"
import { createConflict } from "./createConflicts.js"
import { checkContext } from "./instanceContext.js"
import { makeInstanceEventWrites } from "./instanceEventWrites.js"
import { InstanceConflict, InstanceNotFound, invalid, type InvalidInstance, NotInstalled } from "./instanceErrors.js"
import { installedCapabilities, type InstalledCapability, type UnusableInstallation } from "./installedCapabilities.js"
import { type InstallRequest, nameClashes, prepareInstallations } from "./installationRequests.js"
import { SecretBox } from "./SecretBox.js"

/** Which capability an installation is of. */
interface CapabilityRef {
  readonly kind: CapabilityKind
  readonly capability: string
}

/** An instance to create. Without `id`, one is made; with a `provisioningKey` in use, that instance is returned. */
export interface CreateRequest {
  readonly agent: string
  readonly id?: string | undefined
  readonly provisioningKey?: string | undefined
  readonly context?: unknown
  readonly installations?: ReadonlyArray<InstallRequest> | undefined
  /** What made it when not a person through the API, e.g. `playbook:<id>`, for its event. */
  readonly by?: string | undefined
}

/** A change; absent fields stay. `installations` is the whole set wanted: those left out are uninstalled. */
export interface ChangeRequest {
  readonly context?: unknown
  readonly paused?: boolean | undefined
  readonly reason?: string | undefined
  readonly installations?: ReadonlyArray<InstallRequest> | undefined
}

/** An instance with what it has installed. */
export interface InstanceDetail {
  readonly instance: InstanceRecord
  readonly installations: ReadonlyArray<InstallationRecord>
}

type Failure = InstanceNotFound | InvalidInstance | InstanceConflict | AgentNotFound | StoreError

/** Managed instances. */
export class Instances extends Context.Tag("foundry/Instances")<Instances, {
  readonly create: (request: CreateRequest) => Effect.Effect<InstanceDetail & { readonly created: boolean }, Failure>
  readonly get: (ref: InstanceRef) => Effect.Effect<InstanceDetail, InstanceNotFound | StoreError>
  readonly change: (ref: InstanceRef, change: ChangeRequest) => Effect.Effect<InstanceDetail, Failure>
  /** Archives it: it takes no new runs again, and keeps its conversations and history. */
  /** Archives an instance; an agent's `default` instance is its own, and is paused instead (`InstanceConflict`). */
  readonly archive: (ref: InstanceRef, reason?: string) => Effect.Effect<InstanceDetail, InstanceNotFound | InstanceConflict | StoreError>
  readonly install: (ref: InstanceRef, request: InstallRequest) => Effect.Effect<InstallationRecord, Failure>
  readonly uninstall: (ref: InstanceRef, kind: CapabilityKind, id: string) => Effect.Effect<void, InstanceNotFound | InstanceConflict | NotInstalled | StoreError>
  /**
   * What the instance has installed that the build `app` offers, configs opened for a run; the
   * installations that cannot be used (their capability gone from the build, a config its schema
   * no longer accepts, secrets that cannot be opened) are listed apart.
   */
  readonly installed: (app: CompiledApp, ref: InstanceRef) => Effect.Effect<{
    readonly usable: ReadonlyArray<InstalledCapability>
    readonly unusable: ReadonlyArray<UnusableInstallation>
  }, StoreError>
}>() {}

/**
 * The status a change asks for, when it changes anything: pausing (or a new reason for a pause),
 * or resuming.
 */
const statusChange = (instance: InstanceRecord, request: ChangeRequest) => {
  if (request.paused === true && (instance.status !== "paused" || (request.reason !== undefined && request.reason !== instance.statusReason))) {
    return { status: "paused" as const, reason: request.reason ?? null, from: instance.status }
  }
  if (request.paused === false && instance.status === "paused") return { status: "active" as const, reason: null, from: instance.status }
  return undefined
}

/** An instance's installations as read, and the ones a change wants made from them. */
interface Prepared {
  readonly before: ReadonlyArray<InstallationRecord>
  readonly wanted: ReadonlyArray<NewInstallation>
}

/**
 * A change decided on a read of the instance that another change at the same moment made stale
 * (its status, an installation it was made from): nothing was written, and it is decided again.
 */
class ChangedMeanwhile extends Data.TaggedError("ChangedMeanwhile") {}

/** Whether a write found what it was made from changed since it was read. */
const changedMeanwhile = (error: unknown): error is ChangedMeanwhile => error instanceof ChangedMeanwhile

/** `Instances` over the store, the current build, the event log and the secret box. */
export const layer = Layer.effect(
  Instances,
  Effect.gen(function*() {
    const storage = yield* InstanceStorage
    const current = yield* CurrentApp
    const events = yield* EventLog
    const box = yield* SecretBox

    const { applyWithEvents, withEvents } = makeInstanceEventWrites(storage, events)

    const find = (ref: InstanceRef) =>
      storage.get(ref.agent, ref.id).pipe(
        Effect.flatMap(Option.match({
          onNone: () =>
            Effect.fail(new InstanceNotFound({
              agent: ref.agent,
              instance: ref.id,
              message: `agent "${ref.agent}" has no instance "${ref.id}"; list them with GET /api/instances?agent=${ref.agent}`
            })),
          onSome: Effect.succeed
        }))
      )

    const detail = (instance: InstanceRecord) =>
      Effect.map(storage.installations(instance), (installations): InstanceDetail => ({ instance, installations }))

    const agentOf = (app: CompiledApp, agent: string) => {
      const found = app.agents.get(agent)
      return found === undefined
        ? Effect.fail(agentNotFound(app, agent))
        : Effect.succeed(found)
    }

    /**
     * The installations of `requests` for an instance of `agent` checked and sealed, or the
     * instance refused as invalid; `kept`: what the instance keeps installed beside them.
     */
    const prepare = (
      app: CompiledApp,
      agent: CompiledAgent,
      requests: ReadonlyArray<InstallRequest>,
      path: (index: number) => string,
      installedOf?: (request: InstallRequest) => InstallationRecord | undefined,
      kept: ReadonlyArray<CapabilityRef> = []
    ) =>
      Effect.gen(function*() {
        const prepared = yield* Effect.either(prepareInstallations(box, app, requests, path, installedOf))
        const issues = [...(Either.isLeft(prepared) ? prepared.left : []), ...nameClashes(app, agent, requests, path, kept)]
        if (issues.length > 0 || Either.isLeft(prepared)) return yield* invalid("the installations are not valid", issues)
        return prepared.right
      })

    const installedEvent = (installation: NewInstallation): EventContent => ({
      type: "instance.installed",
      data: { kind: installation.kind, capability: installation.capability, config: installation.config }
    })

    const create = Effect.fn("Instances.create")(function*(request: CreateRequest) {
      const app = yield* current.get
      const agent = yield* agentOf(app, request.agent)
      const issues: Array<ReadableIssue> = []
      if (request.id !== undefined && !isInstanceId(request.id)) {
        issues.push({ path: "id", message: `expected ${instanceIdForm}` })
      }
      const context = checkContext(agent.definition.context, request.context ?? {})
      if (Either.isLeft(context)) issues.push(...context.left)
      if (issues.length > 0 || Either.isLeft(context)) return yield* invalid(`the instance of "${request.agent}" is not valid`, issues)
      const installations = yield* prepare(app, agent, request.installations ?? [], (index) => `installations[${index}]`)
      const ref = { agent: request.agent, id: request.id ?? newId("inst") }
      const provisioningKey = request.provisioningKey ?? null
      const drafts: ReadonlyArray<EventContent> = [
        {
          type: "instance.created",
          data: {
            provisioningKey,
            context: context.right,
            installations: installations.map((i) => ({ kind: i.kind, capability: i.capability })),
            ...(request.by === undefined ? {} : { by: request.by })
          }
        },
        ...installations.map(installedEvent)
      ]
      // Its events are written with it, and told only when it was made.
      const made = yield* withEvents(
        ref,
        drafts,
        (also) => storage.create({ ...ref, provisioningKey, context: context.right }, installations, also),
        (made) => made.created ? made.rows[0] ?? [] : undefined
      )
      const conflict = createConflict(ref, request, made)
      if (conflict !== undefined) return yield* conflict
      return { ...(yield* detail(made.instance)), created: made.created }
    })

    const open = (ref: InstanceRef) =>
      Effect.flatMap(find(ref), (instance) =>
        instance.status === "archived"
          ? Effect.fail(new InstanceConflict({
            agent: ref.agent,
            instance: ref.id,
            message: `instance "${ref.id}" of agent "${ref.agent}" is archived: it keeps its history and changes no more`
          }))
          : Effect.succeed(instance))

    /** The installation among `installations` of the capability `wish` is for. */
    const installedAs = <I extends CapabilityRef>(installations: ReadonlyArray<I>, wish: CapabilityRef): I | undefined =>
      installations.find((i) => i.kind === wish.kind && i.capability === wish.capability)

    /**
     * `requests` prepared over the instance's installations as stored now, with them; `adding`: the
     * instance keeps the installations `requests` do not replace (an install), not only `requests` (a change).
     */
    const preparedOver = (
      app: CompiledApp,
      agent: CompiledAgent,
      ref: InstanceRef,
      requests: ReadonlyArray<InstallRequest>,
      path: (index: number) => string,
      adding = false
    ) =>
      Effect.flatMap(storage.installations(ref), (before) => {
        const requested = (installation: CapabilityRef) => requests.some((r) => r.kind === installation.kind && r.id === installation.capability)
        const kept = adding ? before.filter((installation) => !requested(installation)) : []
        return Effect.map(
          prepare(app, agent, requests, path, (wish) => installedAs(before, { kind: wish.kind, capability: wish.id }), kept),
          (wanted) => ({ before, wanted })
        )
      })

    /**
     * `attempt` again, over a new read, while another change at the same moment replaced an
     * installation it read (a secret rotated by another admin would be written back as it was); a
     * conflict after a few times over.
     */
    const againWhileChanged = <A, E, R>(ref: InstanceRef, attempt: Effect.Effect<A, E | ChangedMeanwhile, R>) =>
      attempt.pipe(
        Effect.retry({ while: changedMeanwhile, times: 4 }),
        Effect.catchIf(changedMeanwhile, () =>
          Effect.fail(
            new InstanceConflict({
              agent: ref.agent,
              instance: ref.id,
              message: `instance "${ref.id}" ` +
                `of agent "${ref.agent}" was changed by other requests at the same moment, again and again: send the change again`
            })
          ))
      )

    /**
     * Writes the change `request` makes to `instance`, over its installations as read (`prepared`),
     * in one transaction with its events, and publishes them once it commits: all of it, or
     * nothing. `ChangedMeanwhile` when the instance, or an installation it was made from, is no
     * longer stored as read. `decided`: the status the change's status was decided on.
     */
    const writeChange = (
      ref: InstanceRef,
      instance: InstanceRecord,
      request: ChangeRequest,
      context: Readonly<Record<string, unknown>> | undefined,
      prepared: Prepared | undefined,
      decided: InstanceRecord["status"]
    ) =>
      Effect.gen(function*() {
        // Told by the change that made it: another pause (or resume) at the same moment made it first, and this one leaves it.
        const status = instance.status === decided ? statusChange(instance, request) : undefined
        const install = (prepared?.wanted ?? []).flatMap((installation) => {
          const basis = installedAs(prepared?.before ?? [], installation)
          const same = basis !== undefined && basis.secrets === installation.secrets && JSON.stringify(basis.config) === JSON.stringify(installation.config)
          return same ? [] : [{ installation, basis }]
        })
        const uninstall = prepared === undefined ? [] : prepared.before.filter((i) => installedAs(prepared.wanted, i) === undefined)
        const drafts: Array<EventContent> = [
          ...(context === undefined ? [] : [{ type: "instance.updated", data: { context } } as const]),
          ...(status?.status === "paused" ? [{ type: "instance.paused", data: { reason: status.reason } } as const] : []),
          ...(status?.status === "active" ? [{ type: "instance.resumed", data: {} } as const] : []),
          ...install.map(({ installation }) => installedEvent(installation)),
          ...uninstall.map((gone): EventContent => ({ type: "instance.uninstalled", data: { kind: gone.kind, capability: gone.capability } }))
        ]
        if (drafts.length === 0) return
        if (!(yield* applyWithEvents(ref, { context, status, install, uninstall }, drafts))) return yield* new ChangedMeanwhile()
      })

    const change = Effect.fn("Instances.change")(function*(ref: InstanceRef, request: ChangeRequest) {
      const app = yield* current.get
      const agent = yield* agentOf(app, ref.agent)
      const instance = yield* open(ref)
      const checked = request.context === undefined ? undefined : checkContext(agent.definition.context, request.context)
      if (checked !== undefined && Either.isLeft(checked)) return yield* invalid(`the context of "${ref.id}" is not valid`, checked.left)
      const context = checked?.right
      const installations = request.installations
      const path = (index: number) => `installations[${index}]`
      const over = () => installations === undefined ? Effect.succeed(undefined) : preparedOver(app, agent, ref, installations, path)
      // Prepared before anything is written: a change with installations that are not valid changes nothing.
      let read: { readonly instance: InstanceRecord; readonly prepared: Prepared | undefined } | undefined = { instance, prepared: yield* over() }
      yield* againWhileChanged(ref, Effect.suspend(() => {
        // The first time over what was checked above; again, over a new read.
        const first = read
        read = undefined
        const reading = first === undefined
          ? Effect.zipWith(open(ref), Effect.suspend(over), (instance, prepared) => ({ instance, prepared }))
          : Effect.succeed(first)
        return Effect.flatMap(reading, ({ instance: current, prepared }) => writeChange(ref, current, request, context, prepared, instance.status))
      }))
      return yield* Effect.flatMap(find(ref), detail)
    })

    return Instances.of({
      create,
      get: (ref) => Effect.flatMap(find(ref), detail),
      change,
      archive: Effect.fn("Instances.archive")(function*(ref: InstanceRef, reason?: string) {
        const instance = yield* find(ref)
        // Archived for good, it would leave the agent itself taking no runs (a run without an
        // instance, its /v1 model, its schedules), while it is still offered everywhere.
        if (ref.id === "default" && instance.status !== "archived") {
          return yield* new InstanceConflict({
            agent: ref.agent,
            instance: ref.id,
            message: `the default instance of agent "${ref.agent}" is the agent's own (runs that name no instance, its /v1 model, its schedules) ` +
              `and cannot be archived: pause it instead (PATCH /api/instances/default?agent=${ref.agent} {"paused": true})`
          })
        }
        // Told once, by the archive that stuck, with it: another at the same moment is refused by
        // its guard (the instance archived), and writes and tells nothing. From whatever status it
        // has by then: a resume at the same moment does not undo the archive.
        if (instance.status !== "archived") {
          yield* applyWithEvents(ref, { status: { status: "archived", reason: reason ?? null }, install: [], uninstall: [] }, [
            { type: "instance.archived", data: { reason: reason ?? null } }
          ])
        }
        return yield* Effect.flatMap(find(ref), detail)
      }),
      install: Effect.fn("Instances.install")(function*(ref: InstanceRef, request: InstallRequest) {
        const app = yield* current.get
        const agent = yield* agentOf(app, ref.agent)
        return yield* againWhileChanged(ref, Effect.gen(function*() {
          yield* open(ref)
          const { before, wanted: [installation] } = yield* preparedOver(app, agent, ref, [request], () => "", true)
          if (installation === undefined) return yield* Effect.dieMessage("prepare returned no installation for one request")
          const basis = installedAs(before, installation)
          // Refused when the instance was archived meanwhile (read again, it answers so), or the installation changed.
          if (!(yield* applyWithEvents(ref, { install: [{ installation, basis }], uninstall: [] }, [installedEvent(installation)]))) {
            return yield* new ChangedMeanwhile()
          }
          const stored = installedAs(yield* storage.installations(ref), installation)
          const now = yield* Clock.currentTimeMillis
          // Removed by another request since it committed: answered as it was written.
          return stored ?? new InstallationRecord({ agent: ref.agent, instanceId: ref.id, ...installation, createdAt: basis?.createdAt ?? now, updatedAt: now })
        }))
      }),
      uninstall: Effect.fn("Instances.uninstall")(function*(ref: InstanceRef, kind: CapabilityKind, id: string) {
        yield* againWhileChanged(ref, Effect.gen(function*() {
          yield* open(ref)
          const gone = installedAs(yield* storage.installations(ref), { kind, capability: id })
          if (gone === undefined) {
            return yield* new NotInstalled({
              agent: ref.agent,
              instance: ref.id,
              message: `instance "${ref.id}" of agent "${ref.agent}" has no ${kind} "${id}" installed; ` +
                `GET /api/instances/${ref.id}?agent=${ref.agent} lists what it has`
            })
          }
          // Refused when the instance was archived meanwhile, or the installation changed or went: read again.
          if (!(yield* applyWithEvents(ref, { install: [], uninstall: [gone] }, [{ type: "instance.uninstalled", data: { kind, capability: id } }]))) {
            return yield* new ChangedMeanwhile()
          }
        }))
      }),
      installed: (app, ref) => Effect.flatMap(storage.installations(ref), (installations) => installedCapabilities(box, app, installations))
    })
  })
)
