/*
 * A worker thread that compiles scripts with esbuild for `validateScript`, one at a time (plain
 * JavaScript: it runs as is from `src/` and from `dist/`, which `packageLayout.compileWorkerFile`
 * points at). A thread has its own modules, so this esbuild is its own service process: a script
 * whose problems take esbuild long to report (it ships each one with its whole line, and hundreds
 * of thousands of them take it many seconds) is stopped with its thread, and the service ends
 * with it, while the esbuild of the rest of the process (the project's build) goes on untouched.
 *
 * Messages: main -> worker  { source, options }: esbuild's transform options (`transformOptions`)
 *           worker -> main  { _tag: "Compiled", code }
 *                           { _tag: "Problems", problems, count }: the first `maxProblems` in
 *                           the script's order, each quoted around its column, and how many in all
 *                           { _tag: "Crashed", error } when esbuild itself failed
 */
import { transform } from "esbuild"
import { parentPort, workerData } from "node:worker_threads"

if (parentPort === null) throw new Error("compileWorker.mjs runs as a worker thread")
const port = parentPort
const maxProblems = workerData.maxProblems

const isBuildFailure = (error) => typeof error === "object" && error !== null && Array.isArray(error.errors)

const syntaxProblem = (message) => {
  const location = message.location
  const text = /Top-level await is currently not supported/.test(message.text)
    ? "top-level await is not supported: await inside the default export"
    : message.text
  if (location === null || location === undefined) return { line: 1, column: 1, text }
  // A long line is quoted around its column only: esbuild quotes the whole line with each problem.
  const from = Math.max(0, location.column - 60)
  const quoted = `${from > 0 ? "…" : ""}${location.lineText.slice(from, from + 120)}${from + 120 < location.lineText.length ? "…" : ""}`
  const caret = `${" ".repeat(location.column - from + (from > 0 ? 1 : 0))}^`
  return { line: location.line, column: location.column + 1, text: `${text}\n  ${quoted}\n  ${caret}` }
}

const byPlace = (a, b) => (a.location?.line ?? 1) - (b.location?.line ?? 1) || (a.location?.column ?? 0) - (b.location?.column ?? 0)

const compile = async ({ source, options }) => {
  try {
    const result = await transform(source, options)
    return { _tag: "Compiled", code: result.code }
  } catch (error) {
    if (!isBuildFailure(error)) throw error
    // Only the few the answer lists cross to the main thread, each cut around its column.
    const first = [...error.errors].sort(byPlace).slice(0, maxProblems)
    return { _tag: "Problems", problems: first.map(syntaxProblem), count: error.errors.length }
  }
}

port.on("message", (request) => {
  // Any other failure (esbuild's service ended) is this thread's last answer: the main thread ends it.
  compile(request).then((answer) => port.postMessage(answer), (error) => port.postMessage({ _tag: "Crashed", error: String(error?.message ?? error) }))
})
