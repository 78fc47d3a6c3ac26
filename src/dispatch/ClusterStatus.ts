/**
 * Where work runs: the runners of a cluster, the shards each holds, and which runner owns a
 * conversation. A single process answers that it runs everything itself.
 */
import { Context, Effect, Layer, Schema } from "effect"
import type { StoreError } from "../durable/StoreError.js"

/** A runner as it last reported itself. */
export class RunnerView extends Schema.Class<RunnerView>("RunnerView")({
  address: Schema.String,
  executor: Schema.String,
  shards: Schema.Number,
  executing: Schema.Number,
  startedAt: Schema.Number,
  updatedAt: Schema.Number,
  /** Whether the cluster counts it among its live runners. */
  healthy: Schema.Boolean
}) {}

/** The cluster as this process sees it. */
export class ClusterView extends Schema.Class<ClusterView>("ClusterView")({
  mode: Schema.Literal("local", "cluster"),
  /** This process's runner address (`local` for a single process). */
  self: Schema.String,
  shardsPerGroup: Schema.Number,
  runners: Schema.Array(RunnerView)
}) {}

/** Which runner owns a conversation now. */
export class ConversationPlacement extends Schema.Class<ConversationPlacement>("ConversationPlacement")({
  conversationId: Schema.String,
  shard: Schema.Number,
  /** The runner holding the shard, or null while it moves between runners. */
  runner: Schema.NullOr(Schema.String)
}) {}

/** The cluster's status. */
export class ClusterStatus extends Context.Tag("foundry/ClusterStatus")<ClusterStatus, {
  readonly view: Effect.Effect<ClusterView, StoreError>
  readonly locate: (conversationId: string) => Effect.Effect<ConversationPlacement, StoreError>
}>() {}

/** A single process: every conversation lives here. */
export const layerLocal = Layer.succeed(ClusterStatus, {
  view: Effect.succeed(new ClusterView({ mode: "local", self: "local", shardsPerGroup: 1, runners: [] })),
  locate: (conversationId) => Effect.succeed(new ConversationPlacement({ conversationId, shard: 1, runner: "local" }))
})
