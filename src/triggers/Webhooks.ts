/**
 * Webhooks: `POST /hooks/<name>` wakes the playbooks that listen on `<name>`. The body is decoded
 * with each playbook's schema, the signature checked (HMAC-SHA256, constant time) when the config
 * gives a secret, a repeated event id answered with the first delivery's runs, and every decision
 * (matched, skipped and why, instance provisioned, run dispatched) recorded as an event.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { Config, Context, Effect, Layer, Redacted, Schema } from "effect"
import { CurrentApp } from "../compiler/CurrentApp.js"
import { formatIssues, ReadableIssue, readableIssues } from "../definitions/readableIssues.js"
import { deliverToPlaybook } from "../engine/playbookDelivery.js"
import { Dispatcher } from "../dispatch/Dispatcher.js"
import { newId } from "../durable/ids.js"
import { DeliveryStorage } from "../durable/DeliveryStorage.js"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import type { StoreError } from "../durable/StoreError.js"
import { spanIdOf, traceIdOf } from "../journal/trace.js"
import { EventLog } from "../events/EventLog.js"
import type { EventContent } from "../events/FoundryEvent.js"

/** What one delivery started, and what it skipped. */
export interface DeliveryResult {
  readonly deliveryId: string
  readonly duplicate: boolean
  readonly runs: ReadonlyArray<{ readonly playbook: string; readonly agent: string; readonly instanceId: string; readonly runId: string }>
  readonly skipped: ReadonlyArray<{ readonly playbook: string; readonly reason: string }>
}

/** No playbook listens on that webhook. */
export class WebhookNotFound extends Schema.TaggedError<WebhookNotFound>()("WebhookNotFound", {
  webhook: Schema.String,
  message: Schema.String
}) {}

/** The body is not JSON, or no listening playbook's schema accepts it. */
export class WebhookBodyInvalid extends Schema.TaggedError<WebhookBodyInvalid>()("WebhookBodyInvalid", {
  webhook: Schema.String,
  message: Schema.String,
  issues: Schema.Array(ReadableIssue)
}) {}

/** The signature is missing or wrong. */
export class WebhookUnauthorized extends Schema.TaggedError<WebhookUnauthorized>()("WebhookUnauthorized", {
  webhook: Schema.String,
  message: Schema.String
}) {}

/** The header a sender signs with: `sha256=<hex HMAC-SHA256 of the raw body>`. */
export const signatureHeader = "x-foundry-signature"

/** The header that names an event for idempotent delivery. */
export const eventIdHeader = "x-event-id"

/** Inbound webhook deliveries. */
export class Webhooks extends Context.Tag("foundry/Webhooks")<Webhooks, {
  readonly deliver: (
    webhook: string,
    body: string,
    headers: Readonly<Record<string, string | undefined>>
  ) => Effect.Effect<DeliveryResult, WebhookNotFound | WebhookBodyInvalid | WebhookUnauthorized | StoreError>
}>() {}

/** The signature `body` gets with `secret`. */
export const sign = (secret: string, body: string): string => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`

const sameSignature = (expected: string, given: string | undefined): boolean => {
  if (given === undefined) return false
  const a = Buffer.from(expected)
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b)
}

const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/** The webhooks of the current build, over the dispatcher. */
export const WebhooksLive = Layer.effect(
  Webhooks,
  Effect.gen(function*() {
    const deliveries = yield* DeliveryStorage
    const instances = yield* InstanceStorage
    const events = yield* EventLog
    const dispatcher = yield* Dispatcher
    const current = yield* CurrentApp

    const secretOf = (secret: Config.Config<Redacted.Redacted> | string | undefined) =>
      secret === undefined ? Effect.succeed(undefined) : typeof secret === "string"
        ? Effect.succeed(secret)
        : Effect.map(Effect.orDie(secret), Redacted.value)

    const deliver = Effect.fn("Webhooks.deliver")(function*(
      webhook: string,
      body: string,
      headers: Readonly<Record<string, string | undefined>>
    ) {
      const app = yield* current.get
      const playbooks = app.table.playbooks.filter((p) => p.definition.on._tag === "Webhook" && p.definition.on.name === webhook)
      if (playbooks.length === 0) {
        return yield* new WebhookNotFound({ webhook, message: `no playbook listens on /hooks/${webhook}` })
      }
      const secret = yield* secretOf(app.table.config.webhooks[webhook]?.secret)
      if (secret !== undefined && !sameSignature(sign(secret, body), headers[signatureHeader])) {
        return yield* new WebhookUnauthorized({
          webhook,
          message: headers[signatureHeader] === undefined
            ? `missing ${signatureHeader} header: sign the raw body with HMAC-SHA256 and send sha256=<hex>`
            : `the ${signatureHeader} signature does not match the body`
        })
      }
      const json = parseJson(body)
      if (!json.ok) {
        return yield* new WebhookBodyInvalid({ webhook, message: "the body is not valid JSON", issues: [] })
      }
      const decoded = yield* Effect.forEach(playbooks, (route) =>
        Schema.decodeUnknown(route.definition.on.schema, { errors: "all" })(json.value).pipe(
          Effect.map((event) => ({ route, event })),
          Effect.either
        ))
      const accepted = decoded.flatMap((d) => d._tag === "Right" ? [d.right] : [])
      if (accepted.length === 0) {
        const first = decoded.find((d) => d._tag === "Left")
        const issues = first?._tag === "Left" ? readableIssues(first.left, { root: "(body)" }) : []
        return yield* new WebhookBodyInvalid({
          webhook,
          message: `the body does not match the event schema:\n${formatIssues(issues)}`,
          issues
        })
      }

      const eventId = headers[eventIdHeader] ??
        accepted.map(({ event, route }) => route.definition.eventId?.(event)).find((id) => id !== undefined)
      const deliveryId = eventId === undefined ? newId("dlv") : `${webhook}:${eventId}`
      if (eventId !== undefined) {
        // A repeated delivery answers with the first one's runs; one still in progress is waited for.
        for (let attempt = 0; attempt < 200; attempt++) {
          const claim = yield* deliveries.claim(deliveryId, webhook)
          if (claim._tag === "claimed") break
          if (claim._tag === "done" && isResult(claim.result)) return { ...claim.result, duplicate: true }
          yield* Effect.sleep("25 millis")
        }
      }

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
      yield* note({ type: "delivery.received", data: { ...from, eventId: eventId ?? null } }, "delivery")
      const runs: Array<DeliveryResult["runs"][number]> = []
      const skipped: Array<DeliveryResult["skipped"][number]> = [
        ...decoded.flatMap((d, i) => d._tag === "Left" ? [{ playbook: playbooks[i]?.id ?? "", reason: "the body does not match its schema" }] : [])
      ]
      for (const { event, route } of accepted) {
        const step = `playbook:${route.id}`
        const decision = yield* deliverToPlaybook(app, route, event, {
          skipped: (agent, reason) => note({ type: "playbook.skipped", data: { ...from, playbook: route.id, reason } }, step, agent),
          matched: (agent, instanceId) => note({ type: "playbook.matched", data: { ...from, playbook: route.id } }, step, agent, instanceId),
          provisioned: (agent, instanceId) =>
            note({ type: "instance.provisioned", data: { ...from, playbook: route.id } }, step, agent, instanceId),
          start: (agent, instanceId, message) =>
            dispatcher.submit({ agent, instance: instanceId, message, trace: { traceId, parentSpanId: spanIdOf(deliveryId, step) } }).pipe(
              Effect.map((run) => run.id),
              Effect.catchTags({ AgentNotFound: (e) => Effect.die(e), ConversationNotFound: (e) => Effect.die(e) })
            ),
          dispatched: (agent, instanceId, runId) =>
            note({ type: "playbook.dispatched", data: { ...from, playbook: route.id, runId } }, step, agent, instanceId)
        }).pipe(Effect.provideService(InstanceStorage, instances))
        if (decision._tag === "Skipped") skipped.push({ playbook: route.id, reason: `its ${decision.reason}` })
        else runs.push({ playbook: route.id, agent: decision.agent, instanceId: decision.instanceId, runId: decision.runId })
      }
      const result: DeliveryResult = { deliveryId, duplicate: false, runs, skipped }
      if (eventId !== undefined) yield* deliveries.complete(deliveryId, result)
      return result
    })

    return Webhooks.of({ deliver })
  })
)

const isResult = (value: unknown): value is DeliveryResult =>
  typeof value === "object" && value !== null && "deliveryId" in value && "runs" in value && Array.isArray(value.runs)
