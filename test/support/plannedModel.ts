/**
 * The planned model for in-process tests: the run's user message is a `Plan` (see
 * durableProject.ts); turn 1 makes its tool calls, later turns answer with the tool results.
 */
import * as Scripted from "../../src/models/scripted.js"
import type { Plan } from "./durableProject.js"

const isPlan = (value: unknown): value is Plan => typeof value === "object" && value !== null

/** The planned model. */
export const plannedModel = Scripted.make((request, index) => {
  const users = request.messages.filter((m) => m._tag === "user")
  const last = users[users.length - 1]
  const parsed: unknown = JSON.parse(last?.content ?? "{}")
  const plan: Plan = isPlan(parsed) ? parsed : {}
  const from = last === undefined ? 0 : request.messages.lastIndexOf(last)
  const results = request.messages.slice(from).flatMap((m) => m._tag === "tool" ? [m.content] : [])
  if (index === 0 || plan.repeat === true) {
    const calls = plan.calls ?? []
    return { delay: plan.delay ?? 0, toolCalls: calls, text: calls.length === 0 ? "nothing to do" : "" }
  }
  return { delay: plan.finalDelay ?? 0, text: `done: ${results.join(" | ")}` }
}, "planned")
