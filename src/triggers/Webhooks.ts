/**
 * Webhooks: `POST /hooks/<name>` wakes the playbooks that listen on `<name>`. The body is decoded
 * with each playbook's schema, the signature checked when the config gives a secret, a repeated
 * event id answered with the first delivery's runs (and never run twice, however long the first
 * takes), and every decision (matched, skipped and why, instance provisioned, run dispatched)
 * recorded as an event. How a signature is made and checked is `webhookSignature.ts`; the same
 * signed delivery seen again is refused as a replay.
 *
 * A caller not vouched for (beyond this machine, without a token that may start runs) learns
 * nothing of which webhooks exist: a name no playbook listens on, and a webhook without a secret,
 * are refused as a signature that does not match, with the real reason in the server's log; so is
 * every caller of a webhook whose secret cannot be read (`webhookSecrets.ts`).
 */
import { type Config, Context, Duration, Effect, Exit, Layer, type Redacted } from "effect"
import { type CompiledApp, playbooksLeftOut } from "../compiler/CompiledApp.js"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { defaultWebhookTolerance } from "../definitions/configDefaults.js"
import type { PlaybookDefinition } from "../definitions/definePlaybook.js"
import { dispatchToPlaybook, type PlaybookFailed, type Started, whenFalse } from "../engine/playbookDelivery.js"
import { Dispatcher } from "../dispatch/Dispatcher.js"
import { newId } from "../durable/ids.js"
import { DeliveryStorage } from "../durable/DeliveryStorage.js"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import { Instances } from "../instances/Instances.js"
import type { StoreError } from "../durable/StoreError.js"
import { spanIdOf, traceIdOf } from "../journal/trace.js"
import { EventLog } from "../events/EventLog.js"
import type { EventContent } from "../events/FoundryEvent.js"
import type { Route } from "../router/RouteTable.js"
import {
  DeliveryInProgress,
  WebhookBodyInvalid,
  WebhookDeliveryFailed,
  WebhookEventIdInvalid,
  WebhookNotFound,
  WebhookNotServed,
  WebhookUnauthorized
} from "./webhookErrors.js"
import { type Choice, choose, decodeBody, failedReason } from "./webhookPlaybooks.js"
import { readSecret } from "./webhookSecrets.js"
import { eventIdHeader, timestampHeader, verifySignature } from "./webhookSignature.js"

/** What one delivery started, and what it skipped. */
export interface DeliveryResult {
  readonly deliveryId: string
  readonly duplicate: boolean
  readonly runs: ReadonlyArray<{ readonly playbook: string; readonly agent: string; readonly instanceId: string; readonly runId: string }>
  readonly skipped: ReadonlyArray<{ readonly playbook: string; readonly reason: string }>
  /** The playbooks whose own code failed on the event: they started nothing, the others went on. */
  readonly failed: ReadonlyArray<{ readonly playbook: string; readonly reason: string }>
}

/** What an event id may be: 1-200 visible characters. */
const eventIdPattern = /^[\x21-\x7e\u00a0-\uffff](?:[\x20-\x7e\u00a0-\uffff]{0,198}[\x21-\x7e\u00a0-\uffff])?$/

/** Inbound webhook deliveries. */
export class Webhooks extends Context.Tag("foundry/Webhooks")<Webhooks, {
  /**
   * Takes one delivery. `vouched`: whether the request came where anyone may send one unsigned (a
   * server open to loopback only), or with a Foundry token that may start runs; a webhook without
   * a secret takes only those.
   */
  readonly deliver: (
    webhook: string,
    body: string,
    headers: Readonly<Record<string, string | undefined>>,
    vouched: boolean
  ) => Effect.Effect<
    DeliveryResult,
    | WebhookNotFound
    | WebhookNotServed
    | WebhookBodyInvalid
    | WebhookEventIdInvalid
    | WebhookUnauthorized
    | DeliveryInProgress
    | WebhookDeliveryFailed
    | StoreError
  >
}>() {}

/** The webhooks of the current build, over the dispatcher. */
export const WebhooksLive = Layer.effect(
  Webhooks,
  Effect.gen(function*() {
    const deliveries = yield* DeliveryStorage
    const instances = yield* InstanceStorage
    const managed = yield* Instances
    const events = yield* EventLog
    const dispatcher = yield* Dispatcher
    const current = yield* CurrentApp

    // The webhooks whose unreadable secret this process has told the owner of: once each, not on
    // every delivery (a sender retrying would fill the log).
    const told = new Set<string>()
    /**
     * The secret of `webhook`: `undefined` when it has none; a secret that cannot be read is one
     * that nothing signs with (the caller is refused as for a wrong signature), said in the log once.
     */
    const secretOf = Effect.fnUntraced(function*(webhook: string, configured: Config.Config<Redacted.Redacted> | string | undefined) {
      const secret = yield* readSecret(webhook, configured)
      if (secret._tag !== "Unreadable") return secret
      if (!told.has(webhook)) {
        told.add(webhook)
        yield* Effect.logError(secret.problem)
      }
      return secret
    })

    /**
     * Claims the delivery of `eventId` as `deliveryId`: the claim when this delivery is to start its
     * runs, the first delivery's result when it is a repeat of one that ended, refused
     * when it is a replay of the same signed delivery or the first is still being processed.
     */
    const claimDelivery = Effect.fnUntraced(function*(webhook: string, eventId: string, deliveryId: string, fingerprint: string | null) {
      const claim = yield* deliveries.claim(deliveryId, webhook, fingerprint)
      if (claim._tag === "claimed") return claim
      // A repeat while the first is still processing is never run again: the sender retries later.
      // Asked before the replay check: a proxy resending the same bytes while the first attempt
      // works must not be told "refused" (final to a sender) when that attempt may yet give up
      // its claim (its sender hung up, its playbook failed) and leave the event undelivered.
      if (claim._tag === "processing") {
        return yield* new DeliveryInProgress({
          webhook,
          deliveryId,
          message: `event "${eventId}" is still being delivered; it is not run twice: retry later to get its runs`
        })
      }
      if (fingerprint !== null && claim.fingerprint === fingerprint) {
        return yield* new WebhookUnauthorized({
          webhook,
          message: `this signed delivery of event "${eventId}" was received before and is refused as a replay: ` +
            `a sender that retries signs each attempt again with the current ${timestampHeader}`
        })
      }
      if (!isResult(claim.result)) return yield* Effect.die(new Error(`delivery ${deliveryId} holds no delivery result`))
      // Stored before deliveries said which playbooks failed: none did (the delivery failed whole).
      const repeat: { readonly _tag: "Repeat"; readonly result: DeliveryResult } = {
        _tag: "Repeat",
        result: { failed: [], ...claim.result, duplicate: true }
      }
      return repeat
    })

    /**
     * Hands the event to each playbook that takes it, adding the runs it started to `runs`, what it
     * skipped to `skipped` and the playbooks whose code failed to `failed`; every decision recorded
     * as an event of the delivery's own trace (its `delivery.received` once, not again by a retry
     * of an attempt that gave its claim up).
     */
    const dispatchAll = (
      app: CompiledApp,
      choices: ReadonlyArray<Choice>,
      delivery: { readonly webhook: string; readonly deliveryId: string; readonly eventId: string | undefined; readonly again: boolean },
      answer: {
        readonly runs: Array<DeliveryResult["runs"][number]>
        readonly skipped: Array<DeliveryResult["skipped"][number]>
        readonly failed: Array<DeliveryResult["failed"][number]>
      }
    ) => {
      const { deliveryId, eventId, webhook } = delivery
      const { failed, runs, skipped } = answer
      const traceId = traceIdOf(deliveryId)
      const rootSpan = spanIdOf(deliveryId, "delivery")
      // The delivery's own events: a trace of their own, under the delivery's span, in no run.
      const note = (content: EventContent, step: string, agent = "", instanceId = "") =>
        events.emit({
          ...content,
          traceId,
          spanId: step === "delivery" ? rootSpan : spanIdOf(deliveryId, step),
          parentSpanId: step === "delivery" ? null : rootSpan,
          runId: "",
          conversationId: "",
          instanceId,
          agent
        })
      const from = { deliveryId, webhook }
      const agentOf = (route: Route<PlaybookDefinition>) => app.table.idOf(route.definition.agent) ?? ""
      // One playbook's broken code takes the event from it alone: the others' runs start, once.
      const failedOn = (route: Route<PlaybookDefinition>) => (error: PlaybookFailed) => {
        failed.push({ playbook: route.id, reason: failedReason(error) })
        return Effect.zipRight(
          Effect.logWarning(`webhook ${webhook}: ${error.message}`),
          note(
            { type: "playbook.failed", data: { ...from, playbook: route.id, call: error.call, error: error.message } },
            `playbook:${route.id}`,
            agentOf(route)
          )
        )
      }
      return Effect.gen(function*() {
        if (!delivery.again) yield* note({ type: "delivery.received", data: { ...from, eventId: eventId ?? null } }, "delivery")
        // The playbooks whose schema refused the body, as the answer lists them: the delivery's page says why too.
        for (const { playbook, reason } of skipped) {
          yield* note({ type: "playbook.skipped", data: { ...from, playbook, reason } }, `playbook:${playbook}`)
        }
        for (const choice of choices) {
          const { route } = choice
          const step = `playbook:${route.id}`
          if (choice._tag === "Failed") {
            yield* failedOn(route)(choice.failed)
            continue
          }
          if (choice._tag === "Declines") {
            skipped.push({ playbook: route.id, reason: `its ${whenFalse}` })
            yield* note({ type: "playbook.skipped", data: { ...from, playbook: route.id, reason: whenFalse } }, step, agentOf(route))
            continue
          }
          yield* dispatchToPlaybook(app, route, choice.event, {
            skipped: (agent, reason, instanceId) => {
              skipped.push({ playbook: route.id, reason: `its ${reason}` })
              return note({ type: "playbook.skipped", data: { ...from, playbook: route.id, reason } }, step, agent, instanceId)
            },
            matched: (agent, instanceId) => note({ type: "playbook.matched", data: { ...from, playbook: route.id } }, step, agent, instanceId),
            provisioned: (agent, instanceId) =>
              note({ type: "instance.provisioned", data: { ...from, playbook: route.id } }, step, agent, instanceId),
            start: (agent, instanceId, message) =>
              dispatcher.submit({
                agent,
                instance: instanceId,
                message,
                trace: { traceId, parentSpanId: spanIdOf(deliveryId, step) },
                // An attempt that takes over a dead one's claim does not start its runs again.
                ...(eventId === undefined ? {} : { idempotencyKey: `delivery:${deliveryId}:${route.id}:${instanceId}` })
              }).pipe(
                Effect.map((run): Started => {
                  runs.push({ playbook: route.id, agent, instanceId, runId: run.id })
                  return { _tag: "Started", runId: run.id }
                }),
                Effect.catchTags({
                  InstanceUnavailable: (e) => Effect.succeed<Started>({ _tag: "Unavailable", reason: e.message }),
                  AgentNotFound: (e) => Effect.die(e),
                  ConversationNotFound: (e) => Effect.die(e)
                })
              ),
            dispatched: (agent, instanceId, runId) =>
              note({ type: "playbook.dispatched", data: { ...from, playbook: route.id, runId } }, step, agent, instanceId)
          }).pipe(
            Effect.provideService(InstanceStorage, instances),
            Effect.provideService(Instances, managed),
            Effect.catchTag("PlaybookFailed", failedOn(route))
          )
        }
      })
    }

    const deliver = Effect.fn("Webhooks.deliver")(function*(
      webhook: string,
      body: string,
      headers: Readonly<Record<string, string | undefined>>,
      vouched: boolean
    ) {
      const app = yield* current.get
      const leftOut = playbooksLeftOut(app)
      if (leftOut !== undefined) {
        return yield* new WebhookNotServed({
          webhook,
          message: `${leftOut}, which may listen on this webhook: the event was not taken; send it again once they build`
        })
      }
      const playbooks = app.table.playbooks.filter((p) => p.definition.on._tag === "Webhook" && p.definition.on.name === webhook)
      if (playbooks.length === 0 && vouched) {
        return yield* new WebhookNotFound({ webhook, message: `no playbook listens on /hooks/${webhook}` })
      }
      const settings = playbooks.length === 0 ? undefined : app.table.config.webhooks[webhook]
      const secret = yield* secretOf(webhook, settings?.secret)
      // Beyond this machine, a webhook no one signs would let anyone start runs; and a name no
      // playbook listens on is refused the same way, so that the caller cannot tell the two from
      // a webhook whose signature it got wrong. A secret that cannot be read matches no signature,
      // from anyone: the webhook answers as one whose signature was got wrong. The owner reads why in the log.
      const fingerprint = secret._tag === "None" && vouched ? null : yield* verifySignature(webhook, body, headers, {
        secret: secret._tag === "Secret" ? secret.value : undefined,
        tolerance: Duration.decode(settings?.tolerance ?? defaultWebhookTolerance),
        legacy: settings?.legacySignatures === true || playbooks.some((p) => p.definition.legacySignatures),
        vouched
      }).pipe(Effect.tapError(() => secret._tag !== "None" ? Effect.void : unvouched(webhook, playbooks.length > 0)))
      // After the signature: a refusal that only a webhook that exists gives would tell it exists.
      const given = headers[eventIdHeader]
      if (given !== undefined && !eventIdPattern.test(given)) {
        return yield* new WebhookEventIdInvalid({
          webhook,
          message: `${eventIdHeader} ${given.trim() === "" ? "is blank" : "is not an event id"}: send the sender's id of the event ` +
            "(1-200 visible characters, the same on every retry), or leave the header out to have every delivery taken as new"
        })
      }
      const { accepted, rejected } = yield* decodeBody(webhook, body, playbooks)
      // Every playbook's `when` first, then its `eventId`: a declining playbook's names the delivery too.
      const choices = yield* choose(accepted, given)
      const eventIds = choices.map((choice) => choice._tag === "Failed" ? undefined : choice.eventId)
      const eventId = given ?? eventIds.find((id) => id !== undefined)
      if (eventId !== undefined && !eventIdPattern.test(eventId)) {
        return yield* new WebhookEventIdInvalid({
          webhook,
          message: `a playbook's eventId gave ${JSON.stringify(eventId)}, which is not an event id: make it return the sender's id of the event ` +
            "(1-200 visible characters), or undefined when the event has none"
        })
      }
      const deliveryId = eventId === undefined ? newId("dlv") : `${webhook}:${eventId}`
      const claimed = eventId === undefined ? undefined : yield* claimDelivery(webhook, eventId, deliveryId, fingerprint)
      if (claimed?._tag === "Repeat") return claimed.result
      const runs: Array<DeliveryResult["runs"][number]> = []
      const skipped = rejected.map((route) => ({ playbook: route.id, reason: "the body does not match its schema" }))
      const failed: Array<DeliveryResult["failed"][number]> = []
      const result = (): DeliveryResult => ({ deliveryId, duplicate: false, runs, skipped, failed })
      yield* dispatchAll(app, choices, { webhook, deliveryId, eventId, again: claimed?.again ?? false }, { runs, skipped, failed }).pipe(
        // Playbooks failed and nothing started: sent again, the event starts nothing twice, and
        // reaches them once they are fixed (see docs/decisions.md).
        Effect.zipRight(Effect.suspend(() => failed.length > 0 && runs.length === 0 ? Effect.fail(failedWhole(webhook, failed)) : Effect.void)),
        Effect.onExit((exit) =>
          claimed === undefined || Exit.isSuccess(exit)
            ? Effect.void
            // Stopped part way (every playbook that took it failing, a store error, the sender
            // hanging up): the claim is given up, so that a retry delivers the rest; the runs that
            // started are not started again (each is submitted under the delivery's, playbook's
            // and instance's key).
            : Effect.ignore(deliveries.release(deliveryId, claimed.claimedAt))
        )
      )
      if (claimed !== undefined) yield* deliveries.complete(deliveryId, claimed.claimedAt, result())
      return result()
    })

    return Webhooks.of({ deliver })
  })
)

/**
 * Why a caller not vouched for was refused as an unsigned delivery, for the owner: it was told no
 * more than a wrong signature's refusal.
 */
const unvouched = (webhook: string, listened: boolean) =>
  listened
    ? Effect.logWarning(
      `webhook ${webhook}: refused a delivery from beyond this machine without a Foundry token: /hooks/${webhook} has no secret; ` +
        `set webhooks.${webhook}.secret in foundry.config.ts to the secret the sender signs its deliveries with, ` +
        "or have the sender send a Foundry token with scope \"run\" (Authorization: Bearer <token>)"
    )
    : Effect.logInfo(
      `webhook ${webhook}: no playbook listens on /hooks/${webhook}; a caller beyond this machine without a Foundry token ` +
        "was refused as for a wrong signature, so that it cannot tell which webhooks exist"
    )

/**
 * The delivery's failure when playbooks failed on it and none started a run: said to the sender
 * by their names (as a delivery's answer names them), not what their code did, which is logged.
 */
const failedWhole = (webhook: string, failed: ReadonlyArray<{ readonly playbook: string }>) =>
  new WebhookDeliveryFailed({
    webhook,
    message: `${failed.length === 1 ? "playbook" : "playbooks"} ${failed.map((f) => f.playbook).join(", ")} could not take the event ` +
      "and nothing started (the server's log says why): nothing was lost; send the event again once it is fixed"
  })

/** A stored delivery's result; one stored before deliveries said which playbooks failed has no `failed`. */
const isResult = (value: unknown): value is Omit<DeliveryResult, "failed"> & Partial<Pick<DeliveryResult, "failed">> =>
  typeof value === "object" && value !== null && "deliveryId" in value && "runs" in value && Array.isArray(value.runs)
