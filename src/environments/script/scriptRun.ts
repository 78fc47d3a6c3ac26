/**
 * One run of an environment script as the runner, its pool and its workers pass it on: what is
 * run (code, arguments, modules, limits), the host that answers its module calls, and what it
 * came to.
 */

/** The host side of a run's env: module calls (env:fs, tools, adapters). */
export interface ScriptHost {
  /**
   * Calls `fn` of host module `module` with the script's arguments (JSON data, byte arrays as
   * `Uint8Array`). Answer with JSON-able data or a `Uint8Array` (structured clone); a failure is a
   * rejection or `{ error: string }`, which the script sees as a rejected promise with that message.
   */
  readonly call: (module: string, fn: string, args: ReadonlyArray<unknown>) => Promise<unknown>
}

/** A module a run may import as `env:<name>`. */
export interface ScriptModule {
  readonly name: string
  readonly exports: ReadonlyArray<string>
  /** `host`: each export is an async function answered by `ScriptHost.call`; `pure`: `source` evaluated in the sandbox. */
  readonly kind: "host" | "pure"
  /** A pure module's bundle (from `bundlePureModule`): code whose value is the module's exports. */
  readonly source?: string
  /** Why a pure module could not be made: importing it fails with this, and nothing else of the environment does. */
  readonly unavailable?: string
}

/** One run of a script. */
export interface ScriptRun {
  /** The compiled code, from `validateScript`. */
  readonly code: string
  /** The script's path in the environment (stack traces name it). */
  readonly path: string
  /** The argument of the default export (JSON data). */
  readonly args: unknown
  /** `run` calls the default export; `test` runs what the file registers with `env:test`'s `test`. */
  readonly mode: "run" | "test"
  readonly modules: ReadonlyArray<ScriptModule>
  /** The wall-clock limit: the worker is terminated when it passes. */
  readonly timeoutMs: number
  /** How much console output the caller shows; at least this much is captured (up to 2 MB). */
  readonly maxOutputBytes: number
  /**
   * How much console output to capture (default four times `maxOutputBytes`), at most 2 MB
   * (`captureCeilingBytes`): what the caller can keep of a long output. All of it is counted.
   */
  readonly maxCapturedBytes?: number
}

/** What a run came to; `output` is the console's text as captured (also when it failed or timed out), `outputBytes` its full size in UTF-8. */
export type ScriptResult =
  | { readonly _tag: "Completed"; readonly value: unknown; readonly output: string; readonly outputBytes: number }
  | { readonly _tag: "Failed"; readonly error: string; readonly output: string; readonly outputBytes: number }
  | {
    readonly _tag: "TimedOut"
    /** What the run had added to its thread's memory when it was stopped, when the thread said. */
    readonly memory?: { readonly usedMb: number; readonly limitMb: number }
    readonly output: string
    readonly outputBytes: number
  }
  /** It added more than `limitMb` to its thread's memory (heap and buffers together). */
  | { readonly _tag: "OutOfMemory"; readonly limitMb: number; readonly output: string; readonly outputBytes: number }
  | {
    readonly _tag: "Tests"
    readonly results: ReadonlyArray<{ readonly name: string; readonly ok: boolean; readonly error?: string }>
    readonly output: string
    readonly outputBytes: number
  }
