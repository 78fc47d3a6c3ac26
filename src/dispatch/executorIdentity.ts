/**
 * Who executes runs: a lease holder's name says its host, its process and when that process
 * started, so that a process on the same host can tell whether the holder of a lease is gone and
 * take the lease over at once, instead of waiting for it to expire, or is still there (and its
 * lease, even expired, is left to it). The start time tells a holder's process from another that
 * got its pid since (a container restarted gives its main process the same pid every time). A
 * holder on another host, or one whose process cannot be checked, is neither: only its lease's
 * expiry tells.
 */
import { readFileSync, readlinkSync } from "node:fs"
import { hostname } from "node:os"
import { Effect, type Scope } from "effect"
import { newId } from "../durable/ids.js"
import { processEnded } from "../processEnded.js"

/** What `read` gives, or `undefined` where it cannot be read (not Linux, no `/proc`). */
const readable = (read: () => string | undefined): string | undefined => {
  try {
    return read()
  } catch {
    return undefined
  }
}

/**
 * When process `pid` started, in clock ticks after the machine's boot (Linux's
 * `/proc/<pid>/stat`, field 22); `undefined` where that cannot be read.
 */
const startOf = (pid: number): string | undefined =>
  readable(() => {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8")
    // The fields after the command's closing parenthesis: the start time is the 20th of them.
    return stat.slice(stat.lastIndexOf(")") + 2).split(" ")[19]
  })

const thisStart = startOf(process.pid)

/**
 * This host as lease holders' names say it: its name, and on Linux the pid namespace its processes
 * are numbered in (`/proc/self/ns/pid`) and the machine's boot (`boot_id`, new at every boot of
 * every machine). Containers that share a host name (host networking, a `hostname` given to
 * several) number their processes apart, and one must not look up another's pids as its own; two
 * machines of one name (`localhost`, an image's default) have the same root namespace's number,
 * and so does one machine before and after a reboot: the boot tells them apart.
 */
const host = [
  hostname(),
  readable(() => /\[(\d+)\]/.exec(readlinkSync("/proc/self/ns/pid"))?.[1]),
  readable(() => readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim())
].filter((part) => part !== undefined && part !== "").join(":")

/** The executors of this process whose scope is open: another name with this pid is an earlier process's, or one closed. */
const liveHere = new Set<string>()

/**
 * A new executor name, `<host>/<pid>/<id>` with `/<start>` where the process's start time can be
 * read (`<host>` with its pid namespace and boot where they can be read), known as this process's
 * until the scope closes.
 */
export const makeExecutorName: Effect.Effect<string, never, Scope.Scope> = Effect.acquireRelease(
  Effect.sync(() => {
    const name = `${host}/${process.pid}/${newId("node")}${thisStart === undefined ? "" : `/${thisStart}`}`
    liveHere.add(name)
    return name
  }),
  (name) => Effect.sync(() => liveHere.delete(name))
)

/** The process of this host that `holder` names, if it names one, and its start time where the name has it. */
const processHere = (holder: string): { readonly pid: number; readonly start: string | undefined } | undefined => {
  const [named, pid, , start] = holder.split("/")
  const id = Number(pid)
  return named === host && Number.isSafeInteger(id) && id > 0 ? { pid: id, start } : undefined
}

/**
 * Whether the process `holder` names runs: this one only while that executor's scope is open;
 * another while its pid exists, with the start time the name says where both can be read.
 */
const runs = (holder: string, named: { readonly pid: number; readonly start: string | undefined }): boolean => {
  if (named.pid === process.pid && (named.start === undefined || named.start === thisStart)) return liveHere.has(holder)
  if (processEnded(named.pid)) return false
  const start = named.start === undefined ? undefined : startOf(named.pid)
  return start === undefined || start === named.start
}

/** Whether `holder` names an executor of this host that is gone: its process ended, or it is an executor of this one closed since. */
export const isDeadExecutor = (holder: string): boolean => {
  const named = processHere(holder)
  return named !== undefined && !runs(holder, named)
}

/** Whether `holder` names an executor of this host that is still there: in this process, or in one that still runs. */
export const isLiveExecutor = (holder: string): boolean => {
  const named = processHere(holder)
  return named !== undefined && runs(holder, named)
}

