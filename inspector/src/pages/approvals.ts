/**
 * Approvals: what waits on a person, with the tool's input, to approve or deny; and what was decided.
 */
import { api } from "../api.js"
import { approvalCards } from "../approvalCard.js"
import { h, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"

/** The decided approvals the page shows, the newest. */
const decidedShown = 50

/** The approvals page. */
export const approvalsPage = (root: HTMLElement) => {
  const pending = h("div", { "data-testid": "pending" })
  const decided = h("div", { "data-testid": "decided" })
  const problem = h("p", { class: "error-line", "data-testid": "page-problem" })
  replace(root, h("h1", {}, "Approvals"), problem, h("h2", {}, "Waiting"), pending, h("h2", {}, "Decided"), decided)
  const card = approvalCards({ decided: () => live.redraw() })
  // What waits, then the newest decided: every approval there ever was, on each decision, grew
  // with the project.
  const draw = async (): Promise<void> => {
    const open = await api.approvals({ status: "pending", limit: 1000 })
    // The newest, as many as shows the newest decided ones past those that wait.
    const newest = await api.approvals({ limit: Math.min(open.length + decidedShown, 1000) })
    replace(pending, open.length === 0 ? h("p", { class: "muted" }, "Nothing waits on you.") : [...open].reverse().map(card))
    replace(decided, newest.filter((a) => a.status !== "pending").slice(0, decidedShown).map(card))
  }
  const live = liveDraw(draw, { problem, shows: (event) => event.type.startsWith("approval.") })
  return live.stop
}
