/**
 * `/api/instances`: agent instances as managed data. List them a page at a time, create one with a
 * context and installations, change its context, pause or resume it, archive it, install and
 * uninstall capabilities, and list its conversations. An installation's config is shown as stored:
 * every secret field reads `"<redacted>"`, and the sealed secrets never leave the store.
 */
import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { AgentNotFound } from "../../../dispatch/Dispatcher.js"
import { CapabilityKind, InstanceStatus } from "../../../durable/records.js"
import { InstanceConflict, InstanceNotFound, InvalidInstance, NotInstalled } from "../../../instances/instanceErrors.js"
import {
  ChangeInstance,
  CreateInstance,
  InstallationView,
  InstallCapability,
  InstanceCreated,
  InstanceCursor,
  InstancePage,
  InstanceView,
  nonEmpty
} from "./instanceViews.js"
import { ConversationView } from "./conversationViews.js"

const InstancePath = Schema.Struct({ id: Schema.String })

/** Which agent's instance; may be left out when only one agent has an instance with that id. */
const agentParam = { agent: Schema.optional(Schema.String) }

/** The instances group. */
export class InstancesGroup extends HttpApiGroup.make("instances")
  .add(
    HttpApiEndpoint.get("list", "/api/instances")
      .setUrlParams(Schema.Struct({
        agent: Schema.optional(Schema.String),
        /** Part of the id or of the provisioning key, any case. */
        search: Schema.optional(Schema.String),
        status: Schema.optional(InstanceStatus),
        limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500))),
        after: Schema.optional(InstanceCursor)
      }))
      .addSuccess(InstancePage)
  )
  .add(
    HttpApiEndpoint.post("create", "/api/instances")
      .setPayload(CreateInstance)
      .addSuccess(InstanceCreated, { status: 201 })
      .addError(AgentNotFound, { status: 404 })
      .addError(InstanceNotFound, { status: 404 })
      .addError(InvalidInstance, { status: 400 })
      .addError(InstanceConflict, { status: 409 })
  )
  .add(
    HttpApiEndpoint.get("get", "/api/instances/:id")
      .setPath(InstancePath)
      .setUrlParams(Schema.Struct(agentParam))
      .addSuccess(InstanceView)
      .addError(InstanceNotFound, { status: 404 })
  )
  .add(
    HttpApiEndpoint.patch("change", "/api/instances/:id")
      .setPath(InstancePath)
      .setUrlParams(Schema.Struct(agentParam))
      .setPayload(ChangeInstance)
      .addSuccess(InstanceView)
      .addError(InstanceNotFound, { status: 404 })
      .addError(AgentNotFound, { status: 404 })
      .addError(InvalidInstance, { status: 400 })
      .addError(InstanceConflict, { status: 409 })
  )
  .add(
    HttpApiEndpoint.del("archive", "/api/instances/:id")
      .setPath(InstancePath)
      .setUrlParams(Schema.Struct({ ...agentParam, reason: Schema.optional(Schema.String) }))
      .addSuccess(InstanceView)
      .addError(InstanceNotFound, { status: 404 })
      .addError(InstanceConflict, { status: 409 })
  )
  .add(
    HttpApiEndpoint.post("install", "/api/instances/:id/installations")
      .setPath(InstancePath)
      .setUrlParams(Schema.Struct(agentParam))
      .setPayload(InstallCapability)
      .addSuccess(InstallationView, { status: 201 })
      .addError(InstanceNotFound, { status: 404 })
      .addError(AgentNotFound, { status: 404 })
      .addError(InvalidInstance, { status: 400 })
      .addError(InstanceConflict, { status: 409 })
  )
  .add(
    HttpApiEndpoint.del("uninstall", "/api/instances/:id/installations")
      .setPath(InstancePath)
      .setUrlParams(Schema.Struct({ ...agentParam, kind: CapabilityKind, capability: nonEmpty("capability id") }))
      .addSuccess(HttpApiSchema.NoContent)
      .addError(InstanceNotFound, { status: 404 })
      .addError(NotInstalled, { status: 404 })
      .addError(InstanceConflict, { status: 409 })
  )
  .add(
    HttpApiEndpoint.get("conversations", "/api/instances/:id/conversations")
      .setPath(InstancePath)
      .setUrlParams(Schema.Struct({
        ...agentParam,
        limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 500)))
      }))
      .addSuccess(Schema.Array(ConversationView))
      .addError(InstanceNotFound, { status: 404 })
  )
{}
