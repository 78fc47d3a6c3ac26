import { it } from "@effect/vitest"
import { Effect } from "effect"
import { agentFile, routeErrorsOf, toolFile, goodProject } from "./support.js"

it.scoped("print", () => Effect.gen(function*() {
  const show = (e: { message: string }) => console.log("-----\n" + e.message)
  show(yield* routeErrorsOf({ "agents/a/agent.js": `import { defineAgent } from "foundry"
export default defineAgent({ description: "x", tools: ["lookup-order"], environment: "workspace" })
` }))
  show(yield* routeErrorsOf({ "agents/a/agent.ts": toolFile(), "environments/e.ts": agentFile(), "schedules/s.ts": `import { defineEnvironment } from "foundry"\nexport default defineEnvironment({})\n` }))
  show(yield* routeErrorsOf({ "agents/a/agent.ts": `import { defineAgent } from "foundry"\nexport default defineAgent({ description: "" })\n`,
    "schedules/s.ts": `import { defineSchedule } from "foundry"\nimport a from "../agents/a/agent.js"\nexport default defineSchedule({ every: "1 hour", agent: a, message: "m" })\n` }))
  show(yield* routeErrorsOf({ "agents/a/agent.ts": `throw new Error("boom")\n`,
    "schedules/s.ts": `import { defineSchedule } from "foundry"\nimport a from "../agents/a/agent.js"\nexport default defineSchedule({ every: "1 hour", agent: a, message: "m" })\n` }))
  show(yield* routeErrorsOf({ "agents/a/agent.ts": `import { defineAgent } from "foundry"\nexport default defineAgent({ description: "x",\n` }))
  show(yield* routeErrorsOf({ "tools/bad.tool.js": `export default {{\n` }))
  show(yield* routeErrorsOf({ ...goodProject, "schedules/team/x.js": `import { defineSchedule } from "foundry"\nexport default defineSchedule({ every: "1 hour", agent: "support", message: "m" })\n` }))
  show(yield* routeErrorsOf({ "foundry.config.ts": `throw new Error("cfg")\n` }))
}))
