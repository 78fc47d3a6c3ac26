/**
 * The instances group's handlers: `Instances` for every change (it checks, seals secrets and
 * writes the events), `InstanceStorage` for pages, and the store for an instance's conversations
 * and for the agents an id without `?agent=` may belong to.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect, Option } from "effect"
import { CurrentApp } from "../../../compiler/CurrentApp.js"
import { InstanceStorage } from "../../../durable/InstanceStorage.js"
import type { InstanceRef } from "../../../durable/records.js"
import type { InstallationRecord, InstanceRecord, InstanceStatus } from "../../../durable/records.js"
import { Store } from "../../../durable/Store.js"
import { InstanceNotFound } from "../../../instances/instanceErrors.js"
import { type InstanceDetail, Instances } from "../../../instances/Instances.js"
import { FoundryApi } from "../api/FoundryApi.js"
import type { InstallationView, InstanceSummary, InstanceView } from "../api/instanceViews.js"
import { noSuch } from "../../../text/closest.js"
import { ambiguousInstance } from "./ambiguousInstance.js"
import { pageOf } from "./pageOf.js"
import { orStoreUnavailable } from "./storeUnavailable.js"
import { conversationView } from "./toView.js"

const instanceFields = (instance: InstanceRecord) => ({
  agent: instance.agent,
  id: instance.id,
  provisioningKey: instance.provisioningKey,
  status: instance.status,
  statusReason: instance.statusReason,
  context: instance.context,
  createdAt: instance.createdAt,
  updatedAt: instance.updatedAt
})

/** The stored config only: it holds `"<redacted>"` for each secret; the sealed `secrets` stay in the store. */
const installationView = (installation: InstallationRecord): InstallationView => ({
  kind: installation.kind,
  id: installation.capability,
  config: installation.config,
  createdAt: installation.createdAt,
  updatedAt: installation.updatedAt
})

const instanceView = ({ installations, instance }: InstanceDetail): InstanceView => ({
  ...instanceFields(instance),
  installations: installations.map(installationView)
})

/** Handlers for `/api/instances`. */
export const InstancesLive = HttpApiBuilder.group(FoundryApi, "instances", (handlers) =>
  Effect.gen(function*() {
    const instances = yield* Instances
    const storage = yield* InstanceStorage
    const store = yield* Store
    const current = yield* CurrentApp

    /**
     * The instance a request names: `agent` may be left out when exactly one agent of the build
     * has an instance with that id.
     */
    const refOf = Effect.fn("InstancesApi.refOf")(function*(id: string, agent: string | undefined) {
      const app = yield* current.get
      if (agent !== undefined) {
        // An agent no longer in the build may still have its instances; one that has none, and is no agent, is a slip.
        if (!app.agents.has(agent) && Option.isNone(yield* storage.get(agent, id))) {
          return yield* new InstanceNotFound({ agent, instance: id, message: noSuch("agent", agent, [...app.agents.keys()]) })
        }
        return { agent, id }
      }
      const owners = yield* store.agentsWithInstance(id, [...app.agents.keys()])
      const [owner, ...others] = owners
      if (owner === undefined) {
        return yield* new InstanceNotFound({
          agent: "",
          instance: id,
          message: `no agent has an instance "${id}"; list them with GET /api/instances?search=${encodeURIComponent(id)}`
        })
      }
      if (others.length > 0) return yield* ambiguousInstance(id, owners)
      return { agent: owner, id }
    })

    const list = Effect.fn("InstancesApi.list")(function*(query: {
      readonly agent?: string | undefined
      readonly search?: string | undefined
      readonly status?: InstanceStatus | undefined
      readonly limit?: number | undefined
      readonly after?: InstanceRef | undefined
    }) {
      const limit = query.limit ?? 50
      // One more than asked says whether another page follows, so the last page's `next` is null.
      const found = yield* storage.page({ agent: query.agent, search: query.search, status: query.status, after: query.after, limit: limit + 1 })
      const { next, rows } = pageOf(found, limit, ({ instance }) => ({ agent: instance.agent, id: instance.id }))
      return { instances: rows.map(({ installations, instance }): InstanceSummary => ({ ...instanceFields(instance), installations })), next }
    })

    return handlers
      .handle("list", ({ urlParams }) => list(urlParams).pipe(orStoreUnavailable))
      .handle("create", ({ payload }) =>
        instances.create(payload).pipe(
          Effect.map((made) => ({ ...instanceView(made), created: made.created })),
          orStoreUnavailable
        ))
      .handle("get", ({ path, urlParams }) =>
        refOf(path.id, urlParams.agent).pipe(Effect.flatMap(instances.get), Effect.map(instanceView), orStoreUnavailable))
      .handle("change", ({ path, payload, urlParams }) =>
        refOf(path.id, urlParams.agent).pipe(
          Effect.flatMap((ref) => instances.change(ref, payload)),
          Effect.map(instanceView),
          orStoreUnavailable
        ))
      .handle("archive", ({ path, urlParams }) =>
        refOf(path.id, urlParams.agent).pipe(
          Effect.flatMap((ref) => instances.archive(ref, urlParams.reason)),
          Effect.map(instanceView),
          orStoreUnavailable
        ))
      .handle("install", ({ path, payload, urlParams }) =>
        refOf(path.id, urlParams.agent).pipe(
          Effect.flatMap((ref) => instances.install(ref, payload)),
          Effect.map(installationView),
          orStoreUnavailable
        ))
      .handle("uninstall", ({ path, urlParams }) =>
        refOf(path.id, urlParams.agent).pipe(
          Effect.flatMap((ref) => instances.uninstall(ref, urlParams.kind, urlParams.capability)),
          orStoreUnavailable
        ))
      .handle("conversations", ({ path, urlParams }) =>
        refOf(path.id, urlParams.agent).pipe(
          // Archived instances answer too: archiving keeps the history.
          Effect.flatMap(instances.get),
          Effect.flatMap(({ instance }) => store.listConversations({ agent: instance.agent, instanceId: instance.id, limit: urlParams.limit ?? 100 })),
          Effect.map((conversations) => conversations.map(conversationView)),
          orStoreUnavailable
        ))
  }))
