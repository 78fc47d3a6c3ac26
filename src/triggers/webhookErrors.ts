/**
 * Why a webhook delivery is refused or not taken: each an error with its status at the API's edge
 * (`HooksGroup`), saying what the sender can do.
 */
import { Schema } from "effect"
import { ReadableIssue } from "../definitions/readableIssues.js"

/**
 * A playbook's code failed on the event (it threw, or gave what it may not): the claim is given up,
 * so the sender's retry is taken once the playbook is fixed. The sender is told no more than that;
 * the server's log names the playbook and what went wrong.
 */
export class WebhookDeliveryFailed extends Schema.TaggedError<WebhookDeliveryFailed>()("WebhookDeliveryFailed", {
  webhook: Schema.String,
  message: Schema.String
}) {}

/** No playbook listens on that webhook. */
export class WebhookNotFound extends Schema.TaggedError<WebhookNotFound>()("WebhookNotFound", {
  webhook: Schema.String,
  message: Schema.String
}) {}

/**
 * The serving build leaves playbooks out (`foundry dev` while their files do not build), and any of
 * them may listen on this webhook: the event is not taken, so that the sender's retry delivers it
 * to every playbook once they are served, rather than to some now and to the others never.
 */
export class WebhookNotServed extends Schema.TaggedError<WebhookNotServed>()("WebhookNotServed", {
  webhook: Schema.String,
  message: Schema.String
}) {}

/** The body is not JSON, or no listening playbook's schema accepts it. */
export class WebhookBodyInvalid extends Schema.TaggedError<WebhookBodyInvalid>()("WebhookBodyInvalid", {
  webhook: Schema.String,
  message: Schema.String,
  issues: Schema.Array(ReadableIssue)
}) {}

/**
 * The event id (the `x-event-id` header, or a playbook's `eventId`) is blank or not an id: every
 * later delivery with the same blank id would be taken for a repeat of the first and start nothing.
 */
export class WebhookEventIdInvalid extends Schema.TaggedError<WebhookEventIdInvalid>()("WebhookEventIdInvalid", {
  webhook: Schema.String,
  message: Schema.String
}) {}

/** The signature is missing, wrong, outside its time window, or a replay. */
export class WebhookUnauthorized extends Schema.TaggedError<WebhookUnauthorized>()("WebhookUnauthorized", {
  webhook: Schema.String,
  message: Schema.String
}) {}

/**
 * A delivery of this event id is still being processed: it is not run a second time. The sender
 * should retry later, and then gets the first delivery's runs.
 */
export class DeliveryInProgress extends Schema.TaggedError<DeliveryInProgress>()("DeliveryInProgress", {
  webhook: Schema.String,
  deliveryId: Schema.String,
  message: Schema.String
}) {}
