/**
 * An approval as a card, the same wherever it shows (the approvals page, its run, its
 * conversation): the tool and its input; while it waits, buttons to approve it, approve the tool for
 * the conversation, or deny it, with a reason the model reads; once decided, what was decided,
 * when, and why. A decision that came too late (decided elsewhere, or expired) says so on the card
 * that shows what it is now.
 */
import { api, type ApprovalView } from "./api.js"
import { clock, errorText, h, json, link } from "./dom.js"

/** What the card's buttons may do, and what happens after. */
export interface ApprovalCardOptions {
  /** Called once a decision is taken (to redraw the page). */
  readonly decided: () => void
  /** Whether the card names the run it belongs to (not on the run's own page). */
  readonly showRun?: boolean
}

/** Why the reader's own decision did not apply, by approval id. */
type Notes = Map<string, string>

const decisionLine = (approval: ApprovalView, note: string | undefined) =>
  h("div", {},
    h("p", { class: "muted", "data-testid": "approval-decision" },
      h("span", { class: `status ${approval.status}` }, approval.status),
      approval.scope === "conversation" ? " for the rest of the conversation" : "",
      approval.decidedAt === undefined ? "" : ` at ${clock(approval.decidedAt)}`,
      approval.reason === undefined ? "" : ` · ${approval.reason}`),
    note === undefined ? null : h("p", { class: "error-line", "data-testid": "approval-note" }, `Your decision did not apply: ${note}`))

const actions = (approval: ApprovalView, decided: () => void, notes: Notes) => {
  const reason = h("input", { name: "reason", placeholder: "reason (optional; the agent reads it)", autocomplete: "off" })
  const problem = h("p", { class: "error-line hidden" })
  const decide = (decision: "approve" | "deny", scope: "once" | "conversation" = "once") => {
    const why = reason.value.trim()
    api.decide(approval.id, decision, scope, why === "" ? undefined : why).then(decided, (error) => {
      problem.textContent = errorText(error)
      problem.classList.remove("hidden")
      notes.set(approval.id, errorText(error))
      decided()
    })
  }
  return h("div", { class: "actions" },
    h("button", { class: "approve", onclick: () => decide("approve") }, "Approve"),
    h("button", { class: "approve-conversation", onclick: () => decide("approve", "conversation") }, "Approve for this conversation"),
    reason,
    h("button", { class: "deny", onclick: () => decide("deny") }, "Deny"),
    problem)
}

/** The card of one approval. */
const approvalCard = (approval: ApprovalView, { decided, showRun = true }: ApprovalCardOptions, notes: Notes) =>
  h("div", { class: `card approval ${approval.status}`, "data-approval": approval.id },
    h("div", {}, h("b", {}, approval.tool),
      approval.status === "pending" ? " waits for your approval" : "",
      showRun ? [" · ", link(`/runs/${approval.runId}`, `run of ${approval.agent}`)] : null,
      h("span", { class: "muted" }, ` · asked ${clock(approval.createdAt)}`),
      approval.status === "pending" ? h("span", { class: "muted" }, ` · expires ${clock(approval.expiresAt)}`) : null),
    h("pre", {}, json(approval.input)),
    approval.status === "pending" ? actions(approval, decided, notes) : decisionLine(approval, notes.get(approval.id)))

/**
 * Cards for the approvals a page shows, each made once per approval and state: a page redraws on
 * live events, and a reason half typed into a waiting card must outlive the redraw.
 */
export const approvalCards = (options: ApprovalCardOptions) => {
  const made = new Map<string, HTMLElement>()
  const notes: Notes = new Map()
  return (approval: ApprovalView): HTMLElement => {
    const key = `${approval.id} ${approval.status}`
    const existing = made.get(key)
    if (existing !== undefined) return existing
    const card = approvalCard(approval, options, notes)
    made.set(key, card)
    return card
  }
}
