/**
 * Who executes runs: a lease holder's name says its host and process, so that a process on the
 * same host can tell whether the holder of a lease is gone (its process no longer exists) and take
 * the lease over at once, instead of waiting for it to expire, or is still there (and its lease,
 * even expired, is left to it). A holder on another host, or one whose process cannot be checked,
 * is neither: only its lease's expiry tells.
 */
import { hostname } from "node:os"
import { newId } from "../durable/ids.js"

/** A new executor name: `<host>/<pid>/<random>`. */
export const executorName = (): string => `${hostname()}/${process.pid}/${newId("node")}`

/** The process of this host that `holder` names, if it names one. */
const pidHere = (holder: string): number | undefined => {
  const [host, pid] = holder.split("/")
  const id = Number(pid)
  return host === hostname() && Number.isSafeInteger(id) && id > 0 ? id : undefined
}

/** Whether `holder` names an executor of this host whose process has ended. */
export const isDeadExecutor = (holder: string): boolean => {
  const pid = pidHere(holder)
  return pid !== undefined && pid !== process.pid && processEnded(pid)
}

/**
 * Whether `holder` names an executor of this host whose process still runs: this one (another
 * runtime in it shares its pid), or one that exists (a pid reused since counts as alive too).
 */
export const isLiveExecutor = (holder: string): boolean => {
  const pid = pidHere(holder)
  return pid !== undefined && (pid === process.pid || !processEnded(pid))
}

/** Whether no process `pid` runs on this host any more. */
export const processEnded = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return false
  } catch (error) {
    // EPERM: the process exists but belongs to someone else.
    return typeof error === "object" && error !== null && "code" in error && error.code === "ESRCH"
  }
}
