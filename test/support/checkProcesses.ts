/**
 * A project's type-checking processes (`tracedTsc.cjs`), seen from outside as `ps` sees them: by
 * their command lines and their `/proc/<pid>/stat` (Linux).
 */
import { readdirSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { Effect } from "effect"

/** The command line of process `pid`, empty once it is gone. */
const commandOf = (pid: string) => {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, "utf8")
  } catch {
    return ""
  }
}

/** The ids of the processes checking the project at `root` now. */
export const checkersOf = (root: string): ReadonlyArray<number> =>
  readdirSync("/proc").filter((entry) => {
    const command = /^\d+$/.test(entry) ? commandOf(entry) : ""
    return command.includes("tracedTsc.cjs") && command.includes(join(root, ".foundry/typecheck.json"))
  }).map(Number)

/** The one process checking the project at `root`, once it runs. */
export const checkerOf = (root: string) =>
  Effect.gen(function*() {
    for (let attempt = 0; attempt < 1500; attempt++) {
      const found = checkersOf(root)
      if (found.length > 1) return yield* Effect.die(new Error(`${found.length} processes check ${root}`))
      const [checker] = found
      if (checker !== undefined) return checker
      yield* Effect.sleep("20 millis")
    }
    return yield* Effect.die(new Error("no type check started"))
  })

/** The fields of process `pid`'s stat after its name, from the state (field 3) on. */
const statOf = (pid: number): ReadonlyArray<string> => readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]?.split(" ") ?? []

/** The nice value of process `pid` (field 19). */
export const niceOf = (pid: number) => Number(statOf(pid)[16])

/** The CPU time process `pid` has used, in clock ticks (fields 14 and 15). */
export const cpuTicksOf = (pid: number) => {
  const stat = statOf(pid)
  return Number(stat[11]) + Number(stat[12])
}

/** Whether process `pid` has ended (a zombie nobody reaped has). */
export const ended = (pid: number) => {
  try {
    return statOf(pid)[0] === "Z"
  } catch {
    return true
  }
}
