/**
 * `definePlaybook`: route an inbound event to an agent's instances. The source (`webhook(...)`)
 * names where events arrive and the schema that decodes them; `instance` names which instance
 * takes each event: one by id (made on first use), one by provisioning key (picked, or created
 * with a context and installations), or every instance that has a capability installed.
 */
import type { Schema } from "effect"
import type { AgentDefinition, AnyContext } from "./defineAgent.js"
import type { McpServerDefinition } from "./defineMcpServer.js"
import type { AnyTool, ToolDefinition } from "./defineTool.js"
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

/** A capability an instance installs: an installable shared tool, or an MCP server of the catalogue. */
export type InstallableCapability = AnyTool | McpServerDefinition

/**
 * The instance a playbook's `create` makes for a provisioning key: its context (checked against the
 * agent's `context` schema) and what it installs, each config checked against its capability's.
 */
export interface InstanceSeed<Context = AnyContext> {
  readonly context?: Context
  readonly installations?: ReadonlyArray<{ readonly kind: "tool" | "mcp"; readonly id: string; readonly config?: unknown }>
}

/**
 * The agent's instance whose provisioning key is `key(event)`. Without `create`, an event for a
 * key no instance has is skipped; with it, that instance is created (once, however many events
 * for the key arrive at once).
 */
export interface InstanceByKey<A, Context = AnyContext> {
  readonly key: (event: A) => string
  readonly create?: ((event: A) => InstanceSeed<Context>) | undefined
}

/** Every active instance of the agent that has `installed` installed: one run each. */
export interface InstancesWithInstalled<Capability extends InstallableCapability = InstallableCapability> {
  readonly installed: Capability
}

/** Which instances take a playbook's events. */
export type PlaybookInstance<A, Context = AnyContext> =
  | string
  | ((event: A) => string)
  | InstanceByKey<A, Context>
  | InstancesWithInstalled

/**
 * A tool that is not installable has no config (`Config` is `undefined`): as `installed`, it is
 * refused with this field's name as the message.
 */
type InstallableCheck<T> = T extends ToolDefinition<infer _I, infer _IE, infer _O, infer _OE, infer _E, infer _R, infer Config, infer _X>
  ? [Config] extends [undefined] ? { readonly "installed: this tool is not installable (give it installable: { config })": never }
  : unknown
  : unknown

/** A playbook definition. */
export interface PlaybookDefinition<A = unknown, I = unknown> extends Branded<"playbook"> {
  readonly on: PlaybookSource<A, I>
  readonly when: (event: A) => boolean
  readonly agent: AgentDefinition
  readonly instance: PlaybookInstance<A, unknown>
  readonly message: (event: A) => string
  /** The event's id, for idempotent delivery when the sender gives no `x-event-id` header. */
  readonly eventId: ((event: A) => string) | undefined
  /**
   * Whether its webhook also accepts the old signature over the body alone, from a sender that
   * cannot sign the timestamp and event id yet. Such a signature can be replayed: off by default.
   */
  readonly legacySignatures: boolean
}

/** Defines a playbook. `create`'s context is typed by the agent's `context` schema. */
export const definePlaybook = <A, I, Context extends AnyContext = AnyContext, Capability extends InstallableCapability = never>(definition: {
  readonly on: PlaybookSource<A, I>
  readonly when?: (event: A) => boolean
  readonly agent: AgentDefinition<AnyTool, Context>
  readonly instance?:
    | string
    | ((event: A) => string)
    | InstanceByKey<A, Context>
    | InstancesWithInstalled<Capability & InstallableCheck<Capability>>
  readonly message: (event: A) => string
  readonly eventId?: (event: A) => string
  readonly legacySignatures?: boolean
}): PlaybookDefinition<A, I> =>
  brand("playbook", {
    on: definition.on,
    when: definition.when ?? (() => true),
    agent: definition.agent,
    instance: definition.instance ?? "default",
    message: definition.message,
    eventId: definition.eventId,
    legacySignatures: definition.legacySignatures ?? false
  })
