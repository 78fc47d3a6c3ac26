/**
 * The naming rules of DESIGN section 2 as pure functions: which files are routes, of which kind,
 * with which id, and which break a rule (with the problem and the fix).
 */
import { describe, expect, it } from "@effect/vitest"
import { agentFoldersOf, classify, isHelper, isProblem, type RouteFile, type RoutePathProblem } from "../../src/router/RoutePath.js"

/** Classifies `file` as part of a project made of `files` (so agent folders are known). */
const classifyIn = (file: string, files: ReadonlyArray<string> = []): RouteFile | RoutePathProblem | undefined =>
  classify(file, agentFoldersOf([file, ...files]))

/** The route a file is, failing the test when it is a problem or not a route at all. */
const routeOf = (file: string, files: ReadonlyArray<string> = []): RouteFile => {
  const classified = classifyIn(file, files)
  if (classified === undefined) return expect.fail(`${file} is not a route`)
  if (isProblem(classified)) return expect.fail(`${file} is a problem: ${classified.problem}`)
  return classified
}

/** The problem a file is, failing the test when it is a route or ignored. */
const problemOf = (file: string, files: ReadonlyArray<string> = []): RoutePathProblem => {
  const classified = classifyIn(file, files)
  if (classified === undefined) return expect.fail(`${file} is not a route`)
  if (!isProblem(classified)) return expect.fail(`${file} is a route: ${classified.kind} ${classified.id}`)
  return classified
}

describe("agent ids", () => {
  it("agents/support/agent.ts is the agent support", () => {
    expect(routeOf("agents/support/agent.ts")).toEqual({ kind: "agent", id: "support", file: "agents/support/agent.ts" })
  })

  it("a nested agent's id is its whole folder path", () => {
    expect(routeOf("agents/support/triage/agent.ts")).toEqual({
      kind: "agent",
      id: "support/triage",
      file: "agents/support/triage/agent.ts"
    })
  })

  it("every route extension is accepted", () => {
    for (const extension of [".ts", ".mts", ".js", ".mjs"]) {
      expect(routeOf(`agents/support/agent${extension}`)).toMatchObject({ kind: "agent", id: "support" })
    }
  })

  it("an agent file directly under agents/ is a problem, since it has no id", () => {
    const problem = problemOf("agents/agent.ts")
    expect(problem.file).toBe("agents/agent.ts")
    expect(problem.problem).toContain("no id")
    expect(problem.fix).toContain("agents/<name>/agent.ts")
  })

  it("agentFoldersOf lists the folders that hold an agent file, and nothing else", () => {
    const folders = agentFoldersOf([
      "agents/support/agent.ts",
      "agents/support/triage/agent.mjs",
      "agents/support/tools/lookup-order.tool.ts",
      "agents/lib/agent.ts",
      "agents/_draft/agent.ts",
      "agents/types/agent.d.ts",
      "tools/current-time.tool.ts",
      "schedules/agent.ts"
    ])
    expect([...folders].sort()).toEqual(["support", "support/triage"])
  })
})

describe("tool ids", () => {
  const agents = ["agents/support/agent.ts", "agents/support/triage/agent.ts"]

  it("a tool in the agent's tools/ folder drops the tools/ segment and belongs to the agent", () => {
    expect(routeOf("agents/support/tools/lookup-order.tool.ts", agents)).toEqual({
      kind: "tool",
      id: "support/lookup-order",
      file: "agents/support/tools/lookup-order.tool.ts",
      agentFolder: "support"
    })
  })

  it("a tool right next to agent.ts belongs to the agent", () => {
    expect(routeOf("agents/support/refund.tool.ts", agents)).toMatchObject({
      kind: "tool",
      id: "support/refund",
      agentFolder: "support"
    })
  })

  it("a tool anywhere under an agent folder keeps its path below the agent", () => {
    expect(routeOf("agents/support/helpers/x.tool.ts", agents)).toMatchObject({
      kind: "tool",
      id: "support/helpers/x",
      agentFolder: "support"
    })
  })

  it("only a leading tools/ segment is dropped", () => {
    expect(routeOf("agents/support/helpers/tools/x.tool.ts", agents)).toMatchObject({ id: "support/helpers/tools/x" })
  })

  it("a tool under a nested agent belongs to the nearest agent", () => {
    expect(routeOf("agents/support/triage/classify.tool.ts", agents)).toMatchObject({
      kind: "tool",
      id: "support/triage/classify",
      agentFolder: "support/triage"
    })
    expect(routeOf("agents/support/triage/tools/escalate.tool.ts", agents)).toMatchObject({
      id: "support/triage/escalate",
      agentFolder: "support/triage"
    })
  })

  it("a shared tool under tools/ has its path as id and no agent", () => {
    const route = routeOf("tools/current-time.tool.ts")
    expect(route).toEqual({ kind: "tool", id: "current-time", file: "tools/current-time.tool.ts" })
    expect(route.agentFolder).toBeUndefined()
    expect(routeOf("tools/time/now.tool.js")).toMatchObject({ kind: "tool", id: "time/now" })
  })

  it("a file under tools/ without .tool is not a route", () => {
    expect(classifyIn("tools/format.ts")).toBeUndefined()
  })

  it("a tool file under agents/ that no agent folder contains is a problem", () => {
    for (const file of ["agents/orphan/x.tool.ts", "agents/x.tool.ts"]) {
      const problem = problemOf(file, agents)
      expect(problem.file).toBe(file)
      expect(problem.problem).toBe("a tool file under agents/ that no agent folder contains")
      expect(problem.fix).toContain("tools/")
    }
  })
})

describe("playbook, schedule and environment ids", () => {
  it("playbooks/a/b.ts is the playbook a/b", () => {
    expect(routeOf("playbooks/a/b.ts")).toEqual({ kind: "playbook", id: "a/b", file: "playbooks/a/b.ts" })
    expect(routeOf("playbooks/urgent-ticket.mjs")).toMatchObject({ kind: "playbook", id: "urgent-ticket" })
  })

  it("schedules/<path> is a schedule", () => {
    expect(routeOf("schedules/daily-review.ts")).toEqual({
      kind: "schedule",
      id: "daily-review",
      file: "schedules/daily-review.ts"
    })
    expect(routeOf("schedules/team/weekly.js")).toMatchObject({ kind: "schedule", id: "team/weekly" })
  })

  it("environments/<path> is an environment", () => {
    expect(routeOf("environments/workspace.ts")).toEqual({
      kind: "environment",
      id: "workspace",
      file: "environments/workspace.ts"
    })
    expect(routeOf("environments/sandbox/big.mts")).toMatchObject({ kind: "environment", id: "sandbox/big" })
  })
})

describe("files that are not routes", () => {
  const agents = ["agents/support/agent.ts"]

  it("isHelper: a leading _ in the name, or a lib/ or _* folder anywhere", () => {
    expect(isHelper("schedules/_shared.ts")).toBe(true)
    expect(isHelper("agents/support/lib/text.ts")).toBe(true)
    expect(isHelper("agents/support/_private/x.tool.ts")).toBe(true)
    expect(isHelper("lib/Orders.ts")).toBe(true)
    expect(isHelper("playbooks/_drafts/later.ts")).toBe(true)
    expect(isHelper("schedules/daily.ts")).toBe(false)
    expect(isHelper("agents/support/tools/lookup-order.tool.ts")).toBe(false)
    expect(isHelper("agents/library/agent.ts")).toBe(false)
  })

  it("helpers are never classified, even where a route would be", () => {
    for (const file of [
      "schedules/_helper.ts",
      "playbooks/lib/shared.ts",
      "environments/_private/files.ts",
      "agents/support/lib/format.tool.ts",
      "agents/support/_private/secret.tool.ts",
      "agents/lib/agent.ts",
      "tools/_helper.tool.ts",
      "tools/lib/clock.tool.ts"
    ]) {
      expect(classifyIn(file, agents), file).toBeUndefined()
    }
  })

  it("a non-tool file in an agent folder is not a route", () => {
    expect(classifyIn("agents/support/prompt.ts", agents)).toBeUndefined()
    expect(classifyIn("agents/support/tools/format.ts", agents)).toBeUndefined()
    expect(classifyIn("agents/support/README.md", agents)).toBeUndefined()
  })

  it("declaration files and other extensions are not routes", () => {
    expect(classifyIn("schedules/daily.d.ts")).toBeUndefined()
    expect(classifyIn("agents/support/agent.d.ts")).toBeUndefined()
    expect(classifyIn("tools/clock.tool.d.ts")).toBeUndefined()
    expect(classifyIn("environments/types.d.mts")).toBeUndefined()
    expect(classifyIn("schedules/daily.json")).toBeUndefined()
    expect(classifyIn("playbooks/notes.md")).toBeUndefined()
  })

  it("files outside the route folders are not routes", () => {
    expect(classifyIn("src/agent.ts")).toBeUndefined()
    expect(classifyIn("foundry.config.ts")).toBeUndefined()
    expect(classifyIn("scratch/schedules/daily.ts")).toBeUndefined()
  })
})

describe("invalid ids", () => {
  it("an uppercase agent folder is a problem whose fix is the lowercase name", () => {
    const problem = problemOf("agents/Support/agent.ts")
    expect(problem.file).toBe("agents/Support/agent.ts")
    expect(problem.problem).toContain(`invalid id "Support"`)
    expect(problem.problem).toContain("[a-z][a-z0-9-]*")
    expect(problem.fix).toBe(`rename "Support" to "support"`)
  })

  it("an underscore in a schedule name is a problem whose fix uses a dash", () => {
    const problem = problemOf("schedules/daily_review.ts")
    expect(problem.problem).toContain(`invalid id "daily_review"`)
    expect(problem.fix).toBe(`rename "daily_review" to "daily-review"`)
  })

  it("camelCase and leading digits get a valid suggestion, naming only the bad segments", () => {
    const camel = problemOf("playbooks/team/urgentTicket.ts")
    expect(camel.problem).toContain(`"urgentTicket" does not`)
    expect(camel.problem).not.toContain(`"team"`)
    expect(camel.fix).toBe(`rename "urgentTicket" to "urgent-ticket"`)
    expect(problemOf("environments/2fa.ts").fix).toBe(`rename "2fa" to "fa"`)
  })

  it("every suggestion is itself a valid segment", () => {
    for (const name of ["Daily_Review", "9am", "a.b", "x_-_", "Big-", "ÄÖÜ"]) {
      const fix = problemOf(`schedules/${name}.ts`).fix
      const suggested = /to "([^"]*)"$/.exec(fix)?.[1]
      expect(suggested, `${name}: ${fix}`).toMatch(/^[a-z][a-z0-9-]*$/)
    }
  })

  it("a bad segment in a tool's id is reported too", () => {
    const problem = problemOf("agents/support/tools/LookupOrder.tool.ts", ["agents/support/agent.ts"])
    expect(problem.problem).toContain(`invalid id "support/LookupOrder"`)
    expect(problem.fix).toBe(`rename "LookupOrder" to "lookup-order"`)
    expect(problemOf("tools/current_time.tool.ts").fix).toBe(`rename "current_time" to "current-time"`)
  })
})
