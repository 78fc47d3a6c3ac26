/**
 * What a cluster runner is set up with, and the error that says why this process cannot be one.
 * Kept apart from the cluster dispatcher so that a process that is not a runner never loads
 * `@effect/cluster` (docs/performance.md, "Startup loads what it serves").
 */
import { type Duration, Schema } from "effect"

/** Where this runner listens for the others, and how the cluster is cut. */
export interface ClusterSettings {
  readonly host: string
  readonly port: number
  /** Shards per group: the same on every runner. */
  readonly shardsPerGroup: number
  /** How long a runner that stopped renewing its registration keeps its shards: the failover delay. */
  readonly runnerTimeout: Duration.DurationInput
  /** Whether the network between runners is private (required to listen beyond loopback). */
  readonly trustedNetwork: boolean
}

/** This process cannot be a cluster runner: why, and how to fix it. */
export class ClusterError extends Schema.TaggedError<ClusterError>()("ClusterError", {
  message: Schema.String
}) {}
