/**
 * How runs get in: a submission checked (its agent, its instance, its conversation), queued in one
 * transaction and put in its conversation's lane here, or handed to `wake` where runs execute
 * elsewhere (the cluster's runner that owns the conversation). Child runs (subagent calls,
 * spawns) come in the same way, through `starter`.
 */
import { type Context, Effect, Option } from "effect"
import type { CurrentApp } from "../compiler/CurrentApp.js"
import { newId } from "../durable/ids.js"
import type { RunRecord } from "../durable/records.js"
import type { Store } from "../durable/Store.js"
import { entrySpan } from "../engine/entrySpan.js"
import { RunStarter } from "../engine/RunStarter.js"
import type { Lease } from "../journal/journalRecords.js"
import type { RunJournal, SubmitOptions } from "../journal/RunJournal.js"
import { eventOf } from "../journal/trace.js"
import type { Releases } from "../release/Releases.js"
import type { ModelResolver } from "../models/Model.js"
import { clientHistory, type CutToolResult } from "./clientHistory.js"
import { agentNotFound, ConversationNotFound, type RunRequest } from "./Dispatcher.js"
import type { Place } from "./executionQueue.js"
import type { Executions } from "./executions.js"
import type { InstanceRefusals } from "./instanceRefusals.js"

/** What submissions need of their executor. */
export interface SubmissionsOptions {
  readonly store: Context.Tag.Service<Store>
  readonly journal: Context.Tag.Service<RunJournal>
  readonly current: Context.Tag.Service<CurrentApp>
  readonly releases: Context.Tag.Service<Releases>
  /** Resolves the agent's model, whose window a client's tool results are cut to. */
  readonly models: Context.Tag.Service<ModelResolver>
  readonly executions: Executions
  readonly refusals: InstanceRefusals
  /** The executor's name, as it holds leases. */
  readonly owner: string
  /** How long a lease lasts unrenewed, in milliseconds. */
  readonly leaseTtl: number
  /** Where a run goes to be executed when not in this process's lane. */
  readonly wake: ((run: RunRecord) => Effect.Effect<void>) | undefined
  /** Puts a run in this process's lane, at the place its submission took, with the lease it took. */
  readonly schedule: (run: RunRecord, submitted: { readonly place: Place; readonly claimed: Lease | undefined }) => Effect.Effect<void>
}

/** Submissions, of people's runs and of child runs. */
export const makeSubmissions = (options: SubmissionsOptions) => {
  const { current, executions, journal, leaseTtl, owner, releases, schedule, store } = options
  const { invalidId, unavailable, withoutContext } = options.refusals

  /** `submittedHistory`: the history as the request gave it, before `clientHistory` fitted it. */
  const newRun = (
    request: RunRequest & { readonly submittedHistory?: RunRequest["history"] },
    conversation: { readonly id: string; readonly isNew: boolean },
    instanceId: string,
    links: {
      readonly steeredFrom?: string
      readonly parentRunId?: string
      readonly parentToolCallId?: string
      readonly traceId?: string
      readonly parentSpanId?: string
      readonly source?: Readonly<Record<string, unknown>>
    } = {},
    cutToolResults: ReadonlyArray<CutToolResult> = []
  ) =>
    Effect.gen(function*() {
      const submission = {
        id: newId("run"),
        agent: request.agent,
        instanceId,
        conversationId: conversation.id,
        input: request.message,
        release: (yield* releases.starting).release,
        idempotencyKey: request.idempotencyKey,
        history: request.history,
        submittedHistory: request.submittedHistory,
        ...links
      }
      const queuing: SubmitOptions = {
        newConversation: conversation.isNew,
        queued: (record) =>
          eventOf(record, "run.queued", { input: request.message, ...links, ...(cutToolResults.length === 0 ? {} : { cutToolResults }) })
      }
      if (options.wake !== undefined) {
        const run = yield* journal.submit(submission, queuing).pipe(Effect.catchTag("InstanceClosed", unavailable))
        yield* options.wake(run)
        return run
      }
      // Here, a run written is a run scheduled: a submitter that goes away (a client that hangs
      // up) cannot leave it queued, or its lane taken, until the next start.
      return yield* Effect.uninterruptible(Effect.gen(function*() {
        // The run's place in the lane is taken before it is written, so that the lane's order is
        // the order of acceptance. A run that this process executes next in its conversation
        // takes the lease as it is queued: one transaction fewer than claiming it when it starts;
        // a run submitted meanwhile waits behind it instead of claiming that lease.
        const next = !executions.busy(conversation.id)
        const place = executions.enter(conversation.id)
        const written = next
          ? journal.submitAndClaim(submission, queuing, { owner, ttlMillis: leaseTtl })
          : Effect.map(journal.submit(submission, queuing), (run) => ({ run, lease: undefined }))
        const { lease, run } = yield* written.pipe(
          Effect.catchTag("InstanceClosed", unavailable),
          Effect.onError(() => Effect.sync(() => executions.leave(place)))
        )
        yield* schedule(run, { place, claimed: lease })
        return run
      }))
    })

  /** Starts a child run in a new conversation of the agent's instance (subagent calls, spawns). */
  const starter = RunStarter.of({
    start: (request) =>
      Effect.gen(function*() {
        const app = yield* releases.starting
        const agent = app.agents.get(request.agent)
        if (agent === undefined) return yield* agentNotFound(app, request.agent)
        // A child run makes its instance on first use as a submission does: with the same refusals.
        yield* invalidId(agent.id, request.instance)
        yield* withoutContext(agent, request.instance)
        return yield* newRun(
          { agent: request.agent, message: request.message, instance: request.instance },
          { id: newId("conv"), isNew: true },
          request.instance,
          {
            parentRunId: request.parentRunId,
            traceId: request.traceId,
            parentSpanId: request.parentSpanId,
            ...(request.parentToolCallId === undefined ? {} : { parentToolCallId: request.parentToolCallId })
          }
        )
      })
  })

  const submit = Effect.fnUntraced(function*(request: RunRequest) {
    if (request.idempotencyKey !== undefined) {
      const existing = yield* store.findRunByIdempotencyKey(request.idempotencyKey)
      if (Option.isSome(existing)) return existing.value
    }
    const app = yield* current.get
    const agent = app.agents.get(request.agent)
    if (agent === undefined) return yield* agentNotFound(app, request.agent)
    const found = request.conversation === undefined ? Option.none() : yield* store.getConversation(request.conversation)
    // A conversation passed back alone (as its earlier answer named it) continues in its own instance.
    const instanceId = request.instance ??
      Option.match(Option.filter(found, (existing) => existing.agent === request.agent), {
        onNone: () => "default",
        onSome: (existing) => existing.instanceId
      })
    yield* invalidId(agent.id, instanceId)
    yield* withoutContext(agent, instanceId)
    let conversation = { id: newId("conv"), isNew: true }
    if (request.conversation !== undefined) {
      if (Option.isNone(found) && request.createConversation === true) {
        conversation = { id: request.conversation, isNew: true }
      } else if (Option.isNone(found)) {
        return yield* new ConversationNotFound({
          conversation: request.conversation,
          message: `there is no conversation "${request.conversation}"; omit "conversation" to start a new one`
        })
      } else if (found.value.agent !== request.agent || found.value.instanceId !== instanceId) {
        return yield* new ConversationNotFound({
          conversation: request.conversation,
          message: `conversation "${request.conversation}" belongs to agent "${found.value.agent}", ` +
            `instance "${found.value.instanceId}", not agent "${request.agent}", instance "${instanceId}"`
        })
      } else {
        conversation = { id: found.value.id, isNew: false }
      }
    }
    const history = request.history === undefined ? undefined : clientHistory(app, agent, options.models, request.history)
    return yield* newRun({ ...request, history: history?.history, submittedHistory: request.history }, conversation, instanceId, {
      ...request.trace,
      ...(request.source === undefined ? {} : { source: request.source })
    }, history?.cut).pipe(
      // Two submissions with one key at once: the store's unique key lets one in.
      Effect.catchTag("StoreError", (error) =>
        request.idempotencyKey === undefined
          ? Effect.fail(error)
          : store.findRunByIdempotencyKey(request.idempotencyKey).pipe(
            Effect.flatMap(Option.match({ onNone: () => Effect.fail(error), onSome: Effect.succeed }))
          ))
    )
  }, entrySpan("Dispatcher.submit"))

  /** Queues the run that takes over a steered run's conversation, with `message` as its input. */
  const successor = (cancelled: RunRecord, message: string) =>
    newRun(
      { agent: cancelled.agent, message, instance: cancelled.instanceId, conversation: cancelled.conversationId },
      { id: cancelled.conversationId, isNew: false },
      cancelled.instanceId,
      { steeredFrom: cancelled.id }
    )

  return {
    /** Queues a run of `request` in `conversation` of the instance, with its links to other runs. */
    newRun,
    successor,
    /** Checks and queues a person's submission (or answers with the run of its idempotency key). */
    submit,
    starter
  }
}

/** Submissions of an executor. */
export type Submissions = ReturnType<typeof makeSubmissions>
