/**
 * Who executes runs: a lease holder's name says its host and process, so that a process that
 * restarts on the same host can tell that the holder of a lease is gone (its process no longer
 * exists) and take the lease over at once, instead of waiting for it to expire. A holder on
 * another host, or one whose process cannot be checked, counts as alive: its lease expires.
 */
import { hostname } from "node:os"
import { newId } from "../durable/ids.js"

/** A new executor name: `<host>/<pid>/<random>`. */
export const executorName = (): string => `${hostname()}/${process.pid}/${newId("node")}`

/** Whether `holder` names an executor of this host whose process has ended. */
export const isDeadExecutor = (holder: string): boolean => {
  const [host, pid] = holder.split("/")
  const id = Number(pid)
  if (host !== hostname() || !Number.isSafeInteger(id) || id <= 0 || id === process.pid) return false
  return processEnded(id)
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
