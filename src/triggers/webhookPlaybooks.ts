/**
 * Which of a webhook's playbooks take a delivery's body, decided before the delivery is claimed:
 * each playbook's schema decodes it, then its `when(event)` says whether it takes the event, and
 * then its `eventId(event)` is asked. A playbook whose code fails is that playbook's failure alone:
 * the others still take the event.
 */
import { Effect, Schema } from "effect"
import type { PlaybookDefinition } from "../definitions/definePlaybook.js"
import { formatIssues, readableIssues } from "../definitions/readableIssues.js"
import { playbookCall, type PlaybookFailed, playbookWhen } from "../engine/playbookDelivery.js"
import type { Route } from "../router/RouteTable.js"
import { WebhookBodyInvalid } from "./webhookErrors.js"

/** An event that a listening playbook's schema accepted. */
export interface Accepted {
  readonly route: Route<PlaybookDefinition>
  readonly event: unknown
}

/** What a playbook that accepted the body made of it: takes it (with its event id, if it gave one), declines it, or failed. */
export type Choice =
  | { readonly _tag: "Takes"; readonly route: Route<PlaybookDefinition>; readonly event: unknown; readonly eventId: string | undefined }
  | { readonly _tag: "Declines"; readonly route: Route<PlaybookDefinition>; readonly eventId: string | undefined }
  | { readonly _tag: "Failed"; readonly route: Route<PlaybookDefinition>; readonly failed: PlaybookFailed }

const parseJson = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false } => {
  try {
    return { ok: true, value: JSON.parse(text) }
  } catch {
    return { ok: false }
  }
}

/**
 * The body decoded by each of `playbooks`' schemas: the events accepted and the playbooks that
 * rejected it; refused when it is not JSON or no playbook accepts it (with the first one's issues).
 */
export const decodeBody = Effect.fnUntraced(function*(webhook: string, body: string, playbooks: ReadonlyArray<Route<PlaybookDefinition>>) {
  const json = parseJson(body)
  if (!json.ok) {
    return yield* new WebhookBodyInvalid({ webhook, message: "the body is not valid JSON", issues: [] })
  }
  const decoded = yield* Effect.forEach(playbooks, (route) =>
    Schema.decodeUnknown(route.definition.on.schema, { errors: "all" })(json.value).pipe(
      Effect.map((event): Accepted => ({ route, event })),
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
  const rejected = playbooks.filter((_, index) => decoded[index]?._tag === "Left")
  return { accepted, rejected }
})

/**
 * Each accepting playbook's choice: its `when(event)`, then (when the sender gave no id) its
 * `eventId(event)`. A playbook that declines still names the event: the id is the delivery's, and
 * without it a resend would start the runs of the playbooks that take it again. Its `eventId` may
 * assume `when` passed, so one that fails there gives no id, and is no failure.
 */
export const choose = (accepted: ReadonlyArray<Accepted>, givenEventId: string | undefined) =>
  Effect.forEach(accepted, ({ event, route }) =>
    Effect.gen(function*() {
      const eventIdOf = route.definition.eventId
      const eventId: Effect.Effect<string | undefined, PlaybookFailed> = eventIdOf === undefined || givenEventId !== undefined ? Effect.succeed(undefined) : playbookCall(
        route,
        "eventId(event)",
        () => eventIdOf(event),
        (id): id is string | undefined => id === undefined || typeof id === "string",
        "a string or undefined"
      )
      if (!(yield* playbookWhen(route, event))) {
        return { _tag: "Declines", route, eventId: yield* eventId.pipe(Effect.orElseSucceed(() => undefined)) } satisfies Choice
      }
      return { _tag: "Takes", route, event, eventId: yield* eventId } satisfies Choice
    }).pipe(
      Effect.catchTag("PlaybookFailed", (failed) => Effect.succeed({ _tag: "Failed", route, failed } satisfies Choice)),
      Effect.map((choice): Choice => choice)
    ))

/** What the delivery's answer says of a playbook whose code failed: which function, not what it threw (that may quote the event). */
export const failedReason = (failed: PlaybookFailed) =>
  `its ${failed.call} failed, so it started no run of this event: ` +
  "fix the playbook (the server's log and the delivery's playbook.failed event say how)"
