/**
 * Approvals: what waits on a person, with the tool's input, to approve or deny; and what was decided.
 */
import { api, onEvent } from "../api.js"
import { approvalCards } from "../approvalCard.js"
import { h, replace } from "../dom.js"

/** The approvals page. */
export const approvalsPage = (root: HTMLElement) => {
  const pending = h("div", { "data-testid": "pending" })
  const decided = h("div", { "data-testid": "decided" })
  replace(root, h("h1", {}, "Approvals"), h("h2", {}, "Waiting"), pending, h("h2", {}, "Decided"), decided)
  const card = approvalCards({ decided: () => void draw() })
  const draw = async () => {
    const all = await api.approvals()
    const open = all.filter((a) => a.status === "pending")
    replace(pending, open.length === 0 ? h("p", { class: "muted" }, "Nothing waits on you.") : open.map(card))
    replace(decided, all.filter((a) => a.status !== "pending").reverse().slice(0, 50).map(card))
  }
  void draw()
  return onEvent((event) => {
    if (event.type.startsWith("approval.")) void draw()
  })
}
