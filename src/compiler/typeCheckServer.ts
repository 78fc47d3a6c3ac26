/**
 * `foundry dev`'s type checks, in one `tracedTsc.cjs --serve` process kept for as long as the dev
 * server runs: a check after a save parses only the files the save changed, where a new `tsc`
 * parsed and bound the 190,000 lines of declarations a project is checked against each time (about
 * two thirds of a check). The process runs at a lower priority than the server, since nobody waits
 * for it: on a machine with few cores it would otherwise slow the rebuilds and requests beside it.
 */
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process"
import { constants, getPriority, setPriority } from "node:os"
import { createInterface } from "node:readline"
import type { FileSystem } from "@effect/platform"
import type { PlatformError } from "@effect/platform/Error"
import { Effect, type Scope } from "effect"
import { packageLayout } from "../packageLayout.js"
import { checkResult, prepareCheck, type TypeCheckResult } from "./typeCheck.js"

/** The type checks of one project, each a check of the project as it is once it is asked for. */
export interface TypeChecks {
  /**
   * Checks the project (whose generated files are already written). Interrupted, the check under
   * way still ends in the checking process, its answer dropped; the checks asked for meanwhile are
   * then answered by one. Fails only when the check's tsconfig cannot be written.
   */
  readonly check: (configFile: string | undefined) => Effect.Effect<TypeCheckResult, PlatformError, FileSystem.FileSystem>
}

/** What the checking process says of one check. */
interface Answer {
  readonly id: number
  readonly status: number
  readonly output: string
}

const isAnswer = (value: unknown): value is Answer =>
  typeof value === "object" && value !== null && "id" in value && typeof value.id === "number" &&
  "status" in value && typeof value.status === "number" && "output" in value && typeof value.output === "string"

/** Lowers the priority of process `pid` ten steps below this process's own, or to the lowest. */
const beneathThisProcess = (pid: number) => {
  try {
    setPriority(pid, Math.min(getPriority() + 10, constants.priority.PRIORITY_LOW))
  } catch {
    // Gone already, or a system that refuses: the checks run as they would have, at our priority.
  }
}

/** The answer to check `id` that did not finish, saying `why`. */
const notFinished = (id: number, why: string): Answer => ({ id, status: 1, output: `tsc did not finish: ${why}` })

/** Why a check asked for once the checks' scope closed did not finish. */
const endedWithDev = "the checks ended with foundry dev"

/** The most of the checking process's stderr kept, to say why it ended. */
const stderrKept = 4096

/**
 * The type checks of the project at `root`, in a process started by the first check and again by
 * the first after one ended (a crash, memory), and killed when the scope closes; a check asked for
 * after that answers that it did not run.
 */
export const typeCheckServer = (root: string): Effect.Effect<TypeChecks, never, Scope.Scope> =>
  Effect.gen(function*() {
    let checker: ChildProcessWithoutNullStreams | undefined
    const waiting = new Map<number, (answer: Answer) => void>()
    let asked = 0
    let closed = false

    /** Answers every check waiting that it did not finish, saying `why`. */
    const unfinished = (why: string) => {
      for (const [id, answer] of waiting) answer(notFinished(id, why))
      waiting.clear()
    }

    const start = (args: ReadonlyArray<string>): ChildProcessWithoutNullStreams => {
      const child = spawn(process.execPath, [packageLayout.tracedTscFile, "--serve", ...args], { cwd: root })
      if (child.pid !== undefined) beneathThisProcess(child.pid)
      let stderr = ""
      createInterface({ input: child.stdout }).on("line", (line) => {
        let answer: unknown
        try {
          answer = JSON.parse(line)
        } catch {
          return
        }
        if (!isAnswer(answer)) return
        waiting.get(answer.id)?.(answer)
        waiting.delete(answer.id)
      })
      child.stderr.setEncoding("utf8")
      child.stderr.on("data", (chunk: string) => {
        stderr = `${stderr}${chunk}`.slice(-stderrKept)
      })
      // A write to a process that has just ended; its end answers what waits.
      child.stdin.on("error", () => {})
      const ended = (why: string) => {
        if (checker !== child) return
        checker = undefined
        const said = stderr.trim()
        unfinished(`${why}${said === "" ? "" : `\n${said}`}`)
      }
      child.on("error", (error) => ended(error.message))
      // Once its output is all read: an answer written just before it ended is taken first.
      child.on("close", (code, signal) => ended(signal === null ? `it exited with status ${code}` : `it was killed by ${signal}`))
      return child
    }

    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        closed = true
        checker?.kill("SIGKILL")
        checker = undefined
        unfinished(endedWithDev)
      })
    )

    const check = (configFile: string | undefined) =>
      Effect.gen(function*() {
        const args = yield* prepareCheck(root, configFile)
        const answer = yield* Effect.async<Answer>((resume) => {
          if (closed) return resume(Effect.succeed(notFinished(0, endedWithDev)))
          const child = checker ?? start(args)
          checker = child
          const id = ++asked
          waiting.set(id, (answer) => resume(Effect.succeed(answer)))
          child.stdin.write(`${JSON.stringify({ id })}\n`)
          return Effect.sync(() => waiting.delete(id))
        })
        return checkResult(root, answer.status, answer.output.trim(), () => `it answered with status ${answer.status} and no errors`)
      })

    return { check }
  })
