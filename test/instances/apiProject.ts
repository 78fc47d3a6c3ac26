/**
 * The project the instances API tests run: `desk`, an agent whose instances need a context
 * (`company`, and `seats` defaulting to 1); `echo`, an agent without one; and `crm-notes`, a shared
 * tool instances install with a `baseUrl` and a secret `apiKey`.
 */
import { Effect } from "effect"
import { http } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"

/** The project's files; `config` is added as `foundry.config.ts` when given, and `more` files beside. */
export const instancesProject = (config?: string, more: Record<string, string> = {}) =>
  tempProject({
    "agents/desk/agent.ts": `import { Schema } from "effect"
import { defineAgent } from "foundry"

export default defineAgent({
  description: "A help desk, one instance per company",
  model: "demo",
  context: Schema.Struct({ company: Schema.String, seats: Schema.optionalWith(Schema.Number, { default: () => 1 }) }),
  instructions: ({ instance }) => \`You help \${instance.context.company} (\${instance.context.seats} seats).\`
})
`,
    "agents/echo/agent.ts": agentFile(),
    "tools/crm-notes.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Reads a customer's notes from the CRM",
  input: Schema.Struct({ customer: Schema.String }),
  output: Schema.String,
  installable: { config: Schema.Struct({ baseUrl: Schema.String, apiKey: Schema.Redacted(Schema.String) }) },
  run: ({ customer }, { config }) => Effect.succeed(\`\${config.baseUrl}/customers/\${customer}/notes\`)
})
`,
    ...(config === undefined ? {} : { "foundry.config.ts": config }),
    ...more
  })

/** An event as `GET /api/events` lists it. */
export interface ListedEvent {
  readonly seq: number
  readonly type: string
  readonly agent: string
  readonly instanceId: string
  readonly data: Record<string, unknown>
}

interface EventPage {
  readonly events: ReadonlyArray<ListedEvent>
  readonly nextAfter?: number
}

const isEventPage = (body: unknown): body is EventPage =>
  typeof body === "object" && body !== null && "events" in body && Array.isArray(body.events)

/** Every event `GET /api/events?<query>` lists, page after page; also each page's raw text. */
export const allEvents = (base: string, query = "") =>
  Effect.gen(function*() {
    const events: Array<ListedEvent> = []
    const texts: Array<string> = []
    let after: number | undefined
    for (;;) {
      const page = yield* http(`${base}/api/events?limit=1000${query === "" ? "" : `&${query}`}${after === undefined ? "" : `&after=${after}`}`)
      if (page.status !== 200 || !isEventPage(page.json)) return yield* Effect.die(new Error(`GET /api/events: ${page.status} ${page.text}`))
      texts.push(page.text)
      events.push(...page.json.events)
      if (page.json.nextAfter === undefined) return { events, texts }
      after = page.json.nextAfter
    }
  })
