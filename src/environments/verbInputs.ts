/**
 * The closed verb set of an environment, as data: each verb's name and the input it takes. The
 * `Environments` service carries the verbs out; `verbs.ts` makes them the agent's tools.
 */
import { Schema } from "effect"

/** How many versions `history` lists when it is not told. */
export const historyLimit = 20

/**
 * A path a verb takes: an empty one is refused saying what goes there and, for a path that may be
 * left out, what leaving it out does (an empty `ls` path is not `/`).
 */
const pathOf = (what: string, leaveOut?: string) =>
  Schema.String.pipe(Schema.filter((value) =>
    value.trim() !== "" || `expected ${what}, got ${JSON.stringify(value)}${leaveOut === undefined ? "" : `; ${leaveOut}`}`
  ))

const path = pathOf("an absolute path such as /inbox/data.csv").annotations({ description: "an absolute path in the environment, e.g. /inbox/data.csv" })

/** A whole number from `min`; a refusal says what the number is for and what leaving it out does. */
const wholeFrom = (min: number, what: string, leaveOut: string) =>
  Schema.Int.pipe(Schema.greaterThanOrEqualTo(min, {
    message: (issue) => `expected ${min} or more (${what}), got ${String(issue.actual)}; ${leaveOut}`
  }))

/** A line of a file, numbered from 1. */
const lineNumber = (what: string, leaveOut: string) => wholeFrom(1, `${what}; lines are numbered from 1`, leaveOut)

/** Every verb's input. */
export const verbInputs = {
  write_file: Schema.Struct({ path, content: Schema.String }),
  edit_file: Schema.Struct({
    path,
    old: Schema.String.annotations({ description: "the exact text to replace; it must occur once (or set all)" }),
    new: Schema.String,
    all: Schema.optional(Schema.Boolean)
  }),
  read_file: Schema.Struct({
    path,
    from: Schema.optional(lineNumber("the first line to read", "leave from out to read from the start").annotations({ description: "first line (1-based)" })),
    to: Schema.optional(lineNumber("the last line to read", "leave to out to read to the end").annotations({ description: "last line (inclusive)" }))
  }).pipe(Schema.filter(({ from, to }) =>
    from === undefined || to === undefined || to >= from ||
    { path: ["to"], message: `to ${to} is before from ${from}: give a to of ${from} or more (the last line to read), or leave to out to read on from line ${from}` })),
  ls: Schema.Struct({ path: Schema.optional(pathOf("a folder such as /inbox", "leave path out to list /")), recursive: Schema.optional(Schema.Boolean) }),
  grep: Schema.Struct({
    // An empty pattern matches every line: a listing of everything, not a search.
    pattern: Schema.String.pipe(Schema.filter((value) =>
      value !== "" || "expected a regular expression to search for, got \"\" (which matches every line); read_file a file to see all of it, or ls to see what is there"
    )).annotations({ description: "a regular expression" }),
    path: Schema.optional(pathOf("a file or a folder such as /inbox", "leave path out to search every file")),
    ignoreCase: Schema.optional(Schema.Boolean)
  }),
  describe: Schema.Struct({ path }),
  rm: Schema.Struct({ path }),
  mv: Schema.Struct({ from: path, to: path }),
  cp: Schema.Struct({ from: path, to: path }),
  run_script: Schema.Struct({
    path: pathOf("the script's path, such as /scripts/summarize.js").annotations({ description: "the script, e.g. /scripts/summarize.js" }),
    args: Schema.optional(Schema.Unknown.annotations({ description: "JSON passed to the script's default export" }))
  }),
  run_tests: Schema.Struct({
    path: Schema.optional(
      pathOf("a test file or a folder of them, such as /scripts", "leave path out to run the tests under /scripts")
        .annotations({ description: "a test file or a folder of *.test.js files (default /scripts)" })
    )
  }),
  checkpoint: Schema.Struct({
    label: Schema.String.pipe(Schema.filter((label) =>
      label.trim() !== "" || `expected a label saying what this state is, e.g. "before refactoring the report", got ${JSON.stringify(label)}`
    ))
  }),
  undo: Schema.Struct({
    version: Schema.optional(
      wholeFrom(0, "the version to restore, as history lists it; 0 is the files the environment started with", "leave version out to undo the last change")
        .annotations({ description: "restore this version (see history); default: undo the last change" })
    )
  }),
  redo: Schema.Struct({}),
  history: Schema.Struct({
    limit: Schema.optional(wholeFrom(1, "how many versions to list, newest first", `leave limit out for the latest ${historyLimit}`))
  }),
  present: Schema.Struct({
    path: pathOf("a file under /out, such as /out/report.xlsx").annotations({ description: "a file under /out" }),
    caption: Schema.String.annotations({ description: "what the file is, for the person receiving it" })
  })
} as const

/** A verb's name. */
export type VerbName = keyof typeof verbInputs

/** A verb's decoded input. */
export type VerbInput<K extends VerbName> = Schema.Schema.Type<(typeof verbInputs)[K]>

/** What `view_image` takes: the engine runs it, not the `Environments` service. */
export const ViewImageInput = Schema.Struct({ path })
