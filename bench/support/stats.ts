/**
 * Figures: percentiles, CPU and memory sampling.
 */
import { readdirSync, readFileSync } from "node:fs"
import { constants, type PerformanceEntry, PerformanceObserver } from "node:perf_hooks"
import type { DatabaseStats } from "../../src/durable/Database.js"

/** The `p`-th percentile (0-100) of `values`, nearest-rank; 0 for none. */
export const percentile = (values: ReadonlyArray<number>, p: number): number => {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))
  return sorted[rank] ?? 0
}

/** Rounds to `digits` decimals, for readable JSON. */
export const round = (value: number, digits = 2): number => {
  const factor = 10 ** digits
  return Math.round(value * factor) / factor
}

/** Bytes as MiB (2^20 bytes), one decimal. */
export const mb = (bytes: number): number => round(bytes / (1024 * 1024), 1)

/** CPU time (user + system) in milliseconds since `start`. */
export const cpuMsSince = (start: NodeJS.CpuUsage): number => {
  const delta = process.cpuUsage(start)
  return (delta.user + delta.system) / 1000
}

/** CPU time so far of this process's main thread and of its other threads, in milliseconds. */
interface ThreadCpu {
  readonly mainMs: number
  readonly otherThreadsMs: number
}

const clockTicksMs = 10

/**
 * CPU time of the main thread and of the others (V8's compilers and garbage collector helpers,
 * libuv's pool), from Linux's `/proc/self/task/<tid>/stat` (user and system time in clock ticks of
 * 10 ms); `undefined` where there is no `/proc`. Per batch, `process.cpuUsage()` is their sum.
 */
const threadCpu = (): ThreadCpu | undefined => {
  try {
    let mainMs = 0
    let otherThreadsMs = 0
    for (const tid of readdirSync("/proc/self/task")) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8")
      // Fields after the command's closing parenthesis: utime and stime are the 12th and 13th.
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ")
      const ms = (Number(fields[11]) + Number(fields[12])) * clockTicksMs
      if (Number(tid) === process.pid) mainMs += ms
      else otherThreadsMs += ms
    }
    return { mainMs, otherThreadsMs }
  } catch {
    return undefined
  }
}

/** CPU per run of the main thread and of the others. */
export interface ThreadCpuPerRun {
  readonly mainThread: number
  readonly otherThreads: number
}

/** CPU per run of the main thread and of the others between two readings, or `null` without `/proc`. */
const threadCpuPerRun = (before: ThreadCpu | undefined, after: ThreadCpu | undefined, runs: number): ThreadCpuPerRun | null =>
  before === undefined || after === undefined
    ? null
    : { mainThread: round((after.mainMs - before.mainMs) / runs, 3), otherThreads: round((after.otherThreadsMs - before.otherThreadsMs) / runs, 3) }

/**
 * Starts reading this process's CPU; the function returned gives the CPU since then: in all
 * (`process.cpuUsage()`), and per run of `runs` by thread (`null` without `/proc`).
 */
export const cpuReading = () => {
  const threads = threadCpu()
  const cpu = process.cpuUsage()
  const collections = gcReading()
  return (runs: number) => ({ cpuMs: cpuMsSince(cpu), byThread: threadCpuPerRun(threads, threadCpu(), runs), gc: collections(runs) })
}

/** The garbage collector's pauses over a batch: milliseconds per run, collections per 1,000 runs. */
export interface GcFigures {
  readonly msPerRun: number
  readonly minorPer1000Runs: number
  readonly majorPer1000Runs: number
}

/**
 * Starts counting the garbage collector's pauses of the main thread; the function returned gives,
 * per run of `runs`, the milliseconds paused and the young-generation (minor) and full (major)
 * collections per 1,000 runs. A change that allocates less, or keeps less alive across a
 * collection, shows here beside a machine's noise that moves every time.
 */
const gcReading = () => {
  let ms = 0
  let minor = 0
  let major = 0
  const count = (entries: ReadonlyArray<PerformanceEntry>) => {
    for (const entry of entries) {
      ms += entry.duration
      // Node's types leave a GC entry's `detail` (its kind) out.
      const detail: unknown = Reflect.get(entry, "detail")
      const kind = typeof detail === "object" && detail !== null && "kind" in detail ? detail.kind : undefined
      if (kind === constants.NODE_PERFORMANCE_GC_MINOR) minor++
      else if (kind === constants.NODE_PERFORMANCE_GC_MAJOR) major++
    }
  }
  const observer = new PerformanceObserver((list) => count(list.getEntries()))
  observer.observe({ entryTypes: ["gc"] })
  return (runs: number): GcFigures => {
    // Those not handed to the observer yet.
    count(observer.takeRecords())
    observer.disconnect()
    return { msPerRun: round(ms / runs, 3), minorPer1000Runs: round((minor * 1000) / runs, 1), majorPer1000Runs: round((major * 1000) / runs, 1) }
  }
}

/** Samples this process's RSS every `intervalMs` until stopped; returns the highest seen. */
export const sampleRss = (intervalMs = 5): { readonly stop: () => number } => {
  let peak = process.memoryUsage.rss()
  const timer = setInterval(() => {
    peak = Math.max(peak, process.memoryUsage.rss())
  }, intervalMs)
  return {
    stop: () => {
      clearInterval(timer)
      return Math.max(peak, process.memoryUsage.rss())
    }
  }
}

/** Runs a full GC when the process was started with `--expose-gc`; says whether it could. */
export const collectGarbage = (): boolean => {
  const gc: unknown = Reflect.get(globalThis, "gc")
  if (typeof gc !== "function") return false
  gc()
  gc()
  return true
}

/** The number of lines of a text file (0 when it does not exist). */
export const lineCount = (file: string): number => {
  try {
    return readFileSync(file, "utf8").split("\n").filter((line) => line !== "").length
  } catch {
    return 0
  }
}

/** Lines of an append-only side-effect file, counted by their first word (the run id). */
export const linesByRun = (file: string): ReadonlyMap<string, number> => {
  const counts = new Map<string, number>()
  let text = ""
  try {
    text = readFileSync(file, "utf8")
  } catch {
    return counts
  }
  for (const line of text.split("\n")) {
    if (line === "") continue
    const runId = line.split(" ")[0] ?? ""
    counts.set(runId, (counts.get(runId) ?? 0) + 1)
  }
  return counts
}

/** Milliseconds per run between two readings of one of the database's timers (`null` where it has none). */
const millisPerRun = (before: number | null, after: number | null, runs: number) =>
  after === null || before === null ? null : round((after - before) / runs, 3)

/**
 * SQL statements, write transactions, milliseconds executing statements and waiting for commits
 * per run, between two readings of the database's counters.
 */
export const sqlPerRun = (before: DatabaseStats, after: DatabaseStats, runs: number) => ({
  statements: round((after.statements - before.statements) / runs, 1),
  writeTransactions: round((after.writeTransactions - before.writeTransactions) / runs, 2),
  statementMs: millisPerRun(before.statementMillis, after.statementMillis, runs),
  commitMs: millisPerRun(before.commitMillis, after.commitMillis, runs)
})
