/**
 * `POST /hooks/:name`: inbound webhooks for playbooks.
 */
import { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import { Schema } from "effect"
import {
  DeliveryInProgress,
  WebhookBodyInvalid,
  WebhookEventIdInvalid,
  WebhookNotFound,
  WebhookNotServed,
  WebhookUnauthorized
} from "../../../triggers/Webhooks.js"

/** What a delivery started (and what it skipped); `duplicate` for a repeated event id. */
export const DeliveryView = Schema.Struct({
  deliveryId: Schema.String,
  duplicate: Schema.Boolean,
  runs: Schema.Array(Schema.Struct({ playbook: Schema.String, agent: Schema.String, instanceId: Schema.String, runId: Schema.String })),
  skipped: Schema.Array(Schema.Struct({ playbook: Schema.String, reason: Schema.String }))
})

/** The hooks group. */
export class HooksGroup extends HttpApiGroup.make("hooks").add(
  HttpApiEndpoint.post("deliver", "/hooks/:name")
    .setPath(Schema.Struct({ name: Schema.String }))
    .addSuccess(DeliveryView, { status: 202 })
    .addError(WebhookNotFound, { status: 404 })
    .addError(WebhookBodyInvalid, { status: 400 })
    .addError(WebhookEventIdInvalid, { status: 400 })
    .addError(WebhookUnauthorized, { status: 401 })
    .addError(DeliveryInProgress, { status: 409 })
    .addError(WebhookNotServed, { status: 503 })
) {}
