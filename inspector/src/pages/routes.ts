/**
 * Schedules and playbooks, as the project defines them.
 */
import { api, onEvent } from "../api.js"
import { h, link, replace } from "../dom.js"

/** The schedules page: next and last firing, pause and resume. */
export const schedulesPage = (root: HTMLElement) => {
  const list = h("tbody")
  replace(root, h("h1", {}, "Schedules"),
    h("table", { class: "table" }, h("thead", {}, h("tr", {}, ["id", "agent", "timing", "status", "next", "last", ""].map((c) => h("th", {}, c)))), list))
  const when = (ms: number | null) => ms === null ? "—" : new Date(ms).toLocaleString()
  const draw = (): void => {
    void api.schedules().then((schedules) =>
      list.replaceChildren(...schedules.map((s) =>
        h("tr", { "data-schedule": s.id }, h("td", {}, s.id), h("td", {}, link(`/agents/${s.agent}`, s.agent)),
          h("td", {}, h("code", {}, Object.entries(s.timing).map(([k, v]) => `${k} ${v}`).join(", "))),
          h("td", {}, h("span", { class: `status ${s.status === "active" ? "running" : s.status}` }, s.status)),
          h("td", {}, when(s.nextFire)),
          h("td", {}, s.lastRunId === null ? when(s.lastFire) : link(`/runs/${s.lastRunId}`, when(s.lastFire))),
          h("td", {},
            h("button", { onclick: () => void api.schedule(s.id, s.status === "paused" ? "resume" : "pause").then(draw) }, s.status === "paused" ? "Resume" : "Pause"),
            " ",
            h("button", { onclick: () => void api.schedule(s.id, "trigger").then(draw) }, "Run now"))))))
  }
  draw()
  return onEvent((event) => {
    if (event.type === "run.queued") draw()
  })
}

/** The playbooks page. */
export const playbooksPage = (root: HTMLElement) => {
  const list = h("tbody")
  replace(root, h("h1", {}, "Playbooks"),
    h("table", { class: "table" }, h("thead", {}, h("tr", {}, ["id", "agent", "source", "file"].map((c) => h("th", {}, c)))), list))
  void api.routes().then(({ routes }) =>
    list.replaceChildren(...routes.filter((r) => r.kind === "playbook").map((r) =>
      h("tr", {}, h("td", {}, r.id), h("td", {}, link(`/agents/${r.agent ?? ""}`, r.agent ?? "")),
        h("td", {}, h("code", {}, `POST ${r.webhook ?? ""}`)), h("td", { class: "muted" }, r.file)))))
  return () => {}
}
