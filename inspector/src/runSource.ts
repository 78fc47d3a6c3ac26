/**
 * What started a run, as the runs list names it: a schedule, an agent's own timer, a playbook (on
 * a webhook, or on an event of another run), a parent run, a steer, or a client of the API.
 *
 * A schedule or timer run carries `source: { schedule, scheduledFor }` (agent timers are
 * schedules whose id starts with `agent:`). A playbook's run carries nothing that names the
 * playbook, so the playbook comes from the `playbook.dispatched` event that names the run.
 */
import { api, type FoundryEvent, type RunView } from "./api.js"
import { type Child, h, link } from "./dom.js"

/** The playbook that started a run: on a webhook's delivery, or on an event another run emitted. */
export interface Dispatch {
  readonly playbook: string
  readonly webhook: string | undefined
  readonly event: string | undefined
}

/** What started a run: `kind` for tests and styling, `label` for the reader. */
export interface RunSource {
  readonly kind: "schedule" | "timer" | "webhook" | "event" | "child" | "steer" | "other" | "api"
  readonly label: ReadonlyArray<Child>
}

const text = (value: unknown): string | undefined => typeof value === "string" ? value : undefined

/** The run a `playbook.dispatched` event started, and how: on a webhook's delivery or on an internal event. */
const dispatchOf = (event: FoundryEvent): readonly [string, Dispatch] | undefined => {
  if (event.type !== "playbook.dispatched") return undefined
  const data = event.data
  return [data.runId, {
    playbook: data.playbook,
    webhook: "webhook" in data ? data.webhook : undefined,
    event: "event" in data ? data.event : undefined
  }]
}

// Enough for every run a page of 200 shows, unless thousands of other runs were dispatched meanwhile.
const maxPages = 10

/** The playbooks that started any of `runs`, by run id (a run is dispatched after it is created). */
export const dispatchesFor = async (runs: ReadonlyArray<RunView>): Promise<ReadonlyMap<string, Dispatch>> => {
  const found = new Map<string, Dispatch>()
  if (runs.length === 0) return found
  const since = Math.min(...runs.map((run) => run.createdAt))
  let after: number | undefined
  for (let page = 0; page < maxPages; page++) {
    const query = new URLSearchParams({ type: "playbook.dispatched", since: String(since), limit: "1000" })
    if (after !== undefined) query.set("after", String(after))
    const { events, nextAfter } = await api.events(query)
    for (const event of events) {
      const dispatch = dispatchOf(event)
      if (dispatch !== undefined) found.set(...dispatch)
    }
    if (nextAfter === undefined) break
    after = nextAfter
  }
  return found
}

/** What started `run`, given the playbook dispatches of its time. */
export const runSource = (run: RunView, dispatches: ReadonlyMap<string, Dispatch>): RunSource => {
  const schedule = text(run.source?.["schedule"])
  if (schedule !== undefined) {
    return schedule.startsWith("agent:")
      ? { kind: "timer", label: ["timer ", link("/schedules", schedule.slice("agent:".length))] }
      : { kind: "schedule", label: ["schedule ", link("/schedules", schedule)] }
  }
  const dispatch = dispatches.get(run.id)
  if (dispatch?.webhook !== undefined) {
    return { kind: "webhook", label: ["playbook ", link("/playbooks", dispatch.playbook), h("span", { class: "muted" }, ` on /hooks/${dispatch.webhook}`)] }
  }
  if (dispatch !== undefined && run.parentRunId !== undefined) {
    return {
      kind: "event",
      label: ["playbook ", link("/playbooks", dispatch.playbook), h("span", { class: "muted" }, ` on ${dispatch.event ?? "an event"} of `), link(`/runs/${run.parentRunId}`, "run")]
    }
  }
  if (run.parentRunId !== undefined) return { kind: "child", label: ["child of ", link(`/runs/${run.parentRunId}`, "run")] }
  if (run.steeredFrom !== undefined) return { kind: "steer", label: ["steer of ", link(`/runs/${run.steeredFrom}`, "run")] }
  // A source this list does not know yet is still shown as the server recorded it, never as `api`.
  if (run.source !== undefined) {
    return { kind: "other", label: [Object.entries(run.source).map(([key, value]) => `${key} ${text(value) ?? JSON.stringify(value)}`).join(", ")] }
  }
  return { kind: "api", label: ["api"] }
}
