/**
 * The closed verb set an environment gives its agent, as compiled tools: names, inputs and what the
 * model is told of each. They are ordinary tool calls to the engine (journaled, permitted,
 * approved and timed like any other); their `run` hands the call to the `Environments` service.
 */
import { Effect, Schema } from "effect"
import type { CompiledTool, EnvironmentRoute } from "../compiler/CompiledApp.js"
import { defineTool } from "../definitions/defineTool.js"
import { Environments } from "./Environments.js"
import { type VerbInput, verbInputs, type VerbName, ViewImageInput } from "./verbInputs.js"

/** What each verb does, as the model reads it. */
const descriptions: Record<VerbName, string> = {
  write_file: "Create or overwrite a text file in your environment (scripts go in /scripts, results in /out, scratch in /tmp)",
  edit_file: "Replace exact text in a file: old must occur exactly once unless all is true",
  read_file: "Read a text file, numbered by line; give from/to for a range of a long file (describe or grep a large file instead of reading it whole)",
  ls: "List a folder (default /) with file sizes",
  grep: "Search files for a regular expression; answers path:line: text",
  describe: "A short summary of a file by its format (CSV columns, spreadsheet sheets, JSON shape, image size) without reading its bytes",
  rm: "Remove a file or a folder",
  mv: "Move or rename a file or a folder",
  cp: "Copy a file or a folder",
  run_script: "Run a script from the environment: it must `export default async function (args)` and may import only env: modules (see /skills/imports.md); answers its return value and console output",
  run_tests: "Run *.test.js files (import { test, assert } from \"env:test\"); answers each test's result",
  checkpoint: "Label the current state of the files, to find it in history and restore it with undo",
  undo: "Undo the last change to the files (or restore a version from history)",
  redo: "Redo a change that undo took back",
  history: "The versions of the files, newest first: what changed, by which verb",
  present: "Hand a file from /out to the person you work for, with a caption saying what it is; it becomes an artifact of this run"
}

/** Verbs that never change the tree: they run without a version being written. */
export const readingVerbs: ReadonlySet<VerbName> = new Set(["read_file", "ls", "grep", "describe", "history"])

/** The verbs in the order the model is shown them. */
export const verbNames: ReadonlyArray<VerbName> = [
  "ls", "read_file", "describe", "grep", "write_file", "edit_file", "rm", "mv", "cp",
  "run_script", "run_tests", "checkpoint", "undo", "redo", "history", "present"
]

const verbTool = <K extends VerbName, A extends VerbInput<K>, I>(route: EnvironmentRoute, verb: K, input: Schema.Schema<A, I>): CompiledTool => {
  const definition = defineTool({
    name: verb,
    description: descriptions[verb],
    input,
    output: Schema.String,
    requires: [Environments],
    run: (decoded, context) => Effect.flatMap(Environments, (environments) => environments.verb({ ...route, context }, verb, decoded))
  })
  return { id: `${route.environmentId}#${verb}`, name: verb, file: undefined, definition, spec: { name: verb, description: descriptions[verb], parameters: verbParameters(verb) } }
}

const string = (description?: string) => description === undefined ? { type: "string" } : { type: "string", description }
const object = (properties: Record<string, unknown>, required: ReadonlyArray<string>) => ({ type: "object", properties, required, additionalProperties: false })
const pathParameter = string("an absolute path, e.g. /inbox/data.csv")

/** The JSON Schema of each verb's arguments, as written for models (short, with examples). */
const verbParameters = (verb: VerbName): Record<string, unknown> => {
  switch (verb) {
    case "write_file":
      return object({ path: pathParameter, content: string() }, ["path", "content"])
    case "edit_file":
      return object({ path: pathParameter, old: string("the exact text to replace"), new: string("the replacement"), all: { type: "boolean" } }, ["path", "old", "new"])
    case "read_file":
      return object({ path: pathParameter, from: { type: "integer", minimum: 1 }, to: { type: "integer", minimum: 1 } }, ["path"])
    case "ls":
      return object({ path: pathParameter, recursive: { type: "boolean" } }, [])
    case "grep":
      return object({ pattern: string("a regular expression"), path: pathParameter, ignoreCase: { type: "boolean" } }, ["pattern"])
    case "describe":
    case "rm":
      return object({ path: pathParameter }, ["path"])
    case "mv":
    case "cp":
      return object({ from: pathParameter, to: pathParameter }, ["from", "to"])
    case "run_script":
      return object({ path: string("the script, e.g. /scripts/summarize.js"), args: { description: "JSON handed to the script's default export" } }, ["path"])
    case "run_tests":
      return object({ path: string("a test file or folder (default /scripts)") }, [])
    case "checkpoint":
      return object({ label: string("e.g. before refactoring the report") }, ["label"])
    case "undo":
      return object({ version: { type: "integer", minimum: 0, description: "restore this version (see history); default: the last change" } }, [])
    case "redo":
      return object({}, [])
    case "history":
      return object({ limit: { type: "integer", minimum: 1 } }, [])
    case "present":
      return object({ path: string("a file under /out"), caption: string("what it is, e.g. \"Q3 revenue by region\"") }, ["path", "caption"])
  }
}

/** The tools of an agent that works in `environment`. */
export const environmentTools = (route: EnvironmentRoute): ReadonlyArray<CompiledTool> => {
  const tools: Record<VerbName, CompiledTool> = {
    write_file: verbTool(route, "write_file", verbInputs.write_file),
    edit_file: verbTool(route, "edit_file", verbInputs.edit_file),
    read_file: verbTool(route, "read_file", verbInputs.read_file),
    ls: verbTool(route, "ls", verbInputs.ls),
    grep: verbTool(route, "grep", verbInputs.grep),
    describe: verbTool(route, "describe", verbInputs.describe),
    rm: verbTool(route, "rm", verbInputs.rm),
    mv: verbTool(route, "mv", verbInputs.mv),
    cp: verbTool(route, "cp", verbInputs.cp),
    run_script: verbTool(route, "run_script", verbInputs.run_script),
    run_tests: verbTool(route, "run_tests", verbInputs.run_tests),
    checkpoint: verbTool(route, "checkpoint", verbInputs.checkpoint),
    undo: verbTool(route, "undo", verbInputs.undo),
    redo: verbTool(route, "redo", verbInputs.redo),
    history: verbTool(route, "history", verbInputs.history),
    present: verbTool(route, "present", verbInputs.present)
  }
  return [...verbNames.map((verb) => tools[verb]), viewImageTool(route)]
}

/**
 * `view_image`: shows the model an image from the tree. Its answer carries the image itself, so the
 * engine runs it (`builtin`), and offers it only when every model of the agent accepts images.
 */
const viewImageTool = (route: EnvironmentRoute): CompiledTool => {
  const description = "Look at an image in your environment (PNG, JPEG, GIF or WebP)"
  return {
    id: `${route.environmentId}#view_image`,
    name: "view_image",
    file: undefined,
    builtin: "view_image",
    environment: route,
    definition: defineTool({ description, input: ViewImageInput, output: Schema.String, run: () => Effect.dieMessage("view_image is run by the engine") }),
    spec: { name: "view_image", description, parameters: object({ path: pathParameter }, ["path"]) }
  }
}
