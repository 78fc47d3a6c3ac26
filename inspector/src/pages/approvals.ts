/**
 * Approvals: what waits on a person, with the tool's input, to approve or deny; and what was decided.
 */
import { api, type ApprovalView, onEvent } from "../api.js"
import { clock, h, json, link, replace } from "../dom.js"

const card = (approval: ApprovalView, redraw: () => void) =>
  h("div", { class: `card approval ${approval.status}`, "data-approval": approval.id },
    h("div", {}, h("b", {}, approval.tool), " for ", link(`/runs/${approval.runId}`, approval.agent),
      h("span", { class: "muted" }, ` · asked ${clock(approval.createdAt)}`),
      approval.status === "pending" ? h("span", { class: "muted" }, ` · expires ${clock(approval.expiresAt)}`) : h("span", { class: `status ${approval.status}` }, approval.status)),
    h("pre", {}, json(approval.input)),
    approval.reason === undefined ? null : h("p", { class: "muted" }, approval.reason),
    approval.status !== "pending" ? null : h("div", { class: "actions" },
      h("button", { class: "approve", onclick: () => void api.decide(approval.id, "approve").then(redraw) }, "Approve"),
      h("button", { class: "approve-conversation", onclick: () => void api.decide(approval.id, "approve", "conversation").then(redraw) },
        "Approve for this conversation"),
      h("button", { class: "deny", onclick: () => void api.decide(approval.id, "deny").then(redraw) }, "Deny")))

/** The approvals page. */
export const approvalsPage = (root: HTMLElement) => {
  const pending = h("div", { "data-testid": "pending" })
  const decided = h("div")
  replace(root, h("h1", {}, "Approvals"), pending, h("h2", {}, "Decided"), decided)
  const draw = async () => {
    const all = await api.approvals()
    const open = all.filter((a) => a.status === "pending")
    replace(pending, open.length === 0 ? h("p", { class: "muted" }, "Nothing waits on you.") : open.map((a) => card(a, draw)))
    replace(decided, all.filter((a) => a.status !== "pending").reverse().slice(0, 50).map((a) => card(a, draw)))
  }
  void draw()
  return onEvent((event) => {
    if (event.type.startsWith("approval.")) void draw()
  })
}
