import { describe, expect, it } from "@effect/vitest"
import { Effect, Option, Tracer } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { tempProject } from "../support/tempProject.js"
import { http, startServer, waitForRun } from "../support/server.js"

// A tool that answers with the span it runs under, as a tool's own code sees it.
const project = {
  "agents/traced/agent.ts": `import { defineAgent } from "foundry"
import where from "./tools/where.tool.js"

export default defineAgent({ description: "Says where its tool ran", model: "demo", instructions: "Call where.", tools: [where] })
`,
  "agents/traced/tools/where.tool.ts": `import { Effect, Option, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "The span this call runs under",
  input: Schema.Struct({}),
  output: Schema.String,
  run: () => Effect.map(Effect.option(Effect.currentSpan), Option.match({ onNone: () => "no span", onSome: (span) => span.name }))
})
`
}

/** Effect's own tracer, recording the spans it makes. */
const recordingTracer = () =>
  Effect.map(Effect.tracer, (builtIn) => {
    const spans: Array<Tracer.Span> = []
    const tracer = Tracer.make({
      span: (name, parent, context, links, startTime, kind, options) => {
        const span = builtIn.span(name, parent, context, links, startTime, kind, options)
        spans.push(span)
        return span
      },
      context: builtIn.context
    })
    return { tracer, spans }
  })

/** Runs the agent once; the tool's answer as the model was shown it. */
const toolAnswer = (url: string) =>
  Effect.gen(function*() {
    const created = yield* http(`${url}/api/runs`, { body: { agent: "traced", message: "where?" } })
    const { runId } = created.json as { runId: string }
    const run = (yield* waitForRun(url, runId)) as Record<string, unknown>
    expect(run.status).toBe("completed")
    return String(run.output)
  })

const model = () =>
  Scripted.make((request, index) => {
    if (index === 0) return { toolCalls: [{ name: "where", arguments: {} }] }
    const last = request.messages[request.messages.length - 1]
    return { text: last?._tag === "tool" ? last.content : "" }
  })

describe("a run's entry-point spans", () => {
  it.scopedLive("are not made when no tracer records them: a tool sees no span", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const server = yield* startServer(root, { model: model() })
      expect(yield* toolAnswer(server.url)).toBe("no span")
    }))

  it.scopedLive("are made under a tracer that records them: the tool call's span, under the run's", () =>
    Effect.gen(function*() {
      const root = yield* tempProject(project)
      const { spans, tracer } = yield* recordingTracer()
      const server = yield* startServer(root, { model: model() }).pipe(Effect.withTracer(tracer))
      expect(yield* toolAnswer(server.url)).toBe("engine.runTool")
      const run = spans.find((span) => span.name === "engine.runAgent")
      const tool = spans.find((span) => span.name === "engine.runTool")
      expect(run?.status._tag).toBe("Ended")
      expect(tool?.status._tag).toBe("Ended")
      expect(Option.map(Option.flatMap(Option.fromNullable(tool), (span) => span.parent), (parent) => parent.spanId)).toEqual(
        Option.fromNullable(run?.spanId)
      )
    }))
})
