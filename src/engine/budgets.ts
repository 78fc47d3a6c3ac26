/**
 * Budgets: an agent's spending limits (its own `budget`, else the config's, field by field), and
 * which one a run has gone over. Per-run limits are checked after each model turn against the
 * run's totals; per-instance daily limits before each turn against the instance's runs started
 * since UTC midnight.
 */
import type { Budget } from "../definitions/configFields.js"
import type { UsageSums } from "../durable/records.js"

/** A budget's name, as the config and agent files spell it. */
export type BudgetName = Exclude<keyof Budget, "onExceeded">

/** One budget in force, and the file that set it. */
interface Limit {
  readonly name: BudgetName
  readonly limit: number
  readonly setIn: "agent" | "config"
}

/** The agent's budgets in force: its own fields first, the config's for the rest. */
export const budgetsOf = (agent: Budget, config: Budget): ReadonlyArray<Limit> => {
  const names: ReadonlyArray<BudgetName> = ["maxTokensPerRun", "maxCostPerRun", "maxTokensPerInstancePerDay", "maxCostPerInstancePerDay"]
  return names.flatMap((name): ReadonlyArray<Limit> => {
    const own = agent[name]
    const shared = config[name]
    return own !== undefined ? [{ name, limit: own, setIn: "agent" }] : shared !== undefined ? [{ name, limit: shared, setIn: "config" }] : []
  })
}

/** A budget that was gone over: what it allows and what was used. */
export interface Exceeded {
  readonly budget: BudgetName
  readonly limit: number
  readonly used: number
  readonly setIn: "agent" | "config"
}

const isCost = (name: BudgetName) => name === "maxCostPerRun" || name === "maxCostPerInstancePerDay"
/** The cost budgets in force (which a model without a price cannot count towards). */
export const costBudgets = (budgets: ReadonlyArray<Limit>): ReadonlyArray<BudgetName> => budgets.flatMap((b) => isCost(b.name) ? [b.name] : [])

const usedOf = (name: BudgetName, sums: UsageSums) => isCost(name) ? sums.costUsd : sums.inputTokens + sums.outputTokens

/** The first per-run budget the run's totals are over. */
export const runOverBudget = (budgets: ReadonlyArray<Limit>, totals: UsageSums): Exceeded | undefined =>
  overBy(budgets, ["maxTokensPerRun", "maxCostPerRun"], totals, (used, limit) => used > limit)

/** The first per-instance daily budget that today's usage has reached: no more turns today. */
export const instanceOverBudget = (budgets: ReadonlyArray<Limit>, today: UsageSums): Exceeded | undefined =>
  overBy(budgets, ["maxTokensPerInstancePerDay", "maxCostPerInstancePerDay"], today, (used, limit) => used >= limit)

/** Whether any per-instance daily budget applies (so today's usage is worth reading). */
export const hasDailyBudget = (budgets: ReadonlyArray<Limit>): boolean =>
  budgets.some((b) => b.name === "maxTokensPerInstancePerDay" || b.name === "maxCostPerInstancePerDay")

const overBy = (
  budgets: ReadonlyArray<Limit>,
  names: ReadonlyArray<BudgetName>,
  sums: UsageSums,
  over: (used: number, limit: number) => boolean
): Exceeded | undefined => {
  for (const budget of budgets) {
    if (!names.includes(budget.name)) continue
    const used = usedOf(budget.name, sums)
    if (over(used, budget.limit)) return { budget: budget.name, limit: budget.limit, used, setIn: budget.setIn }
  }
  return undefined
}

const amount = (name: BudgetName, value: number) =>
  isCost(name) ? `$${Number(value.toFixed(6))}` : `${value} tokens`

/**
 * Why the run fails, naming the budget and where to raise it: the agent file when it set the
 * budget, else the config file (or the agent file, for that agent alone).
 */
export const budgetMessage = (
  exceeded: Exceeded,
  where: { readonly agentFile: string; readonly configFile: string; readonly instance: string }
): string => {
  const used = amount(exceeded.budget, exceeded.used)
  const limit = isCost(exceeded.budget) ? `$${exceeded.limit}` : String(exceeded.limit)
  const what = exceeded.budget === "maxTokensPerRun" || exceeded.budget === "maxCostPerRun"
    ? `the run used ${used}, over ${exceeded.budget} ${limit}`
    : `instance "${where.instance}" used ${used} today (UTC), reaching ${exceeded.budget} ${limit}`
  const raise = exceeded.setIn === "agent"
    ? `raise it in ${where.agentFile} budget`
    : `raise it in ${where.configFile} budget, or for this agent alone in ${where.agentFile} budget`
  return `${what} (${raise})`
}
