/**
 * Every error of discovery: each broken route file gives one `RouteError` whose `file` is that
 * file, whose message names it, and whose problem and fix say what is wrong and what to do.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { agentFile, discoverProject, errorFor, goodProject, onlyErrorFor, routeErrorsOf, toolFile } from "./support.js"

const scheduleOf = (agentExpression: string, imports = "") =>
  `import { defineSchedule } from "foundry"
${imports}
export default defineSchedule({ every: "1 hour", agent: ${agentExpression}, message: "wake up" })
`

const support = { "agents/support/agent.ts": agentFile() }

describe("exports", () => {
  it.scoped("a route file without a default export", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ ...support, "schedules/daily.ts": `export const schedule = 1\n` })
      const error = onlyErrorFor(errors, "schedules/daily.ts")
      expect(error.problem).toBe("the file has no default export")
      expect(error.fix).toContain("export default define")
    }))

  it.scoped("a schedule file that default-exports an agent", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "schedules/daily.ts": agentFile() })
      const error = onlyErrorFor(errors, "schedules/daily.ts")
      expect(error.problem).toContain("the default export is a")
      expect(error.problem).toContain("agent (defineAgent)")
      expect(error.problem).toContain("must export a schedule")
      expect(error.fix).toContain("export default defineSchedule({ ... })")
      expect(error.fix).toContain("agents/<path>/agent.ts")
    }))

  it.scoped("an agent.ts that default-exports a tool", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "agents/a/agent.ts": toolFile() })
      const error = onlyErrorFor(errors, "agents/a/agent.ts")
      expect(error.problem).toContain("tool (defineTool)")
      expect(error.problem).toMatch(/must export an? agent$/)
      expect(error.fix).toContain("export default defineAgent({ ... })")
      expect(error.fix).toContain("*.tool.ts")
    }))

  it.scoped("a tool file that default-exports an agent", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "tools/echo.tool.ts": agentFile() })
      const error = onlyErrorFor(errors, "tools/echo.tool.ts")
      expect(error.problem).toContain("agent (defineAgent)")
      expect(error.problem).toContain("must export a tool")
      expect(error.fix).toContain("defineTool")
    }))

  it.scoped("a default export that is not a definition at all", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "environments/box.ts": `export default 42\n` })
      const error = onlyErrorFor(errors, "environments/box.ts")
      expect(error.problem).toContain("not a Foundry definition")
      expect(error.problem).toMatch(/must export an? environment$/)
      expect(error.fix).toBe("export default defineEnvironment({ ... })")
    }))

  it.scoped("an object that only looks like a definition is not one", () =>
    Effect.gen(function*() {
      const lookalike = `export default { description: "x", model: "demo", tools: [], maxTurns: 3 }\n`
      const errors = yield* routeErrorsOf({ "agents/a/agent.ts": lookalike })
      expect(onlyErrorFor(errors, "agents/a/agent.ts").problem).toContain("not a Foundry definition")
    }))

  it.scoped("a config file that exports something else", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ ...support, "foundry.config.ts": agentFile() })
      const error = onlyErrorFor(errors, "foundry.config.ts")
      expect(error.problem).toContain("must export a config")
      expect(error.fix).toBe("export default defineConfig({ ... })")
    }))
})

describe("ids", () => {
  it.scoped("a schedule in both .ts and .js is a duplicate id, naming both files", () =>
    Effect.gen(function*() {
      const schedule = scheduleOf("support", `import support from "../agents/support/agent.js"`)
      const errors = yield* routeErrorsOf({ ...support, "schedules/daily.ts": schedule, "schedules/daily.js": schedule })
      const error = onlyErrorFor(errors, "schedules/daily.ts")
      expect(error.problem).toBe(`duplicate schedule id "daily": schedules/daily.js has the same id`)
      expect(error.fix).toContain("schedules/daily.js")
      expect(error.fix).toContain("schedules/daily.ts")
    }))

  it.scoped("an agent tool in tools/ and next to agent.ts with the same name is a duplicate id", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.ts": agentFile(),
        "agents/a/tools/x.tool.ts": toolFile(),
        "agents/a/x.tool.ts": toolFile()
      })
      const error = onlyErrorFor(errors, "agents/a/x.tool.ts")
      expect(error.problem).toContain(`duplicate tool id "a/x"`)
      expect(error.problem).toContain("agents/a/tools/x.tool.ts")
    }))

  it.scoped("an agent and a tool may share an id: ids are per kind", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject({
        "agents/a/agent.ts": agentFile(),
        "agents/a/b.tool.ts": toolFile(),
        "agents/a/b/agent.ts": agentFile()
      })
      expect(table.agents.map((r) => r.id).sort()).toEqual(["a", "a/b"])
      // agents/a/b.tool.ts is in the folder of agent a, not inside agent a/b.
      expect(table.tools.map((r) => [r.id, r.agent])).toEqual([["a/b", "a"]])
    }))

  it.scoped("an invalid agent id, with the valid name as fix", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "agents/Support/agent.ts": agentFile() })
      const error = onlyErrorFor(errors, "agents/Support/agent.ts")
      expect(error.problem).toContain(`invalid id "Support"`)
      expect(error.fix).toBe(`rename "Support" to "support"`)
    }))

  it.scoped("an invalid schedule id, with the valid name as fix", () =>
    Effect.gen(function*() {
      const schedule = scheduleOf("support", `import support from "../agents/support/agent.js"`)
      const errors = yield* routeErrorsOf({ ...support, "schedules/daily_review.ts": schedule })
      const error = onlyErrorFor(errors, "schedules/daily_review.ts")
      expect(error.problem).toContain(`invalid id "daily_review"`)
      expect(error.fix).toBe(`rename "daily_review" to "daily-review"`)
    }))

  it.scoped("a schedule's instance that no instance id can be", () =>
    Effect.gen(function*() {
      const schedule = `import { defineSchedule } from "foundry"
import support from "../agents/support/agent.js"
export default defineSchedule({ every: "1 hour", agent: support, instance: "acme corp", message: "wake up" })
`
      const errors = yield* routeErrorsOf({ ...support, "schedules/daily.ts": schedule })
      const error = onlyErrorFor(errors, "schedules/daily.ts")
      expect(error.problem).toBe(`instance "acme corp" is not an instance id`)
      expect(error.fix).toContain("1-128 letters, digits")
    }))

  it.scoped("a schedule's overlap, misfire, every or message of the wrong kind: named, in .js where no type check stops it", () =>
    Effect.gen(function*() {
      const scheduleWith = (fields: string) => `import { defineSchedule } from "foundry"
import support from "../agents/support/agent.js"
export default defineSchedule({ agent: support, ${fields} })
`
      const problemOf = (fields: string) =>
        Effect.map(routeErrorsOf({ ...support, "schedules/daily.js": scheduleWith(fields) }), (errors) => onlyErrorFor(errors, "schedules/daily.js"))
      const overlap = yield* problemOf(`every: "1 hour", message: "x", overlap: "sometimes"`)
      expect(overlap.problem).toBe(`overlap is "sometimes"`)
      expect(overlap.fix).toBe(`use one of "skip", "queue", "allow" (what a firing does while the last run goes on), or leave it out for "skip"`)
      const misfire = yield* problemOf(`every: "1 hour", message: "x", misfire: "later"`)
      expect(misfire.problem).toBe(`misfire is "later"`)
      expect(misfire.fix).toContain(`leave it out for "run-once"`)
      const every = yield* problemOf(`every: 1000, message: "x"`)
      expect(every.problem).toBe("every is 1000, not a string")
      expect(every.fix).toBe(`write it as text, e.g. every: "1 hour"`)
      const tooOften = yield* problemOf(`every: "5 millis", message: "x"`)
      expect(tooOften.problem).toBe(`every "5 millis" is more often than once a second`)
      const message = yield* problemOf(`every: "1 hour", message: 42`)
      expect(message.problem).toBe("message is 42, not text")
    }))

  it.scoped("a tool file under agents/ that no agent folder contains", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ ...support, "agents/orphan/x.tool.ts": toolFile() })
      const error = onlyErrorFor(errors, "agents/orphan/x.tool.ts")
      expect(error.problem).toBe("a tool file under agents/ that no agent folder contains")
      expect(error.fix).toContain("move it to tools/")
    }))
})

describe("relationships", () => {
  it.scoped("a schedule whose agent is a string, in a .js file", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ ...support, "schedules/daily.js": scheduleOf(`"support"`) })
      const error = onlyErrorFor(errors, "schedules/daily.js")
      expect(error.problem).toContain(`agent is the string "support"`)
      expect(error.problem).toContain("imported values, not ids")
      expect(error.fix).toContain("import the agent")
      expect(error.fix).toContain(`import support from "../agents/support/agent.js"`)
    }))

  it.scoped("the import hint is relative to a nested route file", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ ...support, "schedules/team/daily.js": scheduleOf(`"support"`) })
      const error = onlyErrorFor(errors, "schedules/team/daily.js")
      expect(error.fix).toContain(`import support from "../../agents/support/agent.js"`)
    }))

  it.scoped("a schedule whose agent is a string cast so that it type-checks", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        ...support,
        "schedules/daily.ts": scheduleOf(
          `"support" as unknown as AgentDefinition`,
          `import type { AgentDefinition } from "foundry"`
        )
      })
      const error = onlyErrorFor(errors, "schedules/daily.ts")
      expect(error.problem).toContain(`agent is the string "support"`)
      expect(error.fix).toContain("import the agent")
    }))

  it.scoped("an agent whose tools hold a string", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.js": `import { defineAgent } from "foundry"
import echo from "./echo.tool.js"
export default defineAgent({ description: "uses a string", tools: [echo, "lookup"] })
`,
        "agents/a/echo.tool.ts": toolFile()
      })
      const error = onlyErrorFor(errors, "agents/a/agent.js")
      expect(error.problem).toContain(`tools[1] is the string "lookup"`)
      expect(error.problem).not.toContain("tools[0]")
      expect(error.fix).toContain("import the tool")
    }))

  it.scoped("a playbook whose agent is a tool value", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "tools/echo.tool.ts": toolFile(),
        "playbooks/p.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import echo from "../tools/echo.tool.js"
export default definePlaybook({ on: webhook("p", Schema.String), agent: echo as never, message: () => "m" })
`
      })
      const error = onlyErrorFor(errors, "playbooks/p.ts")
      expect(error.problem).toMatch(/^agent is a tool, but must be an? agent$/)
      expect(error.fix).toContain("defineAgent")
    }))

  it.scoped("a playbook whose when is no function", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        ...support,
        "playbooks/p.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import support from "../agents/support/agent.js"
export default definePlaybook({ on: webhook("p", Schema.String), agent: support, message: () => "m", when: true as never })
`
      })
      const error = onlyErrorFor(errors, "playbooks/p.ts")
      expect(error.problem).toBe("when is not a function")
    }))

  it.scoped("a schedule importing an agent object that is not a route", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        ...support,
        "agents/support/lib/other.ts": `import { defineAgent } from "foundry"
export const other = defineAgent({ description: "not a route" })
`,
        "schedules/daily.ts": scheduleOf("other", `import { other } from "../agents/support/lib/other.js"`)
      })
      const error = onlyErrorFor(errors, "schedules/daily.ts")
      expect(error.problem).toBe("agent is not a route of this project: it is not the default export of an agents/<path>/agent.ts")
      expect(error.fix).toContain("agents/<path>/agent.ts")
    }))

  it.scoped("invalid fields are reported in one error per file, joined", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.js": `import { defineAgent } from "foundry"
export default defineAgent({ description: "", model: "gpt-4", maxTurns: 0 })
`,
        "schedules/s.ts": scheduleOf("agent", `import agent from "../agents/b/agent.js"`).replace(
          `every: "1 hour"`,
          `cron: "0 9 * *"`
        ),
        "agents/b/agent.ts": agentFile(),
        "agents/c/agent.js": `import { defineAgent } from "foundry"
export default defineAgent({ description: 42 })
`,
        // A number written as text is shown as text, not as the number it reads as.
        "agents/d/agent.js": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Counts", maxTurns: "8", contextWindow: NaN })
`
      })
      expect(errors.errors.map((e) => e.file).sort()).toEqual(["agents/a/agent.js", "agents/c/agent.js", "agents/d/agent.js", "schedules/s.ts"])
      expect(errorFor(errors, "agents/d/agent.js").problem).toBe(`contextWindow is NaN; maxTurns is "8"`)
      const agent = errorFor(errors, "agents/a/agent.js")
      expect(agent.problem).toBe(`description is empty; model "gpt-4" is not known; maxTurns is 0`)
      expect(errorFor(errors, "agents/c/agent.js").problem).toBe("description is 42, not text")
      expect(agent.fix.split("; ")).toHaveLength(3)
      expect(errorFor(errors, "schedules/s.ts").problem).toBe(`cron "0 9 * *" has 4 fields`)
    }))
})

describe("agent budgets and context windows", () => {
  it.scoped("an agent's budget and contextWindow are checked at load, naming the field and the fix", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "spends", budget: { maxTokensPerRun: -5, maxCostPerDay: 3 }, contextWindow: 0.5 })
`
      })
      const agent = errorFor(errors, "agents/a/agent.ts")
      expect(agent.problem).toContain("budget is wrong: ")
      expect(agent.problem).toContain("maxTokensPerRun: expected a whole number, 0 or more, got -5")
      expect(agent.problem).toContain("maxCostPerDay: is not allowed")
      expect(agent.problem).toContain("contextWindow is 0.5")
      expect(agent.fix).toContain("maxTokensPerInstancePerDay")
      // The fix agrees with the problem: 0 is a limit too.
      expect(agent.fix).toContain("give limits as numbers, 0 or more")
    }))
})

describe("agent models, timers and tool timeouts", () => {
  it.scoped("an empty model list is a route error that says to name at least one model", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.js": `import { defineAgent } from "foundry"
export default defineAgent({ description: "No models", model: [] })
`
      })
      const error = onlyErrorFor(errors, "agents/a/agent.js")
      expect(error.problem).toBe("model is an empty list")
      expect(error.fix).toContain(`model: ["openai:gpt-4.1", "openai:gpt-4.1-mini"]`)
    }))

  it.scoped("a model list is checked entry by entry, naming the bad one by its index", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.js": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Two models", model: ["openai:gpt-4.1", "gpt-4"] })
`,
        "agents/b/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Two good models", model: ["openai:gpt-4.1", "demo"] })
`
      })
      expect(errors.errors.map((e) => e.file)).toEqual(["agents/a/agent.js"])
      expect(errorFor(errors, "agents/a/agent.js").problem).toBe(`model[1] "gpt-4" is not known`)
    }))

  it.scoped("timers that name no timer tool, and a tool timeout that is not a duration, are route errors", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.js": `import { defineAgent } from "foundry"
export default defineAgent({ description: "Naps", timers: ["nap", "sleep"] })
`,
        "tools/slow.tool.js": toolFile().replace("run:", `timeout: "soon",\n  run:`)
      })
      const timers = errorFor(errors, "agents/a/agent.js")
      expect(timers.problem).toBe(`timers lists "nap", which is not a timer tool`)
      expect(timers.fix).toContain(`timers: ["sleep"]`)
      expect(errorFor(errors, "tools/slow.tool.js").problem).toBe(`timeout "soon" is not a duration`)
    }))
})

describe("schedule timings", () => {
  const scheduleWith = (timing: string) =>
    scheduleOf("support", `import support from "../agents/support/agent.js"`).replace(`every: "1 hour"`, timing)

  /** The one route error of a project whose schedule has `timing`. */
  const timingErrorOf = (timing: string) =>
    Effect.map(routeErrorsOf({ ...support, "schedules/nightly.ts": scheduleWith(timing) }), (errors) =>
      onlyErrorFor(errors, "schedules/nightly.ts"))

  it.scoped("a cron expression Cron.parse rejects is a route error naming the file and cron", () =>
    Effect.gen(function*() {
      const error = yield* timingErrorOf(`cron: "99 * * * *"`)
      expect(error.problem).toBe(`cron "99 * * * *" is not valid: expected a value between 0 and 59 (at "99")`)
      expect(error.fix).toContain("minute 0-59")
      expect(error.message).toContain("schedules/nightly.ts")
    }))

  it.scoped("a cron expression that parses but matches no date is a route error", () =>
    Effect.gen(function*() {
      const error = yield* timingErrorOf(`cron: "0 9 31 2 *"`)
      expect(error.problem).toBe(`cron "0 9 31 2 *" matches no date in any year`)
    }))

  it.scoped("a timezone that is not a time zone is a route error naming timezone", () =>
    Effect.gen(function*() {
      const error = yield* timingErrorOf(`cron: "0 9 * * 1-5", timezone: "Mars/Olympus"`)
      expect(error.problem).toBe(`timezone "Mars/Olympus" is not an IANA time zone`)
      expect(error.fix).toContain("Europe/Berlin")
    }))

  it.scoped("an every that is not a duration, or not a positive one, is a route error naming every", () =>
    Effect.gen(function*() {
      expect((yield* timingErrorOf(`every: "soon"`)).problem).toBe(`every "soon" is not a duration`)
      const zero = yield* timingErrorOf(`every: "0 minutes"`)
      expect(zero.problem).toBe(`every "0 minutes" is not a positive, finite duration`)
      expect(zero.fix).toContain(`"15 minutes"`)
    }))

  it.scoped("an at that is not a date is a route error naming at", () =>
    Effect.gen(function*() {
      const error = yield* timingErrorOf(`at: "next tuesday-ish"`)
      expect(error.problem).toBe(`at "next tuesday-ish" is not a valid date`)
      expect(error.fix).toContain("2026-12-24T09:00:00Z")
    }))

  it.scoped("sound timings of every kind are routes", () =>
    Effect.gen(function*() {
      const table = yield* discoverProject({
        ...support,
        "schedules/a.ts": scheduleWith(`cron: "*/15 9-17 * * 1-5", timezone: "Europe/Berlin"`),
        "schedules/b.ts": scheduleWith(`cron: "0 0 0 29 2 *"`),
        "schedules/c.ts": scheduleWith(`every: "90 seconds"`),
        "schedules/d.ts": scheduleWith(`at: "2026-12-24T09:00:00Z"`)
      })
      expect(table.schedules.map((r) => r.id).sort()).toEqual(["a", "b", "c", "d"])
    }))
})

describe("loading", () => {
  it.scoped("a route file that throws while loading names the cause", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
throw new Error("boom at load")
export default defineAgent({ description: "never reached" })
`
      })
      const error = onlyErrorFor(errors, "agents/a/agent.ts")
      expect(error.problem).toBe("importing the file failed: boom at load")
      expect(error.message).toContain("boom at load")
      expect(errors.message).toContain("boom at load")
    }))

  it.scoped("a helper that throws fails the route that imports it", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.ts": agentFile({ imports: `import "./lib/bad.js"` }),
        "agents/a/lib/bad.ts": `throw new Error("boom in a helper")\n`
      })
      expect(onlyErrorFor(errors, "agents/a/agent.ts").problem).toContain("boom in a helper")
    }))

  it.scoped("a syntax error in a TypeScript route file", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "unfinished",
`
      })
      const error = onlyErrorFor(errors, "agents/a/agent.ts")
      expect(error.problem).toMatch(/^importing the file failed: \S/)
      expect(error.fix).toMatch(/^make the file load without throwing|^fix agents\/a\/agent\.ts:\d+:\d+$/)
    }))

  it.scoped("a syntax error in a JavaScript route file", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "tools/bad.tool.js": `export default {{\n` })
      const error = onlyErrorFor(errors, "tools/bad.tool.js")
      expect(error.problem).toMatch(/^importing the file failed: \S/)
    }))

  it.scoped("an import of a missing file", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({ "agents/a/agent.ts": agentFile({ imports: `import x from "./missing.tool.js"`, tools: ["x"] }) })
      const error = onlyErrorFor(errors, "agents/a/agent.ts")
      expect(error.problem).toContain("importing the file failed")
      expect(error.problem).toContain("missing.tool")
    }))
})

describe("several broken files", () => {
  it.scoped("give one error each, and the good files next to them none", () =>
    Effect.gen(function*() {
      const broken = {
        "agents/Bad/agent.ts": agentFile(),
        "agents/a/agent.ts": `throw new Error("boom at load")\n`,
        "agents/orphan/x.tool.ts": toolFile(),
        "schedules/daily.ts": agentFile(),
        "schedules/weekly.js": scheduleOf(`"support"`),
        "environments/box.ts": `export default 42\n`,
        "playbooks/none.ts": `export const nothing = true\n`
      }
      const errors = yield* routeErrorsOf({ ...goodProject, ...broken })
      expect(errors.errors.map((e) => e.file).sort()).toEqual(Object.keys(broken).sort())
      for (const file of Object.keys(broken)) errorFor(errors, file)
      expect(errors.message).toContain(`${Object.keys(broken).length} broken route files:`)
    }))

  it.scoped("a field defineAgent or defineTool does not know is named, with the one it likely meant", () =>
    Effect.gen(function*() {
      const errors = yield* routeErrorsOf({
        "agents/a/agent.ts": `import { defineAgent } from "foundry"
export default defineAgent({ description: "a", subagent: [] } as any)
`,
        "tools/t.tool.ts": toolFile().replace("description:", "descripton: 1, description:")
      })
      const agent = errorFor(errors, "agents/a/agent.ts")
      expect(agent.problem).toBe("subagent is not a field of defineAgent; did you mean subagents?")
      expect(agent.fix).toMatch(/^rename it to subagents \(the fields: description, model, /)
      expect(errorFor(errors, "tools/t.tool.ts").problem).toBe("descripton is not a field of defineTool; did you mean description?")
    }))

  it.scoped("an environment's starting files must be plain paths, outside the generated docs, within its limits", () =>
    Effect.gen(function*() {
      const environment = `import { defineEnvironment } from "foundry"
export default defineEnvironment({
  files: { "/a/../../etc/passwd": "x", "/std/evil.d.ts": "y", "/inbox/big.txt": "${"x".repeat(1200)}" },
  limits: { maxFileBytes: 1000, maxTotalBytes: 1100 }
})
`
      const error = onlyErrorFor(yield* routeErrorsOf({ "environments/box.ts": environment }), "environments/box.ts")
      expect(error.problem).toContain(`files has "/a/../../etc/passwd", which is not a plain path`)
      expect(error.problem).toContain("files puts /std/evil.d.ts where Foundry writes the environment's docs")
      expect(error.problem).toContain("files has /inbox/big.txt of 1200 bytes, over limits.maxFileBytes (1000)")
      expect(error.problem).toContain("files hold 1201 bytes, over limits.maxTotalBytes (1100)")
    }))

  it.scoped("a tool whose input has no JSON Schema, and instructions that are neither text nor a function", () =>
    Effect.gen(function*() {
      const tool = `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"
export default defineTool({
  description: "Remind at a time",
  input: Schema.Struct({ when: Schema.DateFromSelf }),
  output: Schema.String,
  run: () => Effect.succeed("ok")
})
`
      const agent = `import { defineAgent } from "foundry"
export default defineAgent({ description: "Answers", instructions: 42 })
`
      const toolError = onlyErrorFor(yield* routeErrorsOf({ "tools/remind.tool.ts": tool }), "tools/remind.tool.ts")
      expect(toolError.problem).toContain("input has no JSON Schema, which the model is given to call the tool: Missing annotation")
      expect(toolError.fix).toContain("Schema.Date, not Schema.DateFromSelf")
      const agentError = onlyErrorFor(yield* routeErrorsOf({ "agents/a/agent.ts": agent }), "agents/a/agent.ts")
      expect(agentError.problem).toBe("instructions is number, not a string or a function")
    }))

  it.scoped("a good project is unaffected by broken projects discovered before it", () =>
    Effect.gen(function*() {
      yield* routeErrorsOf({ "agents/a/agent.ts": `throw new Error("boom at load")\n`, "schedules/x.ts": agentFile() })
      const table = yield* discoverProject(goodProject)
      expect(table.agents.map((r) => r.id).sort()).toEqual(["support", "support/triage"])
      expect(table.schedules.map((r) => r.id).sort()).toEqual(["daily-review", "team/hourly"])
    }))
})
