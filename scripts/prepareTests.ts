/**
 * What `npm test` does before Vitest: the type checks of the repository and of the inspector, and
 * `dist/` brought up to date (which Vitest's global setup would otherwise do), side by side. Each
 * is mostly one core's work for 10-30 s, so one after another they left a core idle for a minute.
 * Exits non-zero, after all have ended, when any failed; their output goes through as it comes.
 *
 *   node --import tsx scripts/prepareTests.ts
 */
import { spawn } from "node:child_process"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { buildArgs } from "../test/support/buildFramework.js"

const root = fileURLToPath(new URL("../", import.meta.url))
const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc")

const steps: ReadonlyArray<{ readonly name: string; readonly args: ReadonlyArray<string> }> = [
  { name: "tsc --noEmit", args: [tsc, "--noEmit"] },
  { name: "tsc --noEmit -p inspector", args: [tsc, "--noEmit", "-p", "inspector"] },
  // As Vitest's global setup: a run that leaves dist/ as it is (another run uses it) builds nothing.
  ...[process.env.FOUNDRY_TEST_NO_BUILD === "1" ? undefined : buildArgs()].flatMap((args) => args === undefined ? [] : [{ name: "build", args }])
]

/** Runs `node <args>` in the repository, to the status it exits with (a signal counts as failing). */
const run = (args: ReadonlyArray<string>) =>
  new Promise<number>((resolve) => {
    const child = spawn(process.execPath, args, { cwd: root, stdio: "inherit" })
    child.on("error", (error) => {
      console.error(error.message)
      resolve(1)
    })
    child.on("exit", (code) => resolve(code ?? 1))
  })

const statuses = await Promise.all(steps.map((step) => run(step.args)))
const failed = steps.filter((_, i) => statuses[i] !== 0).map((step) => step.name)
if (failed.length > 0) {
  console.error(`npm test: ${failed.join(", ")} failed; no test ran`)
  process.exit(1)
}
