/**
 * Runs: a live, filterable list. Filters live in the URL, rows update in place, so neither the
 * reader's scroll position nor the filters move when runs change.
 */
import { api, redrawOn, type RunView } from "../api.js"
import { clock, duration, h, link, replace } from "../dom.js"
import { dispatchesFor, type RunSource, runSource } from "../runSource.js"
import { instanceHref, runStatus } from "../records.js"

const row = (run: RunView, source: RunSource) =>
  h("tr", { "data-run": run.id },
    // Each link goes where its text says: the run from its status and message, the agent from its name.
    h("td", {}, link(`/runs/${run.id}`, runStatus(run.status))),
    h("td", {}, link(`/agents/${run.agent}`, run.agent)),
    h("td", {}, link(instanceHref(run.agent, run.instanceId), run.instanceId)),
    h("td", { "data-source": source.kind }, source.label),
    h("td", { class: "clip" }, link(`/runs/${run.id}`, run.input)),
    h("td", {}, clock(run.createdAt)),
    h("td", {}, duration(run.finishedAt !== undefined && run.startedAt !== undefined ? run.finishedAt - run.startedAt : undefined)))

/** The runs page. */
export const runsPage = (root: HTMLElement) => {
  const params = new URLSearchParams(location.search)
  const status = h("select", { name: "status" },
    ["", "queued", "running", "suspended", "completed", "failed", "cancelled"].map((s) =>
      h("option", { value: s, ...(params.get("status") === s ? { selected: true } : {}) }, s === "" ? "any status" : s)))
  const agent = h("input", { name: "agent", placeholder: "agent", value: params.get("agent") ?? "" })
  const tbody = h("tbody")
  const none = h("p", { class: "muted", hidden: true, "data-testid": "no-runs" })
  const apply = () => {
    const query = new URLSearchParams()
    if (status.value !== "") query.set("status", status.value)
    if (agent.value !== "") query.set("agent", agent.value)
    history.replaceState(null, "", `/runs${query.size > 0 ? `?${query}` : ""}`)
    void draw()
  }
  status.addEventListener("change", apply)
  agent.addEventListener("change", apply)
  replace(root,
    h("h1", {}, "Runs"),
    h("div", { class: "filters" }, status, agent),
    h("table", { class: "table" },
      h("thead", {}, h("tr", {}, ["status", "agent", "instance", "source", "message", "started", "duration"].map((c) => h("th", {}, c)))),
      tbody),
    none)
  const draw = async () => {
    const query = new URLSearchParams({ limit: "200" })
    if (status.value !== "") query.set("status", status.value)
    if (agent.value !== "") query.set("agent", agent.value)
    const runs = await api.runs(`?${query}`)
    const dispatches = await dispatchesFor(runs)
    // Rows are replaced in place, keyed by run id, so the page does not jump.
    const existing = new Map([...tbody.querySelectorAll<HTMLTableRowElement>("tr[data-run]")].map((tr) => [tr.dataset.run, tr]))
    const rows = runs.map((run) => {
      const fresh = row(run, runSource(run, dispatches))
      const old = existing.get(run.id)
      if (old !== undefined) {
        old.replaceWith(fresh)
      }
      return fresh
    })
    tbody.replaceChildren(...rows)
    none.hidden = rows.length > 0
    none.textContent = status.value === "" && agent.value === "" ? "No runs yet." : "No runs match these filters."
  }
  void draw()
  // `playbook.dispatched` names the playbook of a run already listed.
  return redrawOn((event) => event.type.startsWith("run.") || event.type === "playbook.dispatched", () => void draw())
}
