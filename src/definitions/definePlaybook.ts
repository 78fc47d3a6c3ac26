/**
 * `definePlaybook`: route an inbound event to an agent instance. The source (`webhook(...)`)
 * names where events arrive and the schema that decodes them.
 */
import type { Schema } from "effect"
import type { AgentDefinition } from "./defineAgent.js"
import { brand, type Branded } from "./RouteKind.js"

/** Events posted to `POST /hooks/<name>`, decoded by `schema`. */
export interface WebhookSource<A, I = unknown> {
  readonly _tag: "Webhook"
  readonly name: string
  readonly schema: Schema.Schema<A, I>
}

/** A webhook source: `POST /hooks/<name>` with a body that `schema` decodes. */
export const webhook = <A, I>(name: string, schema: Schema.Schema<A, I>): WebhookSource<A, I> =>
  Object.freeze({ _tag: "Webhook", name, schema })

/** Events a tool emits with `context.emit("<name>", payload)`, decoded by `schema`. */
export interface EventSource<A, I = unknown> {
  readonly _tag: "Event"
  readonly name: string
  readonly schema: Schema.Schema<A, I>
}

/** An internal event source: what tools emit under `name`, so one agent's work can wake another. */
export const event = <A, I>(name: string, schema: Schema.Schema<A, I>): EventSource<A, I> =>
  Object.freeze({ _tag: "Event", name, schema })

/** Where a playbook's events come from. */
export type PlaybookSource<A, I = unknown> = WebhookSource<A, I> | EventSource<A, I>

/** A playbook definition. */
export interface PlaybookDefinition<A = unknown, I = unknown> extends Branded<"playbook"> {
  readonly on: PlaybookSource<A, I>
  readonly when: (event: A) => boolean
  readonly agent: AgentDefinition
  readonly instance: (event: A) => string
  readonly message: (event: A) => string
  /** The event's id, for idempotent delivery when the sender gives no `x-event-id` header. */
  readonly eventId: ((event: A) => string) | undefined
  /**
   * Whether its webhook also accepts the old signature over the body alone, from a sender that
   * cannot sign the timestamp and event id yet. Such a signature can be replayed: off by default.
   */
  readonly legacySignatures: boolean
}

/** Defines a playbook. */
export const definePlaybook = <A, I>(definition: {
  readonly on: PlaybookSource<A, I>
  readonly when?: (event: A) => boolean
  readonly agent: AgentDefinition
  readonly instance?: string | ((event: A) => string)
  readonly message: (event: A) => string
  readonly eventId?: (event: A) => string
  readonly legacySignatures?: boolean
}): PlaybookDefinition<A, I> => {
  const instance = definition.instance ?? "default"
  return brand("playbook", {
    on: definition.on,
    when: definition.when ?? (() => true),
    agent: definition.agent,
    instance: typeof instance === "string" ? () => instance : instance,
    message: definition.message,
    eventId: definition.eventId,
    legacySignatures: definition.legacySignatures ?? false
  })
}
