/**
 * Whether a process of this host has ended, by its pid: what tells a file another process left
 * (its address, its bundle folder) from one a live process still uses.
 */

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
