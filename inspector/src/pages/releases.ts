/**
 * Releases: what the server was deployed with, newest first: when and by whom, which one new runs
 * start on, how many runs each one started, and what each changed against the one before it; and
 * the history of every deploy, rollback and start, each from the release current before.
 */
import { api, type DeploymentView, type ReleaseSummaryView } from "../api.js"
import { changeCounts, changeLines } from "../../../src/release/summaryText.js"
import { clock, h, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"

/** A summary in a cell: `agents +1 ~1, tools ~1, config ~`, each change listed in the cell's tooltip. */
const changes = (summary: ReleaseSummaryView) => {
  const counts = changeCounts(summary)
  return h("td", { title: changeLines(summary).join("\n") }, counts === "" ? h("span", { class: "muted" }, "nothing changed") : counts)
}

/** The releases page. */
export const releasesPage = (root: HTMLElement) => {
  const list = h("tbody")
  const empty = h("p", { class: "muted", hidden: true }, "No release deployed. A server started with foundry start takes one from foundry deploy; foundry dev serves its project's files as they are saved.")
  const history = h("tbody")
  const problem = h("p", { class: "error-line", "data-testid": "page-problem" })
  replace(root, h("h1", {}, "Releases"), problem,
    h("table", { class: "table", "data-testid": "releases" },
      h("thead", {}, h("tr", {}, ["release", "built", "deployed", "by", "", "runs", "changes"].map((c) => h("th", {}, c)))), list),
    empty,
    h("h2", {}, "History"),
    h("table", { class: "table", "data-testid": "deployments" },
      h("thead", {}, h("tr", {}, ["when", "", "release", "from", "by", "changes"].map((c) => h("th", {}, c)))), history))
  const entry = (d: DeploymentView) =>
    h("tr", { "data-deployment": d.seq },
      h("td", {}, clock(d.deployedAt)),
      h("td", { "data-testid": "action" }, d.action),
      h("td", {}, h("code", {}, d.release)),
      h("td", {}, d.previous === null ? "—" : h("code", {}, d.previous)),
      h("td", {}, d.deployedBy ?? "—"),
      changes(d.summary))
  const draw = async () => {
    const [releases, deployments] = await Promise.all([api.releases(), api.deployments()])
    history.replaceChildren(...deployments.map(entry))
    empty.hidden = releases.length > 0
    list.replaceChildren(...releases.map((r) =>
      h("tr", { "data-release": r.id, class: r.current ? "current" : undefined },
        h("td", {}, h("code", {}, r.id)),
        h("td", {}, clock(r.createdAt)),
        h("td", {}, clock(r.deployedAt)),
        h("td", {}, r.deployedBy ?? "—"),
        h("td", {}, r.current ? h("span", { class: "status ok", "data-testid": "current" }, "current") : null),
        h("td", { "data-testid": "runs" }, r.runs),
        changes(r.summary))))
  }
  // A deploy is not an event: the page asks every 15 s; runs started move the counts sooner.
  return liveDraw(draw, { problem, every: 15_000, shows: (event) => event.type === "run.queued", delay: 500 }).stop
}
