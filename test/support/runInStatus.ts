/** A run of agent `worker` (`run_1`, conversation `cnv_1`) as stored with `status`, for tests of what acts on a run's status. */
import { RunRecord, type RunStatus } from "../../src/durable/records.js"

export const runIn = (status: RunStatus) =>
  new RunRecord({
    id: "run_1",
    agent: "worker",
    instanceId: "default",
    conversationId: "cnv_1",
    status,
    input: "pay",
    output: null,
    error: null,
    createdAt: 0,
    startedAt: 0,
    finishedAt: null
  })
