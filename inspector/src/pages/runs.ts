/**
 * Runs: a live, filterable list, paged back with "Load more". Filters live in the URL, rows update
 * in place, so neither the reader's scroll position nor the filters move when runs change.
 */
import { api, type RunView } from "../api.js"
import { clock, duration, errorText, h, link, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"
import { runPageSize, withNewestPage } from "../runPages.js"
import { type Dispatch, dispatchesFor, type RunSource, runSource } from "../runSource.js"
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

/** The runs page: the newest runs, kept live; "Load more" adds older pages, which stay across redraws. */
export const runsPage = (root: HTMLElement) => {
  const params = new URLSearchParams(location.search)
  const status = h("select", { name: "status" },
    ["", "queued", "running", "suspended", "completed", "failed", "cancelled"].map((s) =>
      h("option", { value: s, ...(params.get("status") === s ? { selected: true } : {}) }, s === "" ? "any status" : s)))
  const agent = h("input", { name: "agent", placeholder: "agent", value: params.get("agent") ?? "" })
  const tbody = h("tbody")
  const none = h("p", { class: "muted", hidden: true, "data-testid": "no-runs" })
  const count = h("p", { class: "muted", "data-testid": "runs-count" })
  const problem = h("p", { class: "error-line", "data-testid": "page-problem" })
  const more = h("button", { class: "hidden", "data-testid": "load-more", onclick: () => void loadMore() }, "Load more")
  /** The runs shown, newest first; whether older ones may follow; the playbooks that started them. */
  let shown: ReadonlyArray<RunView> = []
  let olderToLoad = false
  const dispatches = new Map<string, Dispatch>()
  // Each new filter starts a generation; an answer to an older one arrives too late to show.
  let generation = 0
  const filters = () => {
    const query = new URLSearchParams({ limit: String(runPageSize) })
    if (status.value !== "") query.set("status", status.value)
    if (agent.value !== "") query.set("agent", agent.value)
    return query
  }
  const apply = () => {
    const query = filters()
    query.delete("limit")
    history.replaceState(null, "", `/runs${query.size > 0 ? `?${query}` : ""}`)
    generation += 1
    shown = []
    live.redraw()
  }
  status.addEventListener("change", apply)
  agent.addEventListener("change", apply)
  replace(root,
    h("h1", {}, "Runs"),
    h("div", { class: "filters" }, status, agent),
    problem,
    count,
    h("table", { class: "table" },
      h("thead", {}, h("tr", {}, ["status", "agent", "instance", "source", "message", "started", "duration"].map((c) => h("th", {}, c)))),
      tbody),
    none,
    h("p", {}, more))
  const show = (runs: ReadonlyArray<RunView>) => {
    shown = runs
    // Every row is made anew: the table keeps its height, so the page does not jump.
    tbody.replaceChildren(...runs.map((run) => row(run, runSource(run, dispatches))))
    none.hidden = runs.length > 0
    none.textContent = status.value === "" && agent.value === "" ? "No runs yet." : "No runs match these filters."
    count.textContent = olderToLoad ? `showing the latest ${runs.length}; more to load` : ""
    more.classList.toggle("hidden", !olderToLoad)
  }
  // The newest page again; the older pages loaded stay below it.
  const draw = async () => {
    const mine = generation
    const head = await api.runs(`?${filters()}`)
    const found = await dispatchesFor(head)
    if (mine !== generation) return
    for (const [run, dispatch] of found) dispatches.set(run, dispatch)
    const { runs, older } = withNewestPage(shown, head, olderToLoad)
    olderToLoad = older
    show(runs)
  }
  const loadMore = async () => {
    const last = shown[shown.length - 1]
    if (last === undefined) return
    const mine = generation
    const query = filters()
    query.set("before", last.id)
    more.setAttribute("disabled", "")
    try {
      const page = await api.runs(`?${query}`)
      const found = await dispatchesFor(page)
      if (mine !== generation) return
      for (const [run, dispatch] of found) dispatches.set(run, dispatch)
      olderToLoad = page.length === runPageSize
      show([...shown, ...page])
      problem.textContent = ""
    } catch (error) {
      if (mine === generation) problem.textContent = errorText(error)
    } finally {
      more.removeAttribute("disabled")
    }
  }
  // `playbook.dispatched` names the playbook of a run already listed.
  const live = liveDraw(draw, { problem, shows: (event) => event.type.startsWith("run.") || event.type === "playbook.dispatched", delay: 300 })
  return live.stop
}
