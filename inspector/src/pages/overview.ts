/**
 * Overview: the build (broken files and type errors first, the way a dev server shows them),
 * health, runs in progress, pending approvals, recent failures, what runs next.
 */
import { api, type BuildReport, type ClusterStatusView, type RunView } from "../api.js"
import { clock, h, link, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"
import { runStatus } from "../records.js"

const runList = (runs: ReadonlyArray<RunView>, empty: string) =>
  runs.length === 0
    ? h("p", { class: "muted" }, empty)
    : h("ul", { class: "list" }, runs.map((run) =>
      h("li", {}, runStatus(run.status), " ", link(`/runs/${run.id}`, run.agent), " ", h("span", { class: "muted" }, clock(run.createdAt)),
        run.error === undefined ? null : h("div", { class: "error-line" }, run.error))))

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`

/** While a build goes (`foundry dev` after a save): for how long, and what it waits for if it said. */
const buildGoing = (build: BuildReport) => {
  const going = build.inProgress
  if (!build.building || going === null) return null
  const seconds = Math.max(0, Math.round((Date.now() - going.since) / 1000))
  return h("p", { "data-testid": "build-going" },
    h("span", { class: "status running" }, "building"), ` Building… (${seconds} s) build ${going.generation}`,
    going.waitingFor === null ? null : h("div", { class: "muted" }, `waiting for ${going.waitingFor}`))
}

/**
 * The build card: a build going first, then the last build: nothing to say when all is well but its
 * number; every problem listed when not.
 */
const drawBuild = (card: HTMLElement, build: BuildReport) => {
  const types = build.types
  const typeLine = types.state === "off" ? "not checked" : types.state === "checking" ? "checking…" :
    types.state === "ok" ? "no type errors" : plural(types.diagnostics.length, "type error")
  const broken = build.problems.length > 0 || types.state === "errors" || build.restartNeeded !== null
  card.className = broken ? "card card-error" : "card"
  replace(card,
    h("h2", {}, "Build"),
    buildGoing(build),
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
const drawRunners = (card: HTMLElement, cluster: ClusterStatusView) => {
  card.classList.toggle("hidden", cluster.mode !== "cluster")
  if (cluster.mode !== "cluster") return
  replace(card,
    h("h2", {}, `Runners (${cluster.runners.length})`),
    h("ul", { class: "list" }, cluster.runners.map((runner) =>
      h("li", {},
        h("span", { class: `status ${runner.healthy ? "ok" : "failed"}` }, runner.healthy ? "live" : "gone"),
        " ", h("code", {}, runner.address), runner.address === cluster.self ? h("span", { class: "muted" }, " (this one)") : null,
        h("div", { class: "share" }, h("div", { class: "share-fill", style: `width: ${Math.round((100 * runner.shards) / cluster.shardsPerGroup)}%` })),
        h("div", { class: "muted" }, `${plural(runner.shards, "shard")} of ${cluster.shardsPerGroup} · ${plural(runner.executing, "run")} here`)))))
}

/** The runs in progress the overview lists, of each status, at most; and the approvals waiting. */
const runsListed = 20
const approvalsListed = 100

/**
 * The first `shown` of `read` (asked for one more), and how many they are: `20+` when there were
 * more (the API counts none, and the list is not all there is).
 */
const firstOf = <A>(read: ReadonlyArray<A>, shown: number) => ({
  items: read.slice(0, shown),
  count: read.length > shown ? `${shown}+` : String(read.length)
})

/** How often the overview asks for what no event announces: the build, uptime, the cluster's runners. */
const pollEvery = 15_000

/** How often while a build goes: its seconds count up, and its end shows soon after it ends. */
const pollWhileBuilding = 1_000

/**
 * The overview page. Runs, approvals and schedules change with events and are read again on them
 * (a busy project's stream makes one read every two seconds at most); the build, health and
 * runners are not events, and are read every 15 s.
 */
export const overviewPage = (root: HTMLElement) => {
  // Why a part of the page could not be read, until it can.
  const unpolled = h("p", { class: "error-line", "data-testid": "page-problem" })
  const unread = h("p", { class: "error-line", "data-testid": "page-problem" })
  const build = h("section", { class: "card", "data-testid": "build" })
  const health = h("section", { class: "card", "data-testid": "health" })
  const runners = h("section", { class: "card hidden", "data-testid": "runners" })
  const progress = h("section", { class: "card" })
  const waiting = h("section", { class: "card" })
  const failures = h("section", { class: "card" })
  const firings = h("section", { class: "card" })
  replace(root, h("h1", {}, "Overview"), unpolled, unread, h("div", { class: "grid" }, build, health, runners, progress, waiting, failures, firings))
  let soon: ReturnType<typeof setTimeout> | undefined
  const drawPolled = async () => {
    const [report, status, cluster] = await Promise.all([api.build(), api.health(), api.cluster()])
    drawBuild(build, report)
    clearTimeout(soon)
    soon = report.building ? setTimeout(() => polled.redraw(), pollWhileBuilding) : undefined
    replace(health, h("h2", {}, "Health"),
      h("p", {}, h("span", { class: "status ok" }, status.status), ` ${status.agents} agents, up ${Math.round(status.uptimeMs / 1000)} s`))
    drawRunners(runners, cluster)
  }
  const drawLive = async () => {
    const [runningRead, suspendedRead, failed, approvalsRead, schedules] = await Promise.all([
      api.runs(`?status=running&limit=${runsListed + 1}`),
      api.runs(`?status=suspended&limit=${runsListed + 1}`),
      api.runs("?status=failed&limit=5"),
      api.approvals({ status: "pending", limit: approvalsListed + 1 }),
      api.schedules()
    ])
    const running = firstOf(runningRead, runsListed)
    const suspended = firstOf(suspendedRead, runsListed)
    const approvals = firstOf(approvalsRead, approvalsListed)
    // A run waiting on a person is in progress too; the card says how many wait.
    replace(progress, h("h2", {}, `In progress (${running.count} running, ${suspended.count} waiting)`),
      runList([...running.items, ...suspended.items], "Nothing is running."))
    replace(waiting, h("h2", {}, `Waiting on you (${approvals.count})`),
      approvals.items.length === 0 ? h("p", { class: "muted" }, "No pending approvals.") :
        h("ul", { class: "list" }, approvals.items.map((a) => h("li", {}, link("/approvals", a.tool), " in ", link(`/runs/${a.runId}`, a.agent)))))
    replace(failures, h("h2", {}, "Recent failures"), runList(failed, "No failed runs."))
    replace(firings, h("h2", {}, "Next firings (your time)"),
      schedules.length === 0 ? h("p", { class: "muted" }, "No schedules.") :
        h("ul", { class: "list" }, [...schedules].sort((a, b) => (a.nextFire ?? Infinity) - (b.nextFire ?? Infinity)).map((s) =>
          h("li", {}, link("/schedules", s.id), " → ", link(`/agents/${s.agent}`, s.agent), " ",
            h("span", { class: "muted", title: s.reason ?? "" }, s.status !== "active" ? s.status : s.nextFire === null ? "" : clock(s.nextFire))))))
  }
  const polled = liveDraw(drawPolled, { problem: unpolled, every: pollEvery })
  const live = liveDraw(drawLive, {
    problem: unread,
    shows: (event) => event.type.startsWith("run.") || event.type.startsWith("approval.") || event.type === "timer.armed",
    delay: 2000
  })
  return () => {
    clearTimeout(soon)
    polled.stop()
    live.stop()
  }
}
