/**
 * An execution's budget checks: the instance's daily budgets before each model turn, the run's own
 * after each turn that calls tools; a budget gone over fails the run, or with `onExceeded: "ask"`
 * waits for a person. A final answer is kept whatever it cost: it is paid for, and nothing more
 * would be spent.
 */
import { Clock, Effect, Option } from "effect"
import type { UsageSums } from "../durable/records.js"
import { ApprovalStorage } from "../durable/ApprovalStorage.js"
import type { StoreError } from "../durable/StoreError.js"
import { Store } from "../durable/Store.js"
import type { TurnUsage } from "../journal/journalRecords.js"
import type { LeaseLost } from "../journal/RunJournal.js"
import { budgetMessage, budgetsOf, costBudgets, type Exceeded, hasDailyBudget, instanceOverBudget, runOverBudget } from "./budgets.js"
import { failRun, type RunOutcome } from "./failRun.js"
import type { RunContext } from "./RunContext.js"
import { askForApproval } from "./askForApproval.js"
import { suspendOnApproval } from "./suspendOnApproval.js"
import { warnUnpriced } from "./unpricedWarning.js"

/** A budget check that lets the run go on. */
const withinBudget: Effect.Effect<RunOutcome | undefined> = Effect.succeed(undefined)

/**
 * The agent's budgets for one execution: the instance's daily ones before each turn, the run's
 * own after each (its totals kept here as each turn adds to them; the store holds them from
 * earlier executions). A budget gone over fails the run, after an event that says which and
 * where it is set; with `onExceeded: "ask"` the run waits instead for a person, who lets it go on
 * over that budget (for the rest of the run) or ends it. Each check returns how the execution
 * ends, or `undefined` to go on. A model of the run's (`models`, by name) with no price is
 * warned of when a cost budget is set: the budget cannot count its turns.
 */
export const makeBudgetCheck = (context: RunContext, models: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const store = yield* Store
    const approvals = yield* ApprovalStorage
    const { agent, app, journal, run, step } = context
    const budgets = budgetsOf(agent.definition.budget, app.table.config.budget)
    const policy = agent.definition.budget.onExceeded ?? app.table.config.budget.onExceeded ?? "fail"
    const configFile = app.table.configFile ?? "foundry.config.ts"
    yield* warnUnpriced(models, costBudgets(budgets), app.table.config.prices, configFile)
    const fail = (exceeded: Exceeded, why = "") =>
      failRun(run, step, journal, budgetMessage(exceeded, { agentFile: agent.file, configFile, instance: run.instanceId }) + why)

    const exceededEvent = (exceeded: Exceeded): void =>
      step.emit("budget.exceeded", "run", {
        budget: exceeded.budget,
        limit: exceeded.limit,
        used: exceeded.used,
        setIn: exceeded.setIn === "agent" ? agent.file : configFile
      })

    /**
     * Asks a person once per run and budget; their decision stands for the rest of the run, or
     * for the conversation's later runs too when they approved it for the conversation.
     */
    // The budgets this run goes past on a conversation's grant: said once, not at every turn.
    const granted = new Set<string>()
    const askOnce = (exceeded: Exceeded) =>
      Effect.gen(function*() {
        const key = `budget:${exceeded.budget}`
        const found = yield* approvals.find(run.id, key)
        if (Option.isSome(found) && found.value.status === "approved") return undefined
        if (Option.isNone(found) && !granted.has(key)) {
          // A person let an earlier run of the conversation go past this budget, for the whole conversation.
          const grant = yield* approvals.findGrant(run.conversationId, key)
          if (Option.isSome(grant)) {
            granted.add(key)
            exceededEvent(exceeded)
            step.emit("approval.decided", `approval:${key}`, { toolCallId: key, tool: key, status: "approved", grantedBy: grant.value.approvalId }, "run")
          }
        }
        if (granted.has(key)) return undefined
        if (Option.isSome(found) && found.value.status !== "pending") {
          return yield* fail(exceeded, found.value.status === "expired"
            ? "; nobody decided whether it may go on before the approval expired"
            : `; a person decided it may not go on${found.value.reason === null ? "" : `: ${found.value.reason}`}`)
        }
        const input = { budget: exceeded.budget, limit: exceeded.limit, used: exceeded.used }
        // As at a tool's approval gate: a new one stored with the suspension's step, and a request
        // found pending while the run is not suspended (stored before its step by an earlier version) told now.
        const asked = Option.isSome(found)
          ? found.value
          : yield* askForApproval(step, run, { toolCallId: key, tool: key, input }, app.table.config.approvalTimeout)
        if (Option.isNone(found) || run.status !== "suspended") {
          exceededEvent(exceeded)
          step.emit("approval.requested", `approval:${key}`, { approvalId: asked.id, toolCallId: key, tool: key, input, expiresAt: asked.expiresAt }, "run")
        }
        return yield* suspendOnApproval(step, { reason: "budget", approvalId: asked.id, tool: key, budget: exceeded.budget })
      })
    // Decided while the suspension was written: asked again, which finds the decision.
    const askPerson = (exceeded: Exceeded): Effect.Effect<RunOutcome | undefined, StoreError | LeaseLost> =>
      Effect.flatMap(Effect.provideService(askOnce(exceeded), ApprovalStorage, approvals), (outcome) => outcome === "decided" ? askPerson(exceeded) : Effect.succeed(outcome))

    const overBudget = (exceeded: Exceeded): Effect.Effect<RunOutcome | undefined, StoreError | LeaseLost> =>
      policy === "ask" ? askPerson(exceeded) : Effect.suspend(() => {
        exceededEvent(exceeded)
        return fail(exceeded)
      })
    // Sums of numbers the run and its turns already hold: plain objects, nothing to check.
    let totals: UsageSums = {
      runs: 1,
      inputTokens: run.inputTokens,
      outputTokens: run.outputTokens,
      costUsd: run.costUsd,
      unpricedTurns: run.unpricedTurns
    }
    const spent = (usage: TurnUsage): void => {
      totals = {
        runs: 1,
        inputTokens: totals.inputTokens + usage.inputTokens,
        outputTokens: totals.outputTokens + usage.outputTokens,
        costUsd: totals.costUsd + (usage.costUsd ?? 0),
        unpricedTurns: totals.unpricedTurns + (usage.costUsd === null ? 1 : 0)
      }
    }
    const checkRun = () => {
      const exceeded = runOverBudget(budgets, totals)
      return exceeded === undefined ? withinBudget : overBudget(exceeded)
    }
    return {
      /** The instance's usage today (its runs started since UTC midnight, this one included) against its daily budgets. */
      beforeTurn: !hasDailyBudget(budgets) ? withinBudget : Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        const today = yield* store.sumUsage({ agent: run.agent, instanceId: run.instanceId, since: now - (now % 86_400_000) })
        const exceeded = instanceOverBudget(budgets, today)
        return exceeded === undefined ? undefined : yield* overBudget(exceeded)
      }),
      /**
       * The run's totals as the store had them when this execution began: a run resumed after a
       * person's decision on its budget learns the decision here, before it goes on.
       */
      atStart: checkRun(),
      /** Adds a summary call's usage to the run's totals, unchecked: the turn it was made for checks them after its answer. */
      spent,
      /** Adds the turn's usage to the run's totals and checks them. */
      afterTurn: (usage: TurnUsage) => {
        spent(usage)
        return checkRun()
      },
      /**
       * Adds a final answer's usage to the run's totals: a budget it went past is said, and the
       * run ends with its answer. Failing it then (or asking whether to go on) would throw away an
       * answer already paid for, to save nothing: the run would spend no more.
       */
      afterAnswer: (usage: TurnUsage): Effect.Effect<undefined> =>
        Effect.sync(() => {
          spent(usage)
          const exceeded = runOverBudget(budgets, totals)
          if (exceeded !== undefined) exceededEvent(exceeded)
          return undefined
        })
    }
  })
