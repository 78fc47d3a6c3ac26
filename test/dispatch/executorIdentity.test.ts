import { spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { hostname } from "node:os"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Scope } from "effect"
import { isDeadExecutor, isLiveExecutor, makeExecutorName } from "../../src/dispatch/executorIdentity.js"

/** A process of this host that sleeps until killed, killed with SIGKILL when the scope closes. */
const sleeper = Effect.acquireRelease(
  Effect.sync(() => spawn("sleep", ["60"], { stdio: "ignore" })),
  (child) => Effect.sync(() => child.kill("SIGKILL"))
)

const exited = (child: ReturnType<typeof spawn>) =>
  Effect.async<void>((resume) => {
    if (child.exitCode !== null || child.signalCode !== null) return resume(Effect.void)
    child.once("exit", () => resume(Effect.void))
  })

describe("a lease holder's name says whether its executor is still there", () => {
  it.effect("an executor of this process is live while its scope is open, and gone once it closes", () =>
    Effect.gen(function*() {
      const scope = yield* Scope.make()
      const name = yield* Scope.extend(makeExecutorName, scope)
      expect(name.startsWith(`${hostname()}:`)).toBe(true)
      // The machine's boot is part of the host: two machines of one name are two hosts.
      expect(name.split("/")[0]?.endsWith(`:${readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim()}`)).toBe(true)
      expect(name.split("/")[1]).toBe(String(process.pid))
      expect(isLiveExecutor(name)).toBe(true)
      expect(isDeadExecutor(name)).toBe(false)
      yield* Scope.close(scope, Exit.void)
      expect(isLiveExecutor(name)).toBe(false)
      expect(isDeadExecutor(name)).toBe(true)
    }))

  it.scoped("a name with this process's pid that is not one of its executors is an earlier process's (a container restarted gives the same pid)", () =>
    Effect.gen(function*() {
      const mine = yield* makeExecutorName
      const [host, pid, , start] = mine.split("/")
      // The same pid and another start time, or no start time at all (a name written before they had one).
      for (const earlier of [`${host}/${pid}/node_earlier/${Number(start ?? "0") - 1}`, `${host}/${pid}/node_earlier`]) {
        expect(isDeadExecutor(earlier)).toBe(true)
        expect(isLiveExecutor(earlier)).toBe(false)
      }
    }))

  it.scoped("another process of this host is live while it runs with the start time its name says, and dead once killed", () =>
    Effect.gen(function*() {
      const child = yield* sleeper
      const pid = child.pid
      if (pid === undefined) return yield* Effect.die(new Error("sleep did not start"))
      const host = (yield* makeExecutorName).split("/")[0]
      const named = `${host}/${pid}/node_other`
      expect(isLiveExecutor(named)).toBe(true)
      expect(isDeadExecutor(named)).toBe(false)
      // Its pid, but a process that started at another time: another process that got the pid since.
      expect(isDeadExecutor(`${named}/1`)).toBe(true)
      child.kill("SIGKILL")
      yield* exited(child)
      expect(isDeadExecutor(named)).toBe(true)
      expect(isLiveExecutor(named)).toBe(false)
    }))

  it.scoped("a holder on another host, in another pid namespace of this one (a container sharing its name), or on a machine of this one's name and namespace number booted apart, is neither: only its lease's expiry tells", () =>
    Effect.gen(function*() {
      const [here = "", pid, , start] = (yield* makeExecutorName).split("/")
      const [name, namespace] = here.split(":")
      const otherBoot = `${name}:${namespace}:00000000-0000-4000-8000-000000000000`
      for (const host of [`not-${hostname()}`, `${hostname()}:1`, hostname(), `${name}:${namespace}`, otherBoot]) {
        const elsewhere = `${host}/${pid}/node_elsewhere/${start}`
        expect(isDeadExecutor(elsewhere)).toBe(false)
        expect(isLiveExecutor(elsewhere)).toBe(false)
      }
    }))
})
