/**
 * Overview: the build (broken files and type errors first, the way a dev server shows them),
 * health, runs in progress, pending approvals, recent failures, what runs next.
 */
import { api, type BuildReport, type ClusterStatusView, redrawOn, type RunView } from "../api.js"
import { clock, h, link, replace } from "../dom.js"
import { runStatus } from "../records.js"

const runList = (runs: ReadonlyArray<RunView>, empty: string) =>
  runs.length === 0
    ? h("p", { class: "muted" }, empty)
    : h("ul", { class: "list" }, runs.map((run) =>
      h("li", {}, runStatus(run.status), " ", link(`/runs/${run.id}`, run.agent), " ", h("span", { class: "muted" }, clock(run.createdAt)),
        run.error === undefined ? null : h("div", { class: "error-line" }, run.error))))

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/** The build card: nothing to say when all is well but the build number; every problem listed when not. */
const buildCard = (build: BuildReport) => {
  const types = build.types
  const typeLine = types.state === "off" ? "not checked" : types.state === "checking" ? "checking…" :
    types.state === "ok" ? "no type errors" : plural(types.diagnostics.length, "type error")
  const broken = build.problems.length > 0 || types.state === "errors" || build.restartNeeded !== null
  return h("section", { class: broken ? "card card-error" : "card", "data-testid": "build" },
    h("h2", {}, "Build"),
    h("p", {}, h("span", { class: `status ${broken ? "failed" : "ok"}` }, broken ? "problems" : "ok"),
      ` build ${build.generation} since ${clock(build.builtAt)}; ${typeLine}`),
    build.restartNeeded === null ? null : h("p", { class: "error-line" }, build.restartNeeded),
    build.problems.length === 0 ? null : h("p", { "data-testid": "build-serving" }, build.partial
      ? "Serving only the routes that build: the files below, and what uses them, are left out until they are fixed."
      : `The last build failed: build ${build.generation} still serves, as it was before these files broke.`),
    build.problems.length === 0 ? null : h("ul", { class: "list", "data-testid": "build-problems" }, build.problems.map((p) =>
      h("li", {}, h("code", {}, p.file), ": ", p.problem, h("div", { class: "muted" }, "fix: ", p.fix)))),
    types.diagnostics.length === 0 ? null : h("ul", { class: "list", "data-testid": "type-errors" }, types.diagnostics.map((d) =>
      h("li", {}, h("code", {}, `${d.file}:${d.line}:${d.column}`), " ", h("span", { class: "error-line" }, d.message)))))
}

/** The runners of a cluster: each one's share of the shards as a bar, its runs, whether it is alive. */
const runnersCard = (cluster: ClusterStatusView) =>
  h("section", { class: "card", "data-testid": "runners" },
    h("h2", {}, `Runners (${cluster.runners.length})`),
    h("ul", { class: "list" }, cluster.runners.map((runner) =>
      h("li", {},
        h("span", { class: `status ${runner.healthy ? "ok" : "failed"}` }, runner.healthy ? "live" : "gone"),
        " ", h("code", {}, runner.address), runner.address === cluster.self ? h("span", { class: "muted" }, " (this one)") : null,
        h("div", { class: "share" }, h("div", { class: "share-fill", style: `width: ${Math.round((100 * runner.shards) / cluster.shardsPerGroup)}%` })),
        h("div", { class: "muted" }, `${plural(runner.shards, "shard")} of ${cluster.shardsPerGroup} · ${plural(runner.executing, "run")} here`)))))

/** The overview page. */
export const overviewPage = (root: HTMLElement) => {
  const body = h("div", { class: "grid" })
  replace(root, h("h1", {}, "Overview"), body)
  const draw = async () => {
    const [build, health, running, suspended, failed, approvals, schedules, cluster] = await Promise.all([
      api.build(),
      api.health(),
      api.runs("?status=running&limit=20"),
      api.runs("?status=suspended&limit=20"),
      api.runs("?status=failed&limit=5"),
      api.approvals("pending"),
      api.schedules(),
      api.cluster()
    ])
    replace(body,
      buildCard(build),
      h("section", { class: "card", "data-testid": "health" },
        h("h2", {}, "Health"),
        h("p", {}, h("span", { class: "status ok" }, health.status), ` ${health.agents} agents, up ${Math.round(health.uptimeMs / 1000)} s`)),
      cluster.mode === "cluster" ? runnersCard(cluster) : null,
      // A run waiting on a person is in progress too; the card says how many wait.
      h("section", { class: "card" }, h("h2", {}, `In progress (${running.length} running, ${suspended.length} waiting)`),
        runList([...running, ...suspended], "Nothing is running.")),
      h("section", { class: "card" }, h("h2", {}, `Waiting on you (${approvals.length})`),
        approvals.length === 0 ? h("p", { class: "muted" }, "No pending approvals.") :
          h("ul", { class: "list" }, approvals.map((a) => h("li", {}, link("/approvals", a.tool), " in ", link(`/runs/${a.runId}`, a.agent))))),
      h("section", { class: "card" }, h("h2", {}, "Recent failures"), runList(failed, "No failed runs.")),
      h("section", { class: "card" }, h("h2", {}, "Next firings (your time)"),
        schedules.length === 0 ? h("p", { class: "muted" }, "No schedules.") :
          h("ul", { class: "list" }, [...schedules].sort((a, b) => (a.nextFire ?? Infinity) - (b.nextFire ?? Infinity)).map((s) =>
            h("li", {}, link("/schedules", s.id), " → ", link(`/agents/${s.agent}`, s.agent), " ",
              h("span", { class: "muted" }, s.status !== "active" ? s.status : s.nextFire === null ? "" : clock(s.nextFire))))))
    )
  }
  void draw()
  // Builds are not events: while the page is open, it asks every two seconds.
  const polling = setInterval(() => void draw(), 2000)
  const unsubscribe = redrawOn((event) => event.type !== "model.delta", () => void draw(), 200)
  return () => {
    clearInterval(polling)
    unsubscribe()
  }
}
