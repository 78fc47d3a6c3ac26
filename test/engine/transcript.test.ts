import { describe, expect, it } from "@effect/vitest"
import { modelView, openCalls } from "../../src/engine/transcript.js"
import type { ChatMessage } from "../../src/models/Model.js"
import { transcriptProblem } from "../../src/models/validateTranscript.js"

const user = (content: string): ChatMessage => ({ _tag: "user", content })
const calls = (...ids: ReadonlyArray<string>): ChatMessage => ({
  _tag: "assistant",
  content: "",
  toolCalls: ids.map((id) => ({ id, name: "slow", arguments: "{}" }))
})
const result = (id: string, content = `result ${id}`): ChatMessage => ({ _tag: "tool", toolCallId: id, name: "slow", content })
const answer = (content: string): ChatMessage => ({ _tag: "assistant", content, toolCalls: [] })
const pending = () => "pending"

describe("transcriptProblem", () => {
  it("accepts results in any order directly after their calls", () => {
    expect(transcriptProblem([user("a"), calls("c1", "c2"), result("c2"), result("c1"), answer("ok")])).toBeUndefined()
  })

  it("rejects a message between a call and its result, naming the call", () => {
    expect(transcriptProblem([user("a"), calls("c1"), user("b"), result("c1")])).toContain("c1")
  })

  it("rejects a missing result, an orphan result and a result answered twice", () => {
    expect(transcriptProblem([user("a"), calls("c1", "c2"), result("c1"), answer("x")])).toContain("c2")
    expect(transcriptProblem([user("a"), result("c9")])).toContain("c9")
    expect(transcriptProblem([user("a"), calls("c1"), result("c1"), result("c1")])).toContain("c1")
  })
})

describe("modelView", () => {
  it("moves a result recorded after later messages up to its call", () => {
    const stored = [
      { runId: "r1", message: user("transfer") },
      { runId: "r1", message: calls("c1") },
      { runId: "r2", message: user("meanwhile") },
      { runId: "r2", message: answer("sure") },
      { runId: "r1", message: result("c1", "transferred") },
      { runId: "r3", message: user("next") }
    ]
    const view = modelView(stored, "r3", pending)
    expect(view).toEqual([user("transfer"), calls("c1"), result("c1", "transferred"), user("meanwhile"), answer("sure"), user("next")])
    expect(transcriptProblem(view)).toBeUndefined()
  })

  it("answers a call still waiting with a placeholder in the views of other runs", () => {
    const stored = [
      { runId: "r1", message: user("transfer") },
      { runId: "r1", message: calls("c1") },
      { runId: "r2", message: user("meanwhile") }
    ]
    const view = modelView(stored, "r2", (call, owner) => `${owner} ${call.id} waits`)
    expect(view[2]).toEqual({ _tag: "tool", toolCallId: "c1", name: "slow", content: "r1 c1 waits" })
    expect(transcriptProblem(view)).toBeUndefined()
  })

  it("shows a resumed run the conversation as it started plus its own steps", () => {
    const stored = [
      { runId: "r0", message: user("hello") },
      { runId: "r0", message: answer("hi") },
      { runId: "r1", message: user("transfer") },
      { runId: "r1", message: calls("c1") },
      { runId: "r2", message: user("meanwhile") },
      { runId: "r2", message: answer("sure") },
      { runId: "r1", message: result("c1", "transferred") }
    ]
    expect(modelView(stored, "r1", pending)).toEqual([
      user("hello"),
      answer("hi"),
      user("transfer"),
      calls("c1"),
      result("c1", "transferred")
    ])
  })

  it("shows a resumed run no compaction another run made while it was suspended: its own request, call and result stay", () => {
    const summary = (content: string, keepFrom: number): ChatMessage => ({ _tag: "summary", content, keepFrom })
    const stored = [
      { runId: "r0", seq: 1, message: user("hello") },
      { runId: "r0", seq: 2, message: answer("hi") },
      { runId: "r1", seq: 3, message: user("transfer") },
      { runId: "r1", seq: 4, message: calls("c1") },
      { runId: "r2", seq: 5, message: user("a long question") },
      // r2 outgrew the window and compacted all before its own message.
      { runId: "r2", seq: 6, message: summary("they said hello; a transfer waits", 5) },
      { runId: "r2", seq: 7, message: answer("a long answer") },
      { runId: "r1", seq: 8, message: result("c1", "transferred") }
    ]
    const resumed = modelView(stored, "r1", pending)
    expect(resumed).toEqual([user("hello"), answer("hi"), user("transfer"), calls("c1"), result("c1", "transferred")])
    expect(transcriptProblem(resumed)).toBeUndefined()
    // A run started after the compaction sees it.
    const next = modelView([...stored, { runId: "r3", seq: 9, message: user("next") }], "r3", pending)
    expect(next[0]).toEqual(user("Summary of the earlier conversation (older messages were compacted):\nthey said hello; a transfer waits"))
    expect(next.slice(1)).toEqual([user("a long question"), answer("a long answer"), user("next")])
  })

  it("pairs results with the run that made the call when two runs reuse a call id", () => {
    const stored = [
      { runId: "r1", message: user("one") },
      { runId: "r1", message: calls("call_1_1") },
      { runId: "r1", message: result("call_1_1", "cancelled by steer: two") },
      { runId: "r2", message: user("two") },
      { runId: "r2", message: calls("call_1_1") },
      { runId: "r2", message: result("call_1_1", "recorded") }
    ]
    const view = modelView(stored, "r2", pending)
    expect(view.map((m) => m._tag === "tool" ? m.content : m._tag)).toEqual([
      "user",
      "assistant",
      "cancelled by steer: two",
      "user",
      "assistant",
      "recorded"
    ])
  })

  it("keeps the first result of a call: one recorded after it was closed as cancelled is dropped", () => {
    const stored = [
      { runId: "r1", message: user("a") },
      { runId: "r1", message: calls("c1") },
      { runId: "r1", message: result("c1", "cancelled") },
      { runId: "r1", message: result("c1", "late") }
    ]
    const view = modelView(stored, "r2", pending)
    expect(view.filter((m) => m._tag === "tool").map((m) => m._tag === "tool" ? m.content : "")).toEqual(["cancelled"])
    expect(transcriptProblem(view)).toBeUndefined()
  })

  it("lists a run's calls that have no result", () => {
    const stored = [
      { runId: "r1", message: user("a") },
      { runId: "r1", message: calls("c1", "c2") },
      { runId: "r1", message: result("c1") }
    ]
    expect(openCalls(stored, "r1").map(({ call }) => call.id)).toEqual(["c2"])
    expect(openCalls(stored, "r2")).toEqual([])
  })
})
