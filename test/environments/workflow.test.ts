/**
 * An agent working in its environment, end to end over HTTP on a scripted model: it writes a CSV
 * to /inbox, writes a script that reads it with `env:fs` and `env:spreadsheet`, runs it, and
 * presents the workbook the script wrote; the artifact downloads and opens as a valid workbook.
 * Then the read-only zones, refused from a verb, from a script and from a module, each naming the
 * zone; and the tree carried over to the next run, with undo across runs.
 */
import { describe, expect, it } from "@effect/vitest"
import * as XLSX from "@e965/xlsx"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, toolResults, waitForRun } from "../support/server.js"
import { tempProject } from "../support/tempProject.js"

const environmentFile = `import { defineEnvironment, spreadsheet } from "foundry"

export default defineEnvironment({
  description: "A workspace for reports",
  files: { "/inbox/reference/rates.md": "Rates are fixed.\\n" },
  readOnlyPaths: ["/inbox/reference"],
  modules: [spreadsheet]
})
`

const agentFile = `import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"

export default defineAgent({ description: "Writes reports", model: "demo", environment: workspace })
`

const csv = "region,amount\nnorth,120\nsouth,80\nnorth,45\nwest,300\n"

const script = `import { readText } from "env:fs"
import { readRows, writeSheets } from "env:spreadsheet"

export default async function (args) {
  const rows = await readRows("/inbox/sales.csv")
  const totals = {}
  for (const row of rows) totals[row.region] = (totals[row.region] ?? 0) + Number(row.amount)
  await writeSheets("/out/summary.xlsx", [{ name: "Totals", rows: [["region", "total"], ...Object.entries(totals)] }])
  const lines = (await readText("/inbox/sales.csv")).trim().split("\\n").length
  console.log("summarised", lines - 1, "rows for", args.who)
  return { regions: Object.keys(totals).length, lines }
}
`

const call = (name: string, args: unknown) => ({ toolCalls: [{ name, arguments: args }] })

const startRun = (base: string, message: string) =>
  Effect.gen(function*() {
    const response = yield* http(`${base}/api/runs`, { body: { agent: "reports", instance: "acme", message } })
    expect(response.status).toBe(202)
    const body = response.json as { runId: string }
    return body.runId
  })

describe("an agent in its environment", () => {
  it.scopedLive("writes a CSV, scripts a workbook from it, and presents it as a downloadable artifact", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "/inbox/sales.csv", content: csv }),
        call("write_file", { path: "/scripts/summarize.js", content: script }),
        call("run_script", { path: "/scripts/summarize.js", args: { who: "finance" } }),
        call("present", { path: "/out/summary.xlsx", caption: "Sales by region" }),
        { text: "Here is the summary." }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Summarise the sales")
      const run = yield* waitForRun(server.url, runId)
      expect(run.status).toBe("completed")

      const results = yield* toolResults(server.url, runId)
      expect(results[2]).toContain("\"regions\": 3")
      expect(results[2]).toContain("summarised 4 rows for finance")

      const listed = yield* http(`${server.url}/api/runs/${runId}/artifacts`)
      expect(listed.status).toBe(200)
      const artifacts = (listed.json as { artifacts: ReadonlyArray<{ id: string; caption: string; path: string; mediaType: string }> }).artifacts
      expect(artifacts.map((artifact) => [artifact.path, artifact.caption])).toEqual([["/out/summary.xlsx", "Sales by region"]])

      const download = yield* Effect.promise(() => fetch(`${server.url}/api/artifacts/${artifacts[0]?.id}`))
      expect(download.status).toBe(200)
      const bytes = new Uint8Array(yield* Effect.promise(() => download.arrayBuffer()))
      const workbook = XLSX.read(bytes, { type: "array" })
      expect(workbook.SheetNames).toEqual(["Totals"])
      const rows: ReadonlyArray<unknown> = XLSX.utils.sheet_to_json(workbook.Sheets.Totals ?? {}, { header: 1 })
      expect(rows).toEqual([["region", "total"], ["north", 165], ["south", 80], ["west", 300]])
    }), { timeout: 60_000 })

  it.scopedLive("refuses writes to read-only zones from a verb, a script and a module, naming the zone", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const scriptWrite = `import { writeFile } from "env:fs"
export default async function () { await writeFile("/std/fs/hacked.txt", "no") }
`
      const moduleWrite = `import { writeRows } from "env:spreadsheet"
export default async function () { await writeRows("/inbox/reference/rates.csv", [{ rate: 1 }]) }
`
      const model = Scripted.make([
        call("write_file", { path: "/inbox/reference/rates.md", content: "changed" }),
        call("write_file", { path: "/scripts/escape.js", content: scriptWrite }),
        call("run_script", { path: "/scripts/escape.js" }),
        call("write_file", { path: "/scripts/adapter.js", content: moduleWrite }),
        call("run_script", { path: "/scripts/adapter.js" }),
        call("read_file", { path: "/inbox/reference/rates.md" }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Try to change the reference")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results[0]).toMatch(/read-only/)
      expect(results[0]).toContain("/inbox/reference")
      expect(results[0]).toContain("/tmp")
      expect(results[2]).toMatch(/read-only/)
      expect(results[2]).toContain("/std")
      expect(results[4]).toMatch(/read-only/)
      expect(results[4]).toContain("/inbox/reference")
      expect(results[5]).toContain("Rates are fixed.")
    }), { timeout: 60_000 })

  it.scopedLive("refuses a script writing past the byte limit, and keeps nothing it wrote", () =>
    Effect.gen(function*() {
      const small = environmentFile.replace("modules: [spreadsheet]", "modules: [spreadsheet],\n  limits: { maxFileBytes: 1000 }")
      const root = yield* tempProject({ "environments/workspace.ts": small, "agents/reports/agent.ts": agentFile })
      const big = `import { writeFile } from "env:fs"
export default async function () {
  await writeFile("/tmp/small.txt", "fits")
  await writeFile("/out/big.txt", "x".repeat(2000))
}
`
      const model = Scripted.make([
        call("write_file", { path: "/scripts/big.js", content: big }),
        call("run_script", { path: "/scripts/big.js" }),
        call("ls", { path: "/", recursive: true }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Write too much")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results[1]).toContain("maxFileBytes")
      expect(results[1]).toContain("/out/big.txt")
      expect(results[1]).toContain("no changes were kept")
      expect(results[2]).toContain("/scripts/big.js")
      expect(results[2]).not.toContain("/out/big.txt")
      expect(results[2]).not.toContain("/tmp/small.txt")
    }), { timeout: 60_000 })

  it.scopedLive("counts only the agent's files against maxTotalBytes, not the generated docs it cannot remove", () =>
    Effect.gen(function*() {
      // The generated /README.md, /skills and /std (with env:spreadsheet's docs) hold several KB.
      const small = environmentFile.replace("modules: [spreadsheet]", "modules: [spreadsheet],\n  limits: { maxTotalBytes: 2000 }")
      const root = yield* tempProject({ "environments/workspace.ts": small, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "/tmp/a.txt", content: "a".repeat(1000) }),
        call("write_file", { path: "/tmp/b.txt", content: "b".repeat(1000) }),
        call("ls", { path: "/tmp" }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Fill the tree")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results[0]).toContain("wrote /tmp/a.txt")
      // The reference note (17 bytes) and a.txt leave less than 1000 bytes of the 2000.
      expect(results[1]).toContain("maxTotalBytes")
      // Sizes that would round the same ("2 KB, over its limit of 2 KB") are given exactly.
      expect(results[1]).toContain("would bring the environment to 2017 bytes, over its limit of 2000 bytes")
      expect(results[2]).toContain("/tmp/a.txt")
      expect(results[2]).not.toContain("/tmp/b.txt")
    }), { timeout: 60_000 })

  it.scopedLive("keeps the start of a script's output in /tmp when all of it was captured but it is over maxFileBytes", () =>
    Effect.gen(function*() {
      const small = environmentFile.replace("modules: [spreadsheet]", "modules: [spreadsheet],\n  limits: { maxOutputBytes: 50, maxFileBytes: 300 }")
      const root = yield* tempProject({ "environments/workspace.ts": small, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "/scripts/loud.js", content: "export default async function () { console.log(\"y\".repeat(1000)); return 1 }" }),
        call("run_script", { path: "/scripts/loud.js" }),
        call("ls", { path: "/tmp" }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Print a lot")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results[1]).toContain("[output truncated at 50 of 1001 bytes (maxOutputBytes); its first")
      expect(results[1]).not.toContain("not kept")
      expect(results[2]).toContain(`/tmp/output-${runId}-call_2_1.txt`)
    }), { timeout: 60_000 })

  it.scopedLive("/README.md names each read-only path once", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([call("read_file", { path: "/README.md" }), { text: "done" }])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Read the orientation")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const [readme = ""] = yield* toolResults(server.url, runId)
      const line = readme.split("\n").find((text) => text.includes("Read-only:")) ?? ""
      expect(line).toContain("`/std`, `/README.md`, `/skills/README.md`, `/skills/imports.md`, `/inbox/reference`.")
      expect(line.split("`/README.md`").length).toBe(2)
    }), { timeout: 60_000 })

  it.scopedLive("answers with the paths the files have: a relative path made absolute, a move or copy into a folder naming the file there", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "notes.txt", content: "n" }),
        call("mv", { from: "notes.txt", to: "/out" }),
        call("cp", { from: "/out/notes.txt", to: "/tmp" }),
        call("edit_file", { path: "/tmp/./sub/../notes.txt", old: "n", new: "m" }),
        call("rm", { path: "tmp/notes.txt" }),
        call("history", {}),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Move things")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results.slice(0, 5)).toEqual([
        "write_file: wrote /notes.txt (1 bytes)",
        "mv: moved /notes.txt to /out/notes.txt",
        "cp: copied /out/notes.txt to /tmp/notes.txt",
        "edit_file: edited /tmp/notes.txt (1 replacement)",
        "rm: removed /tmp/notes.txt"
      ])
      // The versions are labelled with the same paths.
      expect(results[5]).toContain("write_file /notes.txt  ")
      expect(results[5]).toContain("mv /notes.txt /out  ")
      expect(results[5]).toContain("edit_file /tmp/notes.txt  ")
      expect(results[5]).toContain("rm /tmp/notes.txt  ")
    }), { timeout: 60_000 })

  it.scopedLive("history refuses a limit under 1, saying what limit is and how to leave it out", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "/out/a.txt", content: "a" }),
        call("write_file", { path: "/out/b.txt", content: "b" }),
        call("history", { limit: 0 }),
        call("history", { limit: 1 }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Look back")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results[2]).toBe(
        "history: invalid arguments for history:\nlimit: expected 1 or more (how many versions to list, newest first), got 0; leave limit out for the latest 20"
      )
      expect(results[3]?.split("\n")).toEqual([expect.stringContaining("v2 (current)  change  write_file /out/b.txt")])
    }), { timeout: 60_000 })

  it.scopedLive("an empty file reads as empty, and grep refuses an empty pattern, saying what to use instead", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "/out/empty.txt", content: "" }),
        call("write_file", { path: "/out/one.txt", content: "one line\n" }),
        call("read_file", { path: "/out/empty.txt" }),
        call("read_file", { path: "/out/empty.txt", from: 2 }),
        call("grep", { pattern: "" }),
        call("grep", { pattern: "^$", path: "/out" }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Look at the empty file")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results.slice(2)).toEqual([
        "read_file: [the file is empty]",
        "read_file: read_file failed: VerbRefused: /out/empty.txt is empty, so it has no line 2: leave from out to read it",
        "grep: invalid arguments for grep:\npattern: expected a regular expression to search for, got \"\" (which matches every line); " +
          "read_file a file to see all of it, or ls to see what is there",
        "grep: no match for /^$/ under /out"
      ])
    }), { timeout: 60_000 })

  it.scopedLive("in a small context window, read_file, run_script and grep fit their answers to what the model is shown, notes on where the rest is included", () =>
    Effect.gen(function*() {
      // A window of 8,000 tokens shows a result at most 8,000 characters.
      const root = yield* tempProject({
        "environments/workspace.ts": environmentFile,
        "agents/reports/agent.ts": agentFile.replace(`environment: workspace })`, `environment: workspace, contextWindow: 8000 })`)
      })
      const long = Array.from({ length: 300 }, (_, i) => `line ${i + 1} ${"x".repeat(50)}`).join("\n")
      const model = Scripted.make([
        call("write_file", { path: "/out/long.txt", content: long }),
        call("read_file", { path: "/out/long.txt" }),
        call("write_file", { path: "/scripts/loud.js", content: `export default () => { console.log("y".repeat(20000)); return "done" }` }),
        call("run_script", { path: "/scripts/loud.js" }),
        call("grep", { pattern: "^line", path: "/out" }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Read it all")
      const run = yield* waitForRun(server.url, runId)
      expect(run.status).toBe("completed")
      const messages = (yield* http(`${server.url}/api/conversations/${run.conversationId}/messages`)).json as ReadonlyArray<{ role: string; content: string }>
      const [, read, , script, found] = messages.filter((m) => m.role === "tool").map((m) => m.content)
      // Not cut by the engine: each answer fits, and ends with its own note.
      for (const answer of [read, script, found]) {
        expect(answer?.length).toBeLessThanOrEqual(8000)
        expect(answer).not.toContain("[output truncated:")
      }
      expect(read).toMatch(/^  1\| line 1 x+\n/)
      expect(read).toMatch(/\n\[lines 1-\d+ of 300, as many as the model is shown of a result: read on with from \d+\]$/)
      expect(script).toContain("/scripts/loud.js returned \"done\"\noutput:\nyyy")
      expect(script).toMatch(
        /\[output truncated at 3500 of 20001 bytes \(as much as the model's context window lets a result show\); all of it is in \/tmp\/output-\S+\.txt \(grep it or read_file a range\)\]$/
      )
      expect(found).toMatch(/^\/out\/long\.txt:1: line 1 x+\n/)
      expect(found).toMatch(/\n\[\d+ of 200 or more matches, as many as the model is shown of a result: narrow the pattern or the path\]$/)
    }), { timeout: 60_000 })

  it.scopedLive("undo refuses a version that is not a whole number of 0 or more, saying what version is and how to leave it out", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "/out/a.txt", content: "a" }),
        call("undo", { version: -1 }),
        call("undo", { version: 0.5 }),
        call("undo", { version: 0 }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Go back")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results.slice(1)).toEqual([
        "undo: invalid arguments for undo:\nversion: expected 0 or more (the version to restore, as history lists it; 0 is the files the environment started with), got -1; " +
          "leave version out to undo the last change",
        "undo: invalid arguments for undo:\nversion: expected an integer, got 0.5",
        "undo: restore version 0: the files are as at version 0"
      ])
    }), { timeout: 60_000 })

  it.scopedLive("an empty path or checkpoint label is refused, naming the field, what goes there and what leaving it out does", () =>
    Effect.gen(function*() {
      const config = `import { defineConfig } from "foundry"\n\nexport default defineConfig({ maxToolFailures: 10 })\n`
      const root = yield* tempProject({ "foundry.config.ts": config, "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "/out/a.txt", content: "a" }),
        { toolCalls: [
          { name: "ls", arguments: { path: "" } },
          { name: "mv", arguments: { from: "", to: " " } },
          { name: "run_tests", arguments: { path: "" } },
          { name: "present", arguments: { path: "", caption: "The report" } },
          { name: "checkpoint", arguments: { label: " " } },
          { name: "history", arguments: {} }
        ] },
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Look around")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results.slice(1, 6)).toEqual([
        "ls: invalid arguments for ls:\npath: expected a folder such as /inbox, got \"\"; leave path out to list /",
        "mv: invalid arguments for mv:\nfrom: expected an absolute path such as /inbox/data.csv, got \"\"\nto: expected an absolute path such as /inbox/data.csv, got \" \"",
        "run_tests: invalid arguments for run_tests:\npath: expected a test file or a folder of them, such as /scripts, got \"\"; leave path out to run the tests under /scripts",
        "present: invalid arguments for present:\npath: expected a file under /out, such as /out/report.xlsx, got \"\"",
        "checkpoint: invalid arguments for checkpoint:\nlabel: expected a label saying what this state is, e.g. \"before refactoring the report\", got \" \""
      ])
      expect(results[6]?.split("\n")).toEqual([expect.stringContaining("v1 (current)  change  write_file /out/a.txt")])
    }), { timeout: 60_000 })

  it.scopedLive("read_file refuses a range that is not one, saying what from and to are and what to send; a from past the end says how many lines there are", () =>
    Effect.gen(function*() {
      const config = `import { defineConfig } from "foundry"\n\nexport default defineConfig({ maxToolFailures: 10 })\n`
      const root = yield* tempProject({ "foundry.config.ts": config, "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make([
        call("write_file", { path: "/tmp/notes.txt", content: "one\ntwo\nthree\n" }),
        { toolCalls: [
          { name: "read_file", arguments: { path: "/tmp/notes.txt", from: 0 } },
          { name: "read_file", arguments: { path: "/tmp/notes.txt", from: 1.5, to: -1 } },
          { name: "read_file", arguments: { path: "/tmp/notes.txt", from: 3, to: 2 } },
          { name: "read_file", arguments: { path: "/tmp/notes.txt", from: 4 } },
          { name: "read_file", arguments: { path: "/tmp/notes.txt", from: 2, to: 99 } }
        ] },
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Read the notes")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results.slice(1)).toEqual([
        "read_file: invalid arguments for read_file:\nfrom: expected 1 or more (the first line to read; lines are numbered from 1), got 0; leave from out to read from the start",
        "read_file: invalid arguments for read_file:\nfrom: expected an integer, got 1.5\n" +
          "to: expected 1 or more (the last line to read; lines are numbered from 1), got -1; leave to out to read to the end",
        "read_file: invalid arguments for read_file:\nto: to 2 is before from 3: give a to of 3 or more (the last line to read), or leave to out to read on from line 3",
        "read_file: read_file failed: VerbRefused: /tmp/notes.txt has 3 lines, so from 4 is past its end: give a from of 3 or less, or leave from out to read it from the start",
        "read_file: 2| two\n3| three\n[lines 2-3 of 3]"
      ])
    }), { timeout: 60_000 })

  it.scopedLive("a script's require loads env: modules; require(\"fs\") is refused when the script is written, a name it computes when it runs, in the same words", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const loads = `export default async function () {
  const { readText } = require("env:fs")
  return await readText("/inbox/reference/rates.md")
}
`
      const computed = `export default async function () {
  const name = ["f", "s"].join("")
  return require(name).readFileSync("/etc/passwd", "utf8")
}
`
      const model = Scripted.make([
        call("write_file", { path: "/scripts/loads.js", content: loads }),
        call("run_script", { path: "/scripts/loads.js" }),
        call("write_file", { path: "/scripts/node.js", content: "export default async function () { return require(\"fs\").readFileSync(\"/etc/passwd\", \"utf8\") }\n" }),
        call("write_file", { path: "/tmp/spawn.js", content: "const { execSync } = require(\"node:child_process\")\nexport default async function () { return execSync(\"id\") }\n" }),
        call("ls", { path: "/", recursive: true }),
        call("write_file", { path: "/scripts/computed.js", content: computed }),
        call("run_script", { path: "/scripts/computed.js" }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Load modules")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      const refusal = "scripts load only env: modules (import them, or require(\"env:<name>\")), not \"fs\"; did you mean require(\"env:fs\")? (the modules: env:fs, env:spreadsheet; see /skills/imports.md)"
      expect(results[1]).toContain("Rates are fixed.")
      expect(results[2]).toBe(`write_file: write_file failed: VerbRefused: /scripts/node.js was not saved: line 1:51: ${refusal}`)
      expect(results[3]).toBe(
        "write_file: write_file failed: VerbRefused: /tmp/spawn.js was not saved: line 1:30: scripts load only env: modules (import them, or require(\"env:<name>\")), " +
          "not \"node:child_process\" (the modules: env:fs, env:spreadsheet; see /skills/imports.md)"
      )
      expect(results[4]).not.toContain("/scripts/node.js")
      expect(results[4]).not.toContain("/tmp/spawn.js")
      expect(results[6]).toContain(`Error: ${refusal}`)
    }), { timeout: 60_000 })

  it.scopedLive("a script that fills memory is told it ran out of the memory the project's config gives scripts, and how to raise it", () =>
    Effect.gen(function*() {
      const config = `import { defineConfig } from "foundry"\n\nexport default defineConfig({ scripts: { maxMemoryMb: 48 } })\n`
      const limited = environmentFile.replace("modules: [spreadsheet]", "modules: [spreadsheet],\n  limits: { scriptTimeoutMs: 5000 }")
      const root = yield* tempProject({ "foundry.config.ts": config, "environments/workspace.ts": limited, "agents/reports/agent.ts": agentFile })
      const endless = `export default function () {\n  const rows = []\n  for (;;) rows.push("x".repeat(1000))\n}\n`
      const holding = `export default async function () {\n  const data = new Uint8Array(30 * 1024 * 1024).fill(1)\n  await new Promise(() => {})\n  return data.length\n}\n`
      const model = Scripted.make([
        call("write_file", { path: "/scripts/endless.js", content: endless }),
        call("run_script", { path: "/scripts/endless.js" }),
        call("write_file", { path: "/scripts/holding.js", content: holding }),
        call("run_script", { path: "/scripts/holding.js" }),
        { text: "done" }
      ])
      const server = yield* startServer(root, { model })
      const runId = yield* startRun(server.url, "Fill memory")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      const results = yield* toolResults(server.url, runId)
      expect(results[1]).toContain("/scripts/endless.js ran out of memory (48 MB, the most one script may use, heap and buffers together)")
      expect(results[1]).toContain("raise scripts.maxMemoryMb in foundry.config.ts")
      expect(results[1]).not.toContain("scriptTimeoutMs")
      // Stopped at its wall clock holding most of its memory, a script is told what it held.
      expect(results[3]).toContain("ran longer than 5 s (scriptTimeoutMs)")
      expect(results[3]).toMatch(/By then it held 3\d of the 48 MB one script may use \(scripts\.maxMemoryMb in foundry\.config\.ts\)/)
    }), { timeout: 60_000 })

  it.scopedLive("view_image shows a vision model the image, and is not offered to a model that cannot see", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      // A 1x1 PNG, written by a script (seeded files are text).
      const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
      const writePng = `import { writeFile } from "env:fs"
export default async function () {
  await writeFile("/out/dot.png", new Uint8Array(${JSON.stringify([...Buffer.from(png, "base64")])}))
}
`
      const offered: Array<ReadonlyArray<string>> = []
      const seen: Array<unknown> = []
      const script = (request: { readonly tools: ReadonlyArray<{ readonly name: string }>; readonly messages: ReadonlyArray<unknown> }, index: number) => {
        offered.push(request.tools.map((tool) => tool.name))
        seen.push(request.messages[request.messages.length - 1])
        return [
          call("write_file", { path: "/scripts/png.js", content: writePng }),
          call("run_script", { path: "/scripts/png.js" }),
          call("view_image", { path: "/out/dot.png" }),
          { text: "a dot" }
        ][index] ?? { text: "done" }
      }
      const server = yield* startServer(root, { model: Scripted.make(script, "eyes", { vision: true }) })
      const runId = yield* startRun(server.url, "Look at it")
      expect((yield* waitForRun(server.url, runId)).status).toBe("completed")
      expect(offered[0]).toContain("view_image")
      expect(seen[3]).toMatchObject({ _tag: "tool", name: "view_image", images: [{ mediaType: "image/png", data: png }] })

      const blind: Array<ReadonlyArray<string>> = []
      const other = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const second = yield* startServer(other, {
        model: Scripted.make((request, index) => (blind.push(request.tools.map((tool) => tool.name)), index === 0 ? call("view_image", { path: "/out/dot.png" }) : { text: "ok" }))
      })
      const blindRun = yield* startRun(second.url, "hi")
      expect((yield* waitForRun(second.url, blindRun)).status).toBe("completed")
      expect(blind[0]).toContain("run_script")
      expect(blind[0]).not.toContain("view_image")
      // Called anyway, it is a tool the model was not offered, and the tools it is told of leave it out.
      const [answer = ""] = yield* toolResults(second.url, blindRun)
      expect(answer).toContain("there is no tool named \"view_image\"; the tools are: ls,")
      expect(answer.split("the tools are:")[1]).not.toContain("view_image")
    }), { timeout: 60_000 })

  it.scopedLive("keeps the tree across runs of an instance, and undo restores the previous version", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "environments/workspace.ts": environmentFile, "agents/reports/agent.ts": agentFile })
      const model = Scripted.make((request, index) => {
        const message = request.messages.find((entry) => entry._tag === "user")
        const first = message !== undefined && "content" in message && String(message.content).includes("first")
        const turns = first
          ? [call("write_file", { path: "/out/notes.txt", content: "one" }), call("write_file", { path: "/out/notes.txt", content: "two" })]
          : [call("read_file", { path: "/out/notes.txt" }), call("undo", {}), call("read_file", { path: "/out/notes.txt" }), call("history", {})]
        return turns[index] ?? { text: "done" }
      })
      const server = yield* startServer(root, { model })
      expect((yield* waitForRun(server.url, yield* startRun(server.url, "first"))).status).toBe("completed")
      const second = yield* startRun(server.url, "second")
      expect((yield* waitForRun(server.url, second)).status).toBe("completed")
      const results = yield* toolResults(server.url, second)
      expect(results[0]).toContain("two")
      expect(results[1]).toContain("undo")
      expect(results[2]).toContain("one")
      expect(results[2]).not.toContain("two")
      expect(results[3]).toMatch(/v3 \(current\)\s+undo/)
    }), { timeout: 60_000 })
})
