/** Helpers for the script runtime's tests: a checked script as a run, and a host that records its calls. */
import { Effect } from "effect"
import { transformSync } from "esbuild"
import { transformOptions } from "../../../src/environments/script/ScriptCompiler.js"
import { ScriptRunner } from "../../../src/environments/script/ScriptRunner.js"
import type { ScriptHost, ScriptModule, ScriptResult, ScriptRun } from "../../../src/environments/script/scriptRun.js"

/** The host modules the tests' scripts import. */
export const fsModule: ScriptModule = { name: "fs", exports: ["readFile", "readText", "writeFile", "refuse", "nothing"], kind: "host" }

/** The code the worker runs for a script, compiled as `validateScript` compiles it (the tests' scripts are valid). */
export const compiledCode = (path: string, source: string): string => transformSync(source, transformOptions(path)).code

/** A script compiled as `validateScript` compiles it. */
export const scriptRun = (
  path: string,
  source: string,
  options: Partial<Omit<ScriptRun, "code" | "path">> = {}
): ScriptRun => {
  const mode = options.mode ?? "run"
  const modules = options.modules ?? [fsModule]
  return {
    code: compiledCode(path, source),
    path,
    args: options.args ?? null,
    mode,
    modules,
    timeoutMs: options.timeoutMs ?? 10_000,
    maxOutputBytes: options.maxOutputBytes ?? 10_000,
    ...(options.maxCapturedBytes === undefined ? {} : { maxCapturedBytes: options.maxCapturedBytes })
  }
}

/** A fake host: files in a map, failures both ways a host can answer them; every call recorded. */
export const fakeHost = (files: Map<string, Uint8Array | string> = new Map()) => {
  const calls: Array<{ readonly module: string; readonly fn: string; readonly args: ReadonlyArray<unknown> }> = []
  const host: ScriptHost = {
    call: async (module, fn, args) => {
      calls.push({ module, fn, args })
      const path = String(args[0])
      switch (fn) {
        case "readFile":
        case "readText": {
          const content = files.get(path)
          if (content === undefined) throw new Error(`${path} does not exist`)
          return fn === "readText" && content instanceof Uint8Array ? new TextDecoder().decode(content) : content
        }
        case "writeFile":
          files.set(path, args[1] instanceof Uint8Array || typeof args[1] === "string" ? args[1] : JSON.stringify(args[1]))
          return { written: path }
        case "refuse":
          return { error: `${path} is read-only` }
        case "nothing":
          return undefined
        default:
          throw new Error(`no ${fn}`)
      }
    }
  }
  return { host, calls, files }
}

/** Runs `run` in scope `scope` of the current runner, for the instance of the same name. */
export const runIn = (scope: string, run: ScriptRun, host: ScriptHost = fakeHost().host): Effect.Effect<ScriptResult, never, ScriptRunner> =>
  Effect.flatMap(ScriptRunner, (runner) => runner.run({ scope, instance: scope }, run, host))
