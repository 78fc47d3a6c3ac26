/**
 * A step is acknowledged only once it is on disk, seen from outside: `foundry start` runs under
 * strace, which records every write to the database's log, every sync of it and every write to a
 * socket, with the time each happened. A run submitted over HTTP is answered (the `202`) only
 * after the log's sync that followed the submission's commit, and its stream says `run.completed`
 * only after the sync that followed the run's last commit. A commit left unsynced (SQLite at
 * NORMAL), or synced after the answer, fails it, whatever the store says of itself.
 *
 * Needs strace and the right to trace a child process; without them the test is skipped with a
 * printed reason, unless FOUNDRY_REQUIRE_STRACE=1 (CI), which makes it fail instead.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Schema } from "effect"
import { serveProject } from "../support/cli.js"
import { agentFile, tempProject } from "../support/tempProject.js"

const straceRequired = process.env["FOUNDRY_REQUIRE_STRACE"] === "1"
const straceWorks = spawnSync("strace", ["-o", "/dev/null", "true"]).status === 0
const skipStrace = !straceWorks && !straceRequired
if (skipStrace) {
  console.warn("Skipping the sync-before-acknowledgement test: strace is missing or may not trace here (apt-get install strace; CI requires it)")
}

const decodeCreated = Schema.decodeUnknownSync(Schema.Struct({ runId: Schema.String }))

/** One system call as strace saw it: when it began and when it returned, on which thread. */
interface Call {
  readonly name: string
  readonly args: string
  readonly began: number
  readonly ended: number
}

const seconds = (clock: string): number => {
  const [h = "0", m = "0", s = "0"] = clock.split(":")
  return Number(h) * 3600 + Number(m) * 60 + Number(s)
}

/**
 * The calls of an `strace -f -tt` trace. A call another thread interrupted is printed as
 * `<unfinished ...>` when it begins and `<... name resumed>` when it returns.
 */
const callsOf = (trace: string): ReadonlyArray<Call> => {
  const calls: Array<Call> = []
  const unfinished = new Map<string, { readonly name: string; readonly args: string; readonly began: number }>()
  for (const line of trace.split("\n")) {
    // Lines carry the thread's id once strace follows more than one.
    const match = /^(?:(\d+)\s+)?(\d\d:\d\d:\d\d\.\d+)\s+(.*)$/.exec(line)
    if (match === null) continue
    const [, pid = "", clock = "", rest = ""] = match
    const at = seconds(clock)
    const resumed = /^<\.\.\. (\w+) resumed>(.*)$/.exec(rest)
    if (resumed !== null) {
      const begun = unfinished.get(pid)
      unfinished.delete(pid)
      if (begun !== undefined) calls.push({ ...begun, args: begun.args + (resumed[2] ?? ""), ended: at })
      continue
    }
    const call = /^(\w+)\((.*)$/.exec(rest)
    if (call === null) continue
    const [, name = "", args = ""] = call
    if (args.endsWith("<unfinished ...>")) unfinished.set(pid, { name, args, began: at })
    else calls.push({ name, args, began: at, ended: at })
  }
  return calls
}

const isLogWrite = (call: Call) => call.name === "pwrite64" && /foundry\.db-wal>/.test(call.args)
const isLogSync = (call: Call) => (call.name === "fsync" || call.name === "fdatasync") && /foundry\.db-wal>/.test(call.args) && / = 0/.test(call.args)
const isSocketWrite = (call: Call) => (call.name === "write" || call.name === "writev") && /socket:|TCP/.test(call.args)

/**
 * That the socket write matching `answer` came after a sync of the log that followed the last write
 * to the log before it: what it acknowledges was on disk when it was sent.
 */
const syncedBefore = (calls: ReadonlyArray<Call>, answer: RegExp) => {
  const sent = calls.find((call) => isSocketWrite(call) && answer.test(call.args))
  if (sent === undefined) return { sent: false, logWritten: false, synced: false }
  const lastWrite = calls.filter((call) => isLogWrite(call) && call.began <= sent.began).at(-1)
  const synced = lastWrite !== undefined &&
    calls.some((call) => isLogSync(call) && call.began >= lastWrite.ended && call.ended <= sent.began)
  return { sent: true, logWritten: lastWrite !== undefined, synced }
}

describe.skipIf(skipStrace)("acknowledged only once on disk (the server under strace)", () => {
  it.scopedLive("answers a submission, and streams a run's end, only after the log's sync that followed their commits", () =>
    Effect.gen(function*() {
      if (!straceWorks) return yield* Effect.die(new Error("FOUNDRY_REQUIRE_STRACE=1 but strace is missing or may not trace here: apt-get install strace"))
      const root = yield* tempProject({ "agents/helper/agent.ts": agentFile() })
      const traces = yield* Effect.acquireRelease(
        Effect.sync(() => mkdtempSync(join(tmpdir(), "foundry-strace-"))),
        (folder) => Effect.sync(() => rmSync(folder, { recursive: true, force: true }))
      )
      const traceFile = join(traces, "server.trace")
      yield* Effect.scoped(Effect.gen(function*() {
        const { url } = yield* serveProject(root, {
          under: ["strace", "-f", "-y", "-tt", "-s", "4096", "-e", "trace=pwrite64,fsync,fdatasync,write,writev", "-o", traceFile]
        })
        const stream = yield* Effect.promise(async () => {
          const created = await fetch(`${url}/api/runs`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify({ agent: "helper", message: "hello" })
          })
          expect(created.status).toBe(202)
          const { runId } = decodeCreated(await created.json())
          const events = await fetch(`${url}/api/runs/${runId}/events`, { headers: { accept: "text/event-stream" } })
          return events.text()
        })
        expect(stream).toContain("event: run.completed")
      }))

      const calls = callsOf(readFileSync(traceFile, "utf8"))
      // The trace saw the log written and synced at all (a trace that names no files would pass nothing).
      expect(calls.filter(isLogWrite).length).toBeGreaterThan(0)
      expect(calls.filter(isLogSync).length).toBeGreaterThan(0)
      expect(syncedBefore(calls, /HTTP\/1\.1 202/)).toEqual({ sent: true, logWritten: true, synced: true })
      expect(syncedBefore(calls, /event: run\.completed/)).toEqual({ sent: true, logWritten: true, synced: true })
    }), 60_000)
})
