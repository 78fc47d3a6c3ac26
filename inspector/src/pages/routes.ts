/**
 * Schedules and playbooks, as the project defines them.
 */
import { api, type EventPageView, type FoundryEvent } from "../api.js"
import { clock, errorText, h, link, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"

/** The schedules page: next and last firing, pause and resume. */
export const schedulesPage = (root: HTMLElement) => {
  const list = h("tbody")
  // What a button could not do (a firing that started nothing, say), until the next one works.
  const problem = h("p", { class: "error-line", "data-testid": "schedules-problem" })
  // Why the list could not be read, until it can.
  const unread = h("p", { class: "error-line", "data-testid": "page-problem" })
  replace(root, h("h1", {}, "Schedules"), unread, problem,
    h("table", { class: "table" }, h("thead", {}, h("tr", {}, ["id", "agent", "timing", "status", "next (your time)", "last", ""].map((c) => h("th", {}, c)))), list))
  const act = (id: string, action: "pause" | "resume" | "trigger") =>
    void api.schedule(id, action).then(() => {
      problem.textContent = ""
      live.redraw()
    }, (error) => {
      problem.textContent = errorText(error)
    })
  const draw = async (): Promise<void> => {
    const schedules = await api.schedules()
    list.replaceChildren(...schedules.map((s) =>
      h("tr", { "data-schedule": s.id }, h("td", {}, s.id), h("td", {}, link(`/agents/${s.agent}`, s.agent)),
        h("td", {}, h("code", {}, Object.entries(s.timing).map(([k, v]) => `${k} ${v}`).join(", "))),
        h("td", {}, h("span", { class: `status ${s.status === "active" ? "running" : s.status}` }, s.status),
          s.reason === null ? null : h("div", { class: "muted", "data-testid": "schedule-reason" }, s.reason)),
        // A paused schedule does not fire; its next time counts again once it is resumed.
        h("td", { "data-testid": "next-fire" }, s.status === "paused" ? h("span", { class: "muted" }, "not while paused") : clock(s.nextFire, "—")),
        h("td", {}, s.lastRunId === null ? clock(s.lastFire, "—") : link(`/runs/${s.lastRunId}`, clock(s.lastFire, "—"))),
        h("td", {},
          // A done schedule stays done whatever pause or resume say (the API answers with it unchanged):
          // only a firing by hand still does something.
          s.status === "done" ? null : [
            h("button", { onclick: () => act(s.id, s.status === "paused" ? "resume" : "pause") }, s.status === "paused" ? "Resume" : "Pause"),
            " "
          ],
          h("button", { onclick: () => act(s.id, "trigger") }, "Run now")))))
  }
  // A firing queues a run; an agent arming a timer adds a row, and one pausing or cancelling its timer (which arms none) changes it.
  const live = liveDraw(draw, {
    problem: unread,
    shows: (event) =>
      event.type === "run.queued" || event.type === "timer.armed" || (event.type === "tool.call.completed" && event.data.tool === "foundry_schedules"),
    delay: 300
  })
  return live.stop
}

/** The playbooks page: each playbook's source, and recent deliveries with what each playbook decided and why. */
export const playbooksPage = (root: HTMLElement) => {
  const list = h("tbody")
  const deliveries = h("div", { "data-testid": "deliveries" })
  const problem = h("p", { class: "error-line", "data-testid": "page-problem" })
  replace(root, h("h1", {}, "Playbooks"), problem,
    h("table", { class: "table" }, h("thead", {}, h("tr", {}, ["id", "agent", "source", "file"].map((c) => h("th", {}, c)))), list),
    h("h2", {}, "Recent deliveries"), deliveries)
  void api.routes().then(({ routes }) =>
    list.replaceChildren(...routes.filter((r) => r.kind === "playbook").map((r) =>
      h("tr", {}, h("td", {}, r.id), h("td", {}, link(`/agents/${r.agent ?? ""}`, r.agent ?? "")),
        h("td", {}, h("code", {}, r.webhook === undefined ? `event ${r.event ?? ""}` : `POST ${r.webhook}`)), h("td", { class: "muted" }, r.file)))),
    (error: unknown) => {
      problem.textContent = errorText(error)
    })
  const draw = async (): Promise<void> => {
    const latest = await api.events(new URLSearchParams({ type: "delivery.received", order: "newest", limit: String(shownDeliveries) }))
    const received = latest.events.flatMap((e) => e.type === "delivery.received" ? [e] : [])
    // What the playbooks decided about a delivery comes after it in the log.
    const oldest = received[received.length - 1]
    const all = oldest === undefined ? [] : (await Promise.all(decisionTypes.map((type) => decisionsAfter(type, oldest.seq)))).flat()
    replace(deliveries, received.length === 0 ? h("p", { class: "muted" }, "No deliveries yet.") : received.map((delivery) => {
      const id = delivery.data.deliveryId
      const decisions = all.flatMap((d) => {
        // Playbook events on a webhook name their delivery; those on an internal event name none.
        if (!("deliveryId" in d.data) || d.data.deliveryId !== id) return []
        switch (d.type) {
          case "playbook.dispatched":
            return [h("li", {}, h("span", { class: "status completed" }, "matched"), ` ${d.data.playbook} → `, link(`/runs/${d.data.runId}`, d.agent))]
          case "playbook.skipped":
            return [h("li", {}, h("span", { class: "status cancelled" }, "skipped"), ` ${d.data.playbook}: ${d.data.reason}`)]
          case "playbook.failed":
            return [h("li", {}, h("span", { class: "status failed" }, "failed"), ` ${d.data.playbook}: ${d.data.error}`)]
          default:
            return []
        }
      })
      return h("div", { class: "card", "data-delivery": id },
        h("div", {}, h("b", {}, `/hooks/${delivery.data.webhook}`), h("span", { class: "muted" }, ` · ${id} · ${clock(delivery.time)}`)),
        h("ul", { class: "list" }, decisions))
    }))
  }
  return liveDraw(draw, {
    problem,
    shows: (event) => event.type === "delivery.received" || decisionTypes.some((type) => type === event.type),
    delay: 300
  }).stop
}

const shownDeliveries = 50
const decisionTypes = ["playbook.skipped", "playbook.failed", "playbook.dispatched"] as const
/** Pages of decisions read for one drawing at most: past them, the oldest deliveries shown lack theirs. */
const decisionPages = 5

/**
 * The decisions of `type` about webhook deliveries after `seq`, the newest first, a few pages at
 * most. Those of no run (`runId` empty) are a delivery's own: the decisions about an internal
 * event (a tool's `emit`) are its run's, and a busy project's emits make thousands of them, which
 * read forward from the oldest delivery shown left the newest deliveries without theirs.
 */
const decisionsAfter = async (type: string, seq: number): Promise<ReadonlyArray<FoundryEvent>> => {
  const events: Array<FoundryEvent> = []
  let before: number | undefined
  for (let page = 0; page < decisionPages; page++) {
    const query = new URLSearchParams({ type, runId: "", after: String(seq), order: "newest", limit: "1000" })
    if (before !== undefined) query.set("before", String(before))
    const next: EventPageView = await api.events(query)
    events.push(...next.events)
    if (next.nextBefore === undefined) break
    before = next.nextBefore
  }
  return events
}
