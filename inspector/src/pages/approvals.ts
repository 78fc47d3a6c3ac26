/**
 * Approvals: what waits on a person, with the tool's input, to approve or deny; and what was decided.
 */
import { api } from "../api.js"
import { approvalCards } from "../approvalCard.js"
import { h, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"

/** The approvals page. */
export const approvalsPage = (root: HTMLElement) => {
  const pending = h("div", { "data-testid": "pending" })
  const decided = h("div", { "data-testid": "decided" })
  const problem = h("p", { class: "error-line", "data-testid": "page-problem" })
  replace(root, h("h1", {}, "Approvals"), problem, h("h2", {}, "Waiting"), pending, h("h2", {}, "Decided"), decided)
  const card = approvalCards({ decided: () => live.redraw() })
  const draw = async (): Promise<void> => {
    const all = await api.approvals()
    const open = all.filter((a) => a.status === "pending")
    replace(pending, open.length === 0 ? h("p", { class: "muted" }, "Nothing waits on you.") : open.map(card))
    replace(decided, all.filter((a) => a.status !== "pending").reverse().slice(0, 50).map(card))
  }
  const live = liveDraw(draw, { problem, shows: (event) => event.type.startsWith("approval.") })
  return live.stop
}
