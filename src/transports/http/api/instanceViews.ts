/**
 * The shapes `/api/instances` answers and takes. Kept apart from the group (which reaches the
 * instances service and Node's crypto) so that the inspector, built for the browser, can name them.
 */
import { Schema } from "effect"
import { CapabilityKind, InstanceStatus } from "../../../durable/records.js"
import { opaqueCursor } from "./opaqueCursor.js"
import { strictBody } from "./strictBody.js"

/**
 * The `after` of a page request and the `next` of a page: where a page ended, its last instance's
 * agent and id (`[agent, id]` to clients, in opaque text).
 */
export const InstanceCursor = opaqueCursor(Schema.transform(
  Schema.Tuple(Schema.String, Schema.String),
  Schema.Struct({ agent: Schema.String, id: Schema.String }),
  { strict: true, decode: ([agent, id]) => ({ agent, id }), encode: ({ agent, id }) => [agent, id] as const }
))

/** An installed capability as the API shows it: its config with every secret as `"<redacted>"`. */
export const InstallationView = Schema.Struct({
  kind: CapabilityKind,
  id: Schema.String,
  config: Schema.Unknown,
  createdAt: Schema.Number,
  updatedAt: Schema.Number
})
export type InstallationView = typeof InstallationView.Type

const instanceFields = {
  agent: Schema.String,
  id: Schema.String,
  provisioningKey: Schema.NullOr(Schema.String),
  status: InstanceStatus,
  /** Why it is paused or archived, as whoever did it said. */
  statusReason: Schema.NullOr(Schema.String),
  context: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  createdAt: Schema.Number,
  updatedAt: Schema.Number
}

/** An instance in a list: how many capabilities it has installed. */
export const InstanceSummary = Schema.Struct({ ...instanceFields, installations: Schema.Number })
export type InstanceSummary = typeof InstanceSummary.Type

/** An instance with its installations. */
export const InstanceView = Schema.Struct({ ...instanceFields, installations: Schema.Array(InstallationView) })
export type InstanceView = typeof InstanceView.Type

/** The answer to `POST /api/instances`: `created` is false when the provisioning key named an existing instance. */
export const InstanceCreated = Schema.Struct({ ...InstanceView.fields, created: Schema.Boolean })

/** A page of instances, ordered by agent then id; `next` is `null` on the last page. */
export const InstancePage = Schema.Struct({
  instances: Schema.Array(InstanceSummary),
  next: Schema.NullOr(InstanceCursor)
})

/** A string that says what it must be when empty. */
export const nonEmpty = (what: string) => Schema.String.pipe(Schema.nonEmptyString({ message: () => `expected a non-empty ${what}` }))

/**
 * A capability to install; `config` may be left out in a PATCH to keep the installed one's. An
 * installation as GET shows it may be sent back as it is: its times are taken and ignored.
 */
export const InstallCapability = Schema.Struct({
  kind: CapabilityKind,
  id: nonEmpty("capability id"),
  config: Schema.optional(Schema.Unknown),
  createdAt: Schema.optional(Schema.Number),
  updatedAt: Schema.optional(Schema.Number)
}).annotations(strictBody)

/** The body of `POST /api/instances`. Without `id`, one is made. */
export const CreateInstance = Schema.Struct({
  agent: nonEmpty("agent id"),
  id: Schema.optional(Schema.String),
  provisioningKey: Schema.optional(nonEmpty("provisioning key")),
  context: Schema.optional(Schema.Unknown),
  installations: Schema.optional(Schema.Array(InstallCapability))
}).annotations(strictBody)

/** The body of `PATCH /api/instances/:id`; fields left out stay. `installations` is the whole set wanted. */
export const ChangeInstance = Schema.Struct({
  context: Schema.optional(Schema.Unknown),
  paused: Schema.optional(Schema.Boolean),
  reason: Schema.optional(Schema.String),
  installations: Schema.optional(Schema.Array(InstallCapability))
}).annotations(strictBody).pipe(
  // A reason says why an instance is paused: alone it would change nothing, silently.
  Schema.filter((body) =>
    body.reason === undefined || body.paused !== undefined ||
    { path: ["reason"], message: `goes with "paused": {"paused": true, "reason": "..."}` }
  )
)
