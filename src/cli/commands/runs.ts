/**
 * `foundry runs` and `foundry approvals`: a running server's runs and the approvals waiting on a
 * person, from the terminal through its HTTP API: list them, cancel a run, approve or deny a call.
 * The server and token are found as for `foundry instances`.
 */
import { HttpClientRequest } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import type { RunStatus } from "../../durable/records.js"
import { ApprovalView, RunView } from "../../transports/http/api/views.js"
import { givenFields } from "../givenFields.js"
import { serverApi, type ServerHint, type ServerOptions } from "../serverApi.js"
import { clip, say, style, table, when } from "../terminal.js"

const hint: ServerHint = { flag: "--url", start: "foundry dev", params: { agent: "--agent", status: "--status", limit: "--limit" } }

/** `text` on one line, cut to `width` characters. */
const oneLine = (text: string, width: number): string => clip(text.replace(/\s+/g, " ").trim(), width)

/** `foundry runs`: the newest runs, of an agent or a status when given. */
export const list = (options: ServerOptions & {
  readonly agent: Option.Option<string>
  readonly status: Option.Option<RunStatus>
  readonly limit: number
}) =>
  Effect.gen(function*() {
    const { read } = yield* serverApi(options, hint)
    const runs = yield* read(
      HttpClientRequest.get("/api/runs", {
        urlParams: { limit: String(options.limit), ...givenFields({ agent: options.agent, status: options.status }) }
      }),
      Schema.Array(RunView)
    )
    if (runs.length === 0) return yield* say(Option.isNone(options.agent) && Option.isNone(options.status) ? "no runs" : "no runs match")
    yield* table(
      ["ID", "AGENT", "INSTANCE", "STATUS", "CREATED", "INPUT"],
      runs.map((run) => [run.id, run.agent, run.instanceId, run.status, when(run.createdAt), oneLine(run.input, 40)])
    )
    if (runs.length === options.limit) yield* say(style.dim(`the newest ${runs.length} runs: --limit shows more, --agent and --status narrow them`))
  })

/** `foundry runs cancel`: cancels a run that has not ended, wherever it executes. */
export const cancel = (options: ServerOptions & { readonly run: string }) =>
  Effect.gen(function*() {
    const { read } = yield* serverApi(options, hint)
    const run = yield* read(HttpClientRequest.post(`/api/runs/${encodeURIComponent(options.run)}/cancel`), RunView)
    yield* say(style.green(`cancelled run ${run.id} of agent ${run.agent}`))
  })

/** `foundry approvals`: the approvals waiting on a person, oldest first. */
export const pending = (options: ServerOptions) =>
  Effect.gen(function*() {
    const { read } = yield* serverApi(options, hint)
    const approvals = yield* read(HttpClientRequest.get("/api/approvals", { urlParams: { status: "pending" } }), Schema.Array(ApprovalView))
    if (approvals.length === 0) return yield* say("no approvals are waiting")
    yield* table(
      ["ID", "RUN", "AGENT", "TOOL", "EXPIRES", "INPUT"],
      approvals.map((a) => [a.id, a.runId, a.agent, a.tool, when(a.expiresAt), oneLine(JSON.stringify(a.input) ?? "", 50)])
    )
    yield* say(style.dim("decide with foundry approvals approve <id> or foundry approvals deny <id> [--reason ...]"))
  })

/** `foundry approvals approve` and `deny`: a person's decision on one call; the run goes on. */
export const decide = (options: ServerOptions & {
  readonly approval: string
  readonly decision: "approve" | "deny"
  readonly reason: Option.Option<string>
  readonly conversation: boolean
}) =>
  Effect.gen(function*() {
    const { read } = yield* serverApi(options, hint)
    const decided = yield* read(
      HttpClientRequest.post(`/api/approvals/${encodeURIComponent(options.approval)}`).pipe(HttpClientRequest.bodyUnsafeJson({
        decision: options.decision,
        ...givenFields({ reason: options.reason }),
        ...(options.conversation ? { scope: "conversation" } : {})
      })),
      ApprovalView
    )
    yield* say(style.green(
      decided.status === "approved"
        ? `approved ${decided.tool} for run ${decided.runId}${decided.scope === "conversation" ? " and the rest of its conversation" : ""}: the run goes on`
        : `denied ${decided.tool} for run ${decided.runId}: the run goes on without the call`
    ))
  })
