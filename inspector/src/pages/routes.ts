/**
 * Schedules and playbooks, as the project defines them.
 */
import { api } from "../api.js"
import { h, link, replace } from "../dom.js"

/** The schedules page. */
export const schedulesPage = (root: HTMLElement) => {
  const list = h("tbody")
  replace(root, h("h1", {}, "Schedules"),
    h("table", { class: "table" }, h("thead", {}, h("tr", {}, ["id", "agent", "timing", "file"].map((c) => h("th", {}, c)))), list))
  void api.routes().then(({ routes }) =>
    list.replaceChildren(...routes.filter((r) => r.kind === "schedule").map((r) =>
      h("tr", {}, h("td", {}, r.id), h("td", {}, link(`/agents/${r.agent ?? ""}`, r.agent ?? "")),
        h("td", {}, h("code", {}, Object.entries(r.timing ?? {}).map(([k, v]) => `${k} ${v}`).join(", "))), h("td", { class: "muted" }, r.file)))))
  return () => {}
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
