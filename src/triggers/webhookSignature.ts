/**
 * A webhook delivery's signature: HMAC-SHA256 (compared in constant time) over
 * `<timestamp>.<event id>.<body>`. The timestamp must be within the webhook's tolerance of now, and
 * the event id is the one the delivery is deduplicated by, so a captured delivery can neither be
 * replayed later nor under another id. The old signature over the body alone is accepted only
 * where the config or a playbook says `legacySignatures: true`.
 *
 * What a refusal says depends on the request alone until the signature matches: a caller without
 * the secret gets the same answer from a webhook that exists as from a name no playbook listens on
 * (checked with no secret), and learns neither which webhooks exist nor how they are configured.
 */
import { createHmac, timingSafeEqual } from "node:crypto"
import { Clock, Duration, Effect } from "effect"
import { WebhookUnauthorized } from "./webhookErrors.js"

/** The header a sender signs with: `sha256=<hex HMAC-SHA256 of the signed payload>`. */
export const signatureHeader = "x-foundry-signature"

/** The header with the time of signing, in Unix seconds; it is part of the signed payload. */
export const timestampHeader = "x-foundry-timestamp"

/** The header that names an event for idempotent delivery; it is part of the signed payload. */
export const eventIdHeader = "x-event-id"

/** What a sender signs: the timestamp (Unix seconds), the event id and the raw body, joined by dots. */
export const signedPayload = (timestamp: number | string, eventId: string, body: string): string => `${timestamp}.${eventId}.${body}`

/**
 * The `x-foundry-signature` value for `payload` with `secret`: `signedPayload(...)` for the
 * current form, the raw body alone for the legacy one.
 */
export const sign = (secret: string, payload: string): string =>
  `sha256=${createHmac("sha256", secret).update(payload).digest("hex")}`

/**
 * Whether `given` is the signature `secret` makes of `payload`. No secret matches nothing, after
 * the same work: a large body's HMAC takes long enough to be timed.
 */
const signs = (secret: string | undefined, payload: string, given: string): boolean => {
  const a = Buffer.from(sign(secret ?? "", payload))
  const b = Buffer.from(given)
  return a.length === b.length && timingSafeEqual(a, b) && secret !== undefined
}

/** How a webhook's deliveries are checked. */
export interface SignatureRules {
  /** `undefined`: no signature is accepted (a name no playbook listens on, no secret for a caller not vouched for, or a secret that cannot be read). */
  readonly secret: string | undefined
  readonly tolerance: Duration.Duration
  readonly legacy: boolean
  /** Whether the caller could have sent it unsigned (this machine, or a token): else a missing signature says how it may. */
  readonly vouched: boolean
}

/**
 * Checks a delivery's signature; returns its fingerprint (the signature), or `null` for a legacy
 * signature over the body alone.
 */
export const verifySignature = Effect.fn("Webhooks.verify")(function*(
  webhook: string,
  body: string,
  headers: Readonly<Record<string, string | undefined>>,
  rules: SignatureRules
) {
  const refuse = (message: string) => new WebhookUnauthorized({ webhook, message })
  const recipe = `sign "<${timestampHeader}>.<${eventIdHeader}>.<raw body>" with HMAC-SHA256 and send ${signatureHeader}: sha256=<hex>`
  const given = headers[signatureHeader]
  if (given === undefined) {
    return yield* refuse(
      `missing ${signatureHeader} header: ${recipe}` + (rules.vouched ? "" : "; from beyond this machine, a webhook without a secret " +
        "takes only deliveries with a Foundry token with scope \"run\" (Authorization: Bearer <token>)")
    )
  }
  const timestamp = headers[timestampHeader]
  if (timestamp === undefined) {
    // The same refusal whether body-only signatures are allowed here or not: only a sender with
    // the secret learns which.
    if (rules.legacy && signs(rules.secret, body, given)) return null
    return yield* refuse(
      `missing ${timestampHeader} header: ${recipe} (a signature over the body alone is accepted only with legacySignatures: true, ` +
        "and only when it matches the body)"
    )
  }
  if (!/^\d{1,12}$/.test(timestamp)) {
    return yield* refuse(`${timestampHeader} must be the time of signing in Unix seconds, got "${timestamp}"`)
  }
  const eventId = headers[eventIdHeader]
  if (eventId === undefined) {
    return yield* refuse(`missing ${eventIdHeader} header: a signed delivery names its event, and the signature covers it: ${recipe}`)
  }
  if (!signs(rules.secret, signedPayload(timestamp, eventId, body), given)) {
    return yield* refuse(`the ${signatureHeader} signature does not match ${timestampHeader}, ${eventIdHeader} and the body: ${recipe}`)
  }
  // Past the signature, the sender has the secret: the webhook's own settings may be told.
  const skew = Math.round((yield* Clock.currentTimeMillis) / 1000) - Number(timestamp)
  if (Math.abs(skew) * 1000 > Duration.toMillis(rules.tolerance)) {
    return yield* refuse(
      `the delivery was signed ${skew > 0 ? `${skew} s ago` : `${-skew} s ahead of this server's clock`}, outside the ` +
        `${Duration.format(rules.tolerance)} tolerance: sign each attempt with the current time (or raise webhooks.${webhook}.tolerance)`
    )
  }
  return given
})
