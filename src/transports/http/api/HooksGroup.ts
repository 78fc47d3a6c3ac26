/**
 * `POST /hooks/:name`: inbound webhooks for playbooks.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import {
  DeliveryInProgress,
  WebhookBodyInvalid,
  WebhookDeliveryFailed,
  WebhookEventIdInvalid,
  WebhookNotFound,
  WebhookNotServed,
  WebhookUnauthorized
} from "../../../triggers/webhookErrors.js"

/**
 * What a delivery started, what it skipped, and which playbooks' own code failed on it (they
 * started nothing; the others went on); `duplicate` for a repeated event id.
 */
export const DeliveryView = Schema.Struct({
  deliveryId: Schema.String,
  duplicate: Schema.Boolean,
  runs: Schema.Array(Schema.Struct({ playbook: Schema.String, agent: Schema.String, instanceId: Schema.String, runId: Schema.String })),
  skipped: Schema.Array(Schema.Struct({ playbook: Schema.String, reason: Schema.String })),
  failed: Schema.Array(Schema.Struct({ playbook: Schema.String, reason: Schema.String }))
})

/** The hooks group. */
export class HooksGroup extends HttpApiGroup.make("hooks").add(
  HttpApiEndpoint.post("deliver", "/hooks/:name")
    .setPath(Schema.Struct({ name: Schema.String }))
    .setHeaders(Schema.Struct({
      "x-event-id": Schema.optional(Schema.String).annotations({
        description: "The sender's id of the event, the same on every retry: a repeat is answered 200 with the first delivery's runs, and starts nothing"
      }),
      "x-foundry-timestamp": Schema.optional(Schema.String).annotations({ description: "Unix seconds, for a webhook with a secret" }),
      "x-foundry-signature": Schema.optional(Schema.String).annotations({
        description: "sha256=<hex HMAC-SHA256 of \"<timestamp>.<event id>.<raw body>\">, for a webhook with a secret"
      })
    }))
    .addSuccess(DeliveryView, { status: 202 })
    .addSuccess(DeliveryView.annotations({ description: "a repeated event id: the first delivery, duplicate: true" }), { status: 200 })
    .addError(WebhookNotFound, { status: 404 })
    .addError(WebhookBodyInvalid, { status: 400 })
    .addError(WebhookEventIdInvalid, { status: 400 })
    .addError(WebhookUnauthorized, { status: 401 })
    .addError(DeliveryInProgress, { status: 409 })
    .addError(WebhookNotServed, { status: 503 })
    .addError(WebhookDeliveryFailed, { status: 500 })
) {}
