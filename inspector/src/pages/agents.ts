/**
 * Agents: the route table; an agent's page with its model (and the one it runs on, when that
 * differs), tools (their input schemas, and whether they ask for approval), schedules, playbooks,
 * environment, and, live, its runs, tokens and cost per day (SVG charts), latency percentiles,
 * first instances and recent runs.
 */
import { api, type RouteView, type RunView } from "../api.js"
import { type Child, counted, duration, h, json, link, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"
import { barChart, dollars, percentile, usageLine } from "../usage.js"
import { instanceHref, instanceStatus, runStatus } from "../records.js"

/** The agents page. */
export const agentsPage = (root: HTMLElement) => {
  const table = h("tbody")
  const problem = h("p", { class: "error-line", "data-testid": "page-problem" })
  replace(root, h("h1", {}, "Agents"), problem,
    h("table", { class: "table" }, h("thead", {}, h("tr", {}, ["kind", "id", "file", ""].map((c) => h("th", {}, c)))), table))
  // No event changes the route table: drawn once, and again only until it could be read.
  const draw = async (): Promise<void> => {
    const { routes } = await api.routes()
    table.replaceChildren(...routes.map((r) =>
      h("tr", {}, h("td", {}, r.kind), h("td", {}, r.kind === "agent" ? link(`/agents/${r.id}`, r.id) : r.id),
        h("td", { class: "muted" }, r.file), h("td", { class: "muted" }, r.description ?? r.webhook ?? ""))))
  }
  return liveDraw(draw, { problem }).stop
}

/** Milliseconds from start to end of the completed runs. */
const latencies = (runs: ReadonlyArray<RunView>): ReadonlyArray<number> =>
  runs.flatMap((r) => r.status === "completed" && r.startedAt !== undefined && r.finishedAt !== undefined ? [r.finishedAt - r.startedAt] : [])

/** The parts of an agent's page that its runs change: activity, latency, instances, recent runs. */
const activity = async (id: string) => {
  const since = Date.now() - 30 * 24 * 60 * 60 * 1000
  const [runs, instances, usage] = await Promise.all([
    api.runs(`?agent=${encodeURIComponent(id)}&limit=200`),
    api.instances(new URLSearchParams({ agent: id, limit: "20" })),
    api.usage(`?agent=${encodeURIComponent(id)}&groupBy=day&since=${since}`)
  ])
  const completed = latencies(runs)
  return [
    h("h2", {}, "Activity (30 days)"),
    h("p", { class: "muted", "data-testid": "agent-usage" }, `${counted(usage.total.runs, "run")} · ${usageLine(usage.total)}`),
    h("div", { class: "charts", "data-testid": "agent-charts" },
      barChart("runs per day", usage.rows.map((r) => ({ label: r.day ?? "", value: r.runs })), (n) => String(n)),
      barChart("tokens per day", usage.rows.map((r) => ({ label: r.day ?? "", value: r.inputTokens + r.outputTokens })), (n) => n.toLocaleString()),
      barChart("cost per day", usage.rows.map((r) => ({ label: r.day ?? "", value: r.costUsd })), dollars)),
    h("p", { "data-testid": "agent-latency" }, "Run latency (last 200 completed, waits on people included): ",
      completed.length === 0
        ? h("span", { class: "muted" }, "no completed run yet")
        : [50, 95, 99].map((p) => `p${p} ${duration(percentile(completed, p))}`).join(" · ")),
    h("h2", {}, "Instances"),
    h("p", { class: "muted" }, instances.next === null ? counted(instances.instances.length, "instance") : `the first ${instances.instances.length}`,
      " · ", link(`/instances?agent=${encodeURIComponent(id)}`, "all instances of this agent")),
    h("ul", { class: "list", "data-testid": "instances" }, instances.instances.map((instance) =>
      h("li", {}, instanceStatus(instance.status), " ", link(instanceHref(instance.agent, instance.id), instance.id), " ",
        h("span", { class: "muted" }, [instance.provisioningKey, `${instance.installations} installed`].filter((part) => part !== null).join(" · "))))),
    h("h2", {}, "Recent runs"),
    h("ul", { class: "list", "data-testid": "agent-runs" }, runs.slice(0, 20).map((r) => h("li", {}, runStatus(r.status), " ", link(`/runs/${r.id}`, r.input))))
  ]
}

/** What an agent is, drawn once: its model, tools, subagents, schedules, playbooks and environment. */
const description = (agent: RouteView, routes: ReadonlyArray<RouteView>): ReadonlyArray<Child | ReadonlyArray<Child>> => {
  const tools = routes.filter((r) => r.kind === "tool" && (agent.tools ?? []).includes(r.id))
  return [
    h("h1", {}, agent.id),
    h("p", {}, agent.description ?? "", h("span", { class: "muted" }, ` · ${agent.file} · model ${agent.model ?? ""}`),
      agent.runsOn === undefined ? null
        : h("span", { class: "warn-line", "data-testid": "agent-runs-on" }, ` · runs on ${agent.runsOn.model}: ${agent.runsOn.reason}`)),
    h("h2", {}, "Tools"),
    tools.length === 0 ? h("p", { class: "muted" }, "No tools.") : tools.map((t) =>
      h("details", { class: "card" }, h("summary", {}, h("b", {}, t.id), " ", t.description ?? "",
        (t.requires ?? []).length === 0 ? null : h("span", { class: "muted" }, ` · requires ${(t.requires ?? []).join(", ")}`),
        t.approval === undefined ? null
          : h("span", { class: "warn-line" }, t.approval === "always" ? " · asks for approval" : " · asks for approval by input")),
        h("pre", {}, json(t.input)))),
    (agent.subagents ?? []).length === 0 ? null : [
      h("h2", {}, "Subagents"),
      h("ul", { class: "list", "data-testid": "subagents" }, (agent.subagents ?? []).map((s) =>
        h("li", {}, link(`/agents/${s.agent}`, s.agent), h("span", { class: "muted" }, ` · the tool ${s.tool}`))))
    ],
    h("h2", {}, "Schedules and playbooks"),
    h("ul", { class: "list" },
      (agent.schedules ?? []).map((s) => h("li", {}, "schedule ", link("/schedules", s))),
      (agent.playbooks ?? []).map((p) => h("li", {}, "playbook ", link("/playbooks", p)))),
    agent.environment === undefined ? null : h("p", {}, "Environment: ", agent.environment)
  ]
}

/** One agent's page: what it is drawn once, what its runs change redrawn as they happen. */
export const agentPage = (root: HTMLElement, [id = ""]: ReadonlyArray<string>) => {
  const live = h("div", { "data-testid": "agent-activity" })
  const problem = h("p", { class: "error-line", "data-testid": "page-problem" })
  replace(root, h("h1", {}, id), problem)
  // The route table is read until the agent is found in it (or found missing); then only its activity.
  let found: "not yet" | "agent" | "no such agent" = "not yet"
  const draw = async (): Promise<void> => {
    if (found === "not yet") {
      const { routes } = await api.routes()
      const agent = routes.find((r) => r.kind === "agent" && r.id === id)
      found = agent === undefined ? "no such agent" : "agent"
      if (agent === undefined) replace(root, h("h1", {}, "No such agent"), h("p", {}, id))
      else replace(root, ...description(agent, routes), problem, live)
    }
    if (found === "agent") replace(live, await activity(id))
  }
  return liveDraw(draw, { problem, shows: (event) => event.agent === id && event.type.startsWith("run."), delay: 300 }).stop
}
