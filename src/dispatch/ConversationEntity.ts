/**
 * A conversation as an `@effect/cluster` entity: sharded over the runners by its id, so that one
 * runner at a time executes its runs. The cluster carries only placement: a message says "this
 * conversation has work" or "cancel that run"; what the work is, and its order, is in the store.
 */
import { Entity } from "@effect/cluster"
import { Rpc } from "@effect/rpc"
import { Schema } from "effect"
import { RunRecord } from "../durable/records.js"
import { StoreError } from "../durable/StoreError.js"
import { RunAlreadyEnded, RunNotFound } from "./Dispatcher.js"

/** The conversation entity. */
export const ConversationEntity = Entity.make("Conversation", [
  /** The conversation has runs to execute (queued, left by a dead runner, or `runId` to resume). */
  Rpc.make("Wake", { payload: { runId: Schema.String } }),
  /** Cancels the run where it executes; `reason` answers each tool call it leaves open. */
  Rpc.make("Cancel", {
    payload: { runId: Schema.String, reason: Schema.String },
    success: RunRecord,
    error: Schema.Union(RunNotFound, RunAlreadyEnded, StoreError)
  }),
  /** The address of the runner the conversation lives on (asked of the conversation itself, so it is never stale). */
  Rpc.make("Where", { success: Schema.String })
])
