/**
 * `npm run bench [-- <scenario>...]`: runs each benchmark scenario in a fresh Node process (so
 * memory figures of one do not include another's) and prints one JSON object per scenario on its
 * own line on stdout. Progress goes to stderr.
 *
 * The scenarios run as users run Foundry: compiled JavaScript, not TypeScript through tsx (whose
 * transform and source maps cost about a millisecond of CPU per run of the reference workload).
 * This file and everything it imports are bundled once into `bench/.build/` (packages stay
 * imports of `node_modules`), and each child process runs the bundle.
 */
import { spawn } from "node:child_process"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import { build } from "esbuild"
import { scenarios } from "./scenarios/index.js"
import { countingOperations } from "./support/effectOperations.js"
import { runClientsHere } from "./support/httpRuns.js"

const self = fileURLToPath(import.meta.url)
const bundle = fileURLToPath(new URL(".build/run.mjs", import.meta.url))

/** Compiles the benchmarks and the framework sources they drive into one module. */
const compile = () =>
  build({
    entryPoints: [self],
    outfile: bundle,
    bundle: true,
    platform: "node",
    format: "esm",
    target: "node20",
    packages: "external",
    // Not minified, so that a profile names the framework's functions; no `keepNames` either, as
    // in `dist/`: it wraps every function made at run time in a call that names it.
    logLevel: "error"
  })

/** Runs one scenario in a child process with `--expose-gc`; its stdout lines become ours. */
const runChild = (name: string): Promise<number> =>
  new Promise((resolve) => {
    const child = spawn(process.execPath, ["--expose-gc", bundle, "--child", name], {
      stdio: ["ignore", "inherit", "inherit"]
    })
    child.on("close", (code) => resolve(code ?? 1))
  })

/**
 * Runs one scenario here and prints its result, with the Node options it ran under (`npm run bench`
 * gives the repository's: V8's background threads sized to the machine, as in a project's npm scripts).
 */
const runHere = (name: string): Promise<void> => {
  const scenario = scenarios.find((s) => s.name === name)
  if (scenario === undefined) return Promise.reject(new Error(`unknown scenario "${name}"`))
  return Effect.runPromise(countingOperations(scenario.run)).then((result) => {
    process.stdout.write(JSON.stringify({ ...result, nodeOptions: process.env.NODE_OPTIONS ?? "" }) + "\n")
  })
}

const main = async (): Promise<number> => {
  const args = process.argv.slice(2)
  if (args[0] === "--child") {
    await runHere(args[1] ?? "")
    return 0
  }
  if (args[0] === "--http-clients") {
    await Effect.runPromise(runClientsHere(args[1] ?? "", Number(args[2]), Number(args[3])))
    return 0
  }
  const known = scenarios.map((s) => s.name)
  const unknown = args.filter((a) => !known.includes(a))
  if (unknown.length > 0) {
    process.stderr.write(`unknown scenario(s): ${unknown.join(", ")}; the scenarios are: ${known.join(", ")}\n`)
    return 2
  }
  await compile()
  let failures = 0
  // The machine's figures first, whichever scenarios are named: the others are read against them.
  const named = args.length === 0 ? known : ["machine", ...args.filter((a) => a !== "machine")]
  for (const name of named) {
    const code = await runChild(name)
    if (code !== 0) {
      failures++
      process.stdout.write(JSON.stringify({ scenario: name, error: `the scenario's process exited with code ${code}` }) + "\n")
    }
  }
  return failures === 0 ? 0 : 1
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.stack ?? error.message : String(error)}\n`)
    process.exit(1)
  }
)
