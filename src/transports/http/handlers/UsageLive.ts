/**
 * The usage group's handler: the store's sums, with days as UTC dates.
 */
import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import type { GroupedUsage, UsageSums } from "../../../durable/records.js"
import { Store } from "../../../durable/Store.js"
import { FoundryApi } from "../api/FoundryApi.js"
import type { UsageRow } from "../api/UsageGroup.js"
import { orStoreUnavailable } from "./storeUnavailable.js"

const sums = (usage: UsageSums) => ({
  runs: usage.runs,
  inputTokens: usage.inputTokens,
  outputTokens: usage.outputTokens,
  costUsd: usage.costUsd,
  unpricedTurns: usage.unpricedTurns
})

const row = (group: GroupedUsage): UsageRow => ({
  ...sums(group),
  ...(group.day === undefined ? {} : { day: new Date(group.day).toISOString().slice(0, 10) }),
  ...(group.agent === undefined ? {} : { agent: group.agent }),
  ...(group.instanceId === undefined ? {} : { instanceId: group.instanceId }),
  ...(group.conversationId === undefined ? {} : { conversationId: group.conversationId })
})

/** Handlers for `/api/usage`. */
export const UsageLive = HttpApiBuilder.group(FoundryApi, "usage", (handlers) =>
  Effect.gen(function*() {
    const store = yield* Store
    return handlers.handle("sum", ({ urlParams }) =>
      Effect.gen(function*() {
        const groupBy = urlParams.groupBy ?? "day"
        const filter = {
          agent: urlParams.agent,
          instanceId: urlParams.instance,
          conversationId: urlParams.conversation,
          since: urlParams.since,
          until: urlParams.until
        }
        const groups = yield* store.sumUsageBy(filter, groupBy)
        const total = yield* store.sumUsage(filter)
        return { groupBy, rows: groups.map(row), total: sums(total) }
      }).pipe(orStoreUnavailable))
  }))
