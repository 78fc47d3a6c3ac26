/**
 * Checks a loaded definition the type checker may not have seen (plain JavaScript, `as any`):
 * relationships must be imported values, fields must have the right shape. Each problem names the
 * field and the fix.
 */
import { posix as path } from "node:path"
import { Duration, Either, JSONSchema, Option, Schema } from "effect"
import { timerToolNames } from "../definitions/defineAgent.js"
import { defineFunctionOf, kindOf, type RouteKind, unknownFieldsOf } from "../definitions/RouteKind.js"
import { BudgetSchema } from "../definitions/configFields.js"
import { instanceIdForm, isInstanceId } from "../definitions/instanceId.js"
import { formatIssues, readableIssues } from "../definitions/readableIssues.js"
import { secretFields } from "../definitions/secretFields.js"
import { ScheduleTimingSchema, timingProblem } from "../definitions/scheduleTiming.js"
import { AgentMcpSchema } from "../mcp/McpServerSpec.js"
import { checkEnvironment } from "./validateEnvironment.js"
import { closest } from "../text/closest.js"

/** A problem with one definition, without the file (the caller adds it). */
export interface DefinitionProblem {
  readonly problem: string
  readonly fix: string
}

/** A value as a route file wrote it, for a problem's text: `"8"` for the string, `NaN` for the number. */
const written = (value: unknown): string => {
  if (typeof value === "number" || typeof value === "bigint") return String(value)
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

/** "a" or "an", for a kind's name. */
const article = (word: string): string => `${/^[aeiou]/.test(word) ? "an" : "a"} ${word}`

/** What people call a kind in a sentence: its name, except for the acronym. */
export const kindNoun = (kind: RouteKind): string => kind === "mcp" ? "MCP server" : kind

/** A kind with its article, as a sentence says it: "an agent", "an MCP server". */
export const aKind = (kind: RouteKind): string => kind === "mcp" ? "an MCP server" : article(kind)

/** Where the route file of an id would be, for an import hint (tools may live elsewhere too). */
const routeFileOf = (kind: RouteKind, id: string): string => {
  switch (kind) {
    case "agent":
      return `agents/${id}/agent.js`
    case "tool":
      return `tools/${id}.tool.js`
    case "mcp":
      return `mcp/${id}.js`
    default:
      return `${kind}s/${id}.js`
  }
}

/** A valid identifier for an id, e.g. `lookup-order` -> `lookupOrder`. */
const identifierOf = (id: string): string => {
  const last = id.split("/").pop() ?? id
  const camel = last.replace(/[^A-Za-z0-9]+(.)/g, (_, c: string) => c.toUpperCase()).replace(/[^A-Za-z0-9]/g, "")
  return /^[A-Za-z]/.test(camel) ? camel : `route${camel}`
}

/** The import statement, relative to `file`, that brings in the route `id` of `kind`. */
const importHint = (file: string, kind: RouteKind, id: string): string => {
  const target = path.relative(path.dirname(file), routeFileOf(kind, id))
  return `import ${identifierOf(id)} from "${target.startsWith(".") ? target : `./${target}`}"`
}

const relationship = (file: string, field: string, value: unknown, kind: RouteKind): DefinitionProblem | undefined => {
  if (kindOf(value) === kind) return undefined
  if (typeof value === "string") {
    return {
      problem: `${field} is the string "${value}"; relationships are imported values, not ids`,
      fix: `import the ${kind} and pass the value: ${importHint(file, kind, value)}`
    }
  }
  if (value === undefined) {
    // An import that names nothing, or one in a cycle: evaluated before the file it imports.
    return {
      problem: `${field} is undefined, but must be ${aKind(kind)}: its import names nothing, or is part of an import cycle ` +
        `(this file imports one that imports it back, directly or not), which leaves it undefined when this file is read`,
      fix: `import the ${kind}'s default export from its route file, and break any cycle: two agents cannot be each other's subagents`
    }
  }
  const found = kindOf(value)
  return {
    problem: `${field} is ${found === undefined ? "not a Foundry definition" : aKind(found)}, but must be ${aKind(kind)}`,
    fix: `pass a value made with ${defineFunctionOf[kind]} (imported from its route file)`
  }
}

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** One model spec, named by `field` (`model`, or `model[1]` in a fallback list). */
const checkModel = (field: string, model: unknown): DefinitionProblem | undefined =>
  typeof model === "string"
    ? model === "demo" || /^openai:.+/.test(model)
      ? undefined
      : { problem: `${field} "${model}" is not known`, fix: `use "demo", "openai:<model>" (e.g. "openai:gpt-4.1-mini") or a model value` }
    : isRecord(model) && typeof model.stream === "function"
    ? undefined
    : { problem: `${field} is not a model`, fix: `use "demo", "openai:<model>" or a LanguageModel value` }

const checkModels = (model: unknown): ReadonlyArray<DefinitionProblem | undefined> => {
  if (!Array.isArray(model)) return [checkModel("model", model)]
  if (model.length === 0) {
    return [{ problem: "model is an empty list", fix: `name at least one model, e.g. model: ["openai:gpt-4.1", "openai:gpt-4.1-mini"]` }]
  }
  return model.map((spec, index) => checkModel(`model[${index}]`, spec))
}

const timerNames: ReadonlyArray<unknown> = timerToolNames

const checkTimers = (timers: unknown): DefinitionProblem | undefined => {
  const fix = `use timers: true (all), or a list of "schedule", "schedules" and "sleep", e.g. timers: ["sleep"]`
  if (timers === undefined || typeof timers === "boolean") return undefined
  if (!Array.isArray(timers)) return { problem: "timers is neither true, false nor a list", fix }
  const unknown = timers.filter((name) => !timerNames.includes(name))
  return unknown.length === 0 ? undefined : { problem: `timers lists ${unknown.map((name) => JSON.stringify(name)).join(", ")}, ${unknown.length === 1 ? "which is not a timer tool" : "which are not timer tools"}`, fix }
}

/** An agent's own budget: the same fields and rules as the config's `budget`. */
const checkBudget = (budget: unknown): DefinitionProblem | undefined => {
  if (budget === undefined) return undefined
  const decoded = Schema.decodeUnknownEither(BudgetSchema, { errors: "all", onExcessProperty: "error" })(budget)
  return Either.isRight(decoded) ? undefined : {
    problem: `budget is wrong: ${formatIssues(readableIssues(decoded.left)).split("\n").join("; ")}`,
    fix: "give limits as numbers, 0 or more (tokens as whole numbers): maxTokensPerRun, maxCostPerRun (USD), maxTokensPerInstancePerDay, " +
      `maxCostPerInstancePerDay (USD), and onExceeded: "fail" (the default) or "ask"`
  }
}

/** An agent's own context window, in tokens. */
const checkContextWindow = (window: unknown): DefinitionProblem | undefined =>
  window === undefined || (typeof window === "number" && Number.isInteger(window) && window > 0)
    ? undefined
    : { problem: `contextWindow is ${written(window)}`, fix: "give the model's context window in tokens, a whole number above 0, e.g. contextWindow: 128000" }

/** An agent's MCP servers: each a server declaration, or `true` for the config's server of that name. */
const checkMcp = (mcp: unknown): DefinitionProblem | undefined => {
  const decoded = Schema.decodeUnknownEither(AgentMcpSchema, { errors: "all", onExcessProperty: "error" })(mcp)
  if (Either.isRight(decoded)) return undefined
  // Paths from the field: `mcp.files.timeout`.
  const issues = readableIssues(decoded.left, { root: "" }).map(({ message, path }) => ({
    message,
    path: path === "" ? "mcp" : path.startsWith("[") ? `mcp${path}` : `mcp.${path}`
  }))
  return {
    problem: `mcp is wrong: ${formatIssues(issues).split("\n").join("; ")}`,
    fix: `give servers by name: mcp: { files: { command: "npx", args: ["my-mcp-server"] } }, { url: "https://host/mcp", headers: { authorization: Config.redacted("TOKEN") } }, or true for the config's server of that name`
  }
}

/**
 * `description`'s problem, if it has one: missing, empty, or not text (a number, an object), each
 * said as it is, with `fix` the line to write.
 */
const checkDescription = (description: unknown, fix: string): DefinitionProblem | undefined =>
  typeof description === "string" && description.trim().length > 0
    ? undefined
    : description === undefined
    ? { problem: "description is missing", fix }
    : typeof description === "string"
    ? { problem: "description is empty", fix }
    : { problem: `description is ${written(description)}, not text`, fix }

const checkAgent = (file: string, definition: Record<string, unknown>): Array<DefinitionProblem | undefined> => {
  const tools = Array.isArray(definition.tools) ? definition.tools : []
  const maxTurns = definition.maxTurns
  return [
    checkDescription(definition.description, `add description: "what this agent does" to defineAgent({...})`),
    ...checkModels(definition.model),
    checkTimers(definition.timers),
    checkBudget(definition.budget),
    checkContextWindow(definition.contextWindow),
    checkMcp(definition.mcp),
    checkContext(definition.context, "use an effect/Schema value, e.g. context: Schema.Struct({ company: Schema.String })"),
    definition.instructions === undefined || typeof definition.instructions === "string" || typeof definition.instructions === "function"
      ? undefined
      : {
        problem: `instructions is ${definition.instructions === null ? "null" : typeof definition.instructions}, not a string or a function`,
        fix: `give instructions: "You help customers..." or instructions: ({ instance }) => "..." (returning a string)`
      },
    typeof maxTurns === "number" && Number.isInteger(maxTurns) && maxTurns > 0
      ? undefined
      : { problem: `maxTurns is ${written(maxTurns)}`, fix: "use a positive whole number, e.g. maxTurns: 12" },
    ...tools.map((tool, index) => relationship(file, `tools[${index}]`, tool, "tool")),
    ...(Array.isArray(definition.subagents) ? definition.subagents : []).map((agent, index) =>
      relationship(file, `subagents[${index}]`, agent, "agent")
    ),
    definition.environment === undefined
      ? undefined
      : relationship(file, "environment", definition.environment, "environment")
  ]
}

const installableFix = "use installable: { config: Schema.Struct({ url: Schema.String, token: Schema.Redacted(Schema.String) }) } (Schema.Redacted fields are secrets)"

/** An `installable` field: the schema of the config an installation carries. */
const checkInstallable = (installable: unknown): DefinitionProblem | undefined =>
  !isRecord(installable)
    ? { problem: `installable is ${installable === null ? "null" : typeof installable}, not { config: <Schema> }`, fix: installableFix }
    : Schema.isSchema(installable.config)
    ? undefined
    : { problem: "installable.config is not a Schema", fix: installableFix }

/**
 * A `context` field: the schema of the instance context an agent or tool reads. A context is plain
 * data, stored and shown as it is, so it holds no secret: those belong in an installation's config.
 */
const checkContext = (context: unknown, fix: string): DefinitionProblem | undefined => {
  if (context === undefined) return undefined
  if (!Schema.isSchema(context)) return { problem: "context is not a Schema", fix }
  const secrets = secretFields(context)
  return secrets.length === 0 ? undefined : {
    problem: `context declares secrets (${secrets.join(", ")}), but an instance's context is stored and shown as plain data`,
    fix: "keep secrets in the config of an installable tool or MCP server (installable: { config: Schema.Struct({ token: Schema.Redacted(Schema.String) }) })"
  }
}

// Instances install a tool one by one from the shared catalogue; an agent's own tool is always its agent's.
const checkSharedIfInstallable = (file: string, definition: Record<string, unknown>): DefinitionProblem | undefined => {
  if (definition.installable === undefined || !file.startsWith("agents/")) return undefined
  const shared = `tools/${path.basename(file)}`
  return {
    problem: "the tool is installable but lives in an agent's folder: instances install only shared tools (tools/), and an agent's own tools are always there",
    fix: `an installable tool must be shared: move it to ${shared}, or remove installable to keep it this agent's own tool`
  }
}

/**
 * A tool's input as models are given it: a JSON Schema. A schema with no JSON form (a
 * `DateFromSelf`, a recursive `suspend` without an identifier) has none to give.
 */
const checkJsonForm = (input: Schema.Schema.Any): DefinitionProblem | undefined => {
  try {
    JSONSchema.make(input)
    return undefined
  } catch (error) {
    const why = (error instanceof Error ? error.message : String(error)).split("\n").filter((line) => line.trim() !== "").slice(0, 2)
    return {
      problem: `input has no JSON Schema, which the model is given to call the tool: ${why.map((line) => line.trim()).join(", ")}`,
      fix: "use schemas that encode to JSON (Schema.Date, not Schema.DateFromSelf; Schema.BigInt, not Schema.BigIntFromSelf; " +
        "a recursive Schema.suspend with an identifier annotation), or annotate the field with its JSON Schema: .annotations({ jsonSchema: { type: \"string\" } })"
    }
  }
}

const checkTool = (file: string, definition: Record<string, unknown>): Array<DefinitionProblem | undefined> => [
  checkDescription(definition.description, `add description: "what this tool does" (the model reads it)`),
  Schema.isSchema(definition.input)
    ? checkJsonForm(definition.input)
    : { problem: "input is not a Schema", fix: "give input an effect/Schema value, e.g. input: Schema.Struct({ id: Schema.String })" },
  Schema.isSchema(definition.output)
    ? undefined
    : { problem: "output is not a Schema", fix: "give output an effect/Schema value, e.g. output: Schema.String" },
  typeof definition.run === "function"
    ? undefined
    : { problem: "run is not a function", fix: "add run: (input) => Effect.succeed(...)" },
  definition.timeout === undefined || Option.isSome(Duration.decodeUnknown(definition.timeout))
    ? undefined
    : { problem: `timeout ${JSON.stringify(definition.timeout)} is not a duration`, fix: `use a duration, e.g. timeout: "30 seconds"` },
  definition.installable === undefined ? undefined : checkInstallable(definition.installable),
  checkSharedIfInstallable(file, definition),
  checkContext(definition.context, "use an effect/Schema value, usually the agent's: context: Schema.Struct({ company: Schema.String })")
]

const checkMcpServer = (_file: string, definition: Record<string, unknown>): Array<DefinitionProblem | undefined> => [
  checkDescription(definition.description, `add description: "what this server offers" (shown where installations are chosen)`),
  checkInstallable(definition.installable),
  typeof definition.connect === "function"
    ? undefined
    : { problem: "connect is not a function", fix: "add connect: (config) => ({ url: config.url }) (Streamable HTTP) or ({ command, args, env }) (stdio)" }
]

const checkSchedule = (file: string, definition: Record<string, unknown>): Array<DefinitionProblem | undefined> => [
  relationship(file, "agent", definition.agent, "agent"),
  typeof definition.message === "string" && definition.message.trim().length > 0
    ? undefined
    : definition.message === undefined || definition.message === ""
    ? { problem: "message is missing", fix: `add message: "what the agent should do"` }
    : { problem: `message is ${written(definition.message)}, not text`, fix: `use message: "what the agent should do"` },
  checkTiming(definition.timing),
  checkInstanceId(definition.instance),
  // Read by the scheduler at every firing (and stored with the schedule): a value it does not know
  // would fail there, far from the file.
  checkChoice("overlap", definition.overlap, ["skip", "queue", "allow"], "skip", "what a firing does while the last run goes on"),
  checkChoice("misfire", definition.misfire, ["skip", "run-once", "catch-up"], "run-once", "what happens to firings missed while the server was down")
]

/** A field that takes one of a few words, `fallback` when left out. */
const checkChoice = (field: string, value: unknown, choices: ReadonlyArray<string>, fallback: string, meaning: string): DefinitionProblem | undefined =>
  typeof value === "string" && choices.includes(value)
    ? undefined
    : {
      problem: `${field} is ${written(value)}`,
      fix: `use one of ${choices.map((choice) => `"${choice}"`).join(", ")} (${meaning}), or leave it out for "${fallback}"`
    }

/** An instance named in the file itself: refused at load rather than at every firing. */
const checkInstanceId = (instance: unknown): DefinitionProblem | undefined =>
  typeof instance === "string" && instance !== "" && !isInstanceId(instance)
    ? { problem: `instance "${instance}" is not an instance id`, fix: `use ${instanceIdForm}, e.g. "default"` }
    : undefined

// A timing the scheduler cannot read would be stored as active and never fire: refuse it here.
const checkTiming = (value: unknown): DefinitionProblem | undefined => {
  const timing = Schema.decodeUnknownOption(ScheduleTimingSchema)(value)
  if (Option.isNone(timing)) {
    // Named when it is there but not text (`every: 1000`), which is not the same as missing.
    const given = isRecord(value) ? ["cron", "every", "at", "timezone"].find((key) => value[key] !== undefined && typeof value[key] !== "string") : undefined
    return given !== undefined && isRecord(value)
      ? { problem: `${given} is ${written(value[given])}, not a string`, fix: given === "every" ? `write it as text, e.g. every: "1 hour"` : `write ${given} as text` }
      : { problem: "no timing", fix: "give exactly one of cron (with an optional timezone), every or at, as a string" }
  }
  return timingProblem(timing.value)
}

const instanceForms = `an id ("default"), (event) => "<id>", { key: (event) => "<provisioning key>", create?: (event) => ({ context, installations }) }, or { installed: <an installable tool or MCP server, imported> }`

/** A playbook's `instance`: an id, a function to one, a provisioning key, or a capability its instances installed. */
const checkPlaybookInstance = (instance: unknown): DefinitionProblem | undefined => {
  if (typeof instance === "string" && instance !== "") return checkInstanceId(instance)
  if (typeof instance === "function") return undefined
  if (!isRecord(instance)) return { problem: `instance is ${instance === "" ? "an empty string" : String(instance)}`, fix: `use ${instanceForms}` }
  const fields = Object.keys(instance)
  if ("installed" in instance) {
    const extra = fields.filter((field) => field !== "installed")
    if (extra.length > 0) return { problem: `instance has installed and ${extra.join(", ")}`, fix: "give installed alone: { installed: crm } runs every instance that has it installed" }
    const installed = instance.installed
    const kind = kindOf(installed)
    if (kind === "mcp" || (kind === "tool" && isRecord(installed) && installed.installable !== undefined)) return undefined
    const fix = "import an installable shared tool (tools/<name>.tool.ts with installable: { config }) or an MCP server (mcp/<name>.ts) and pass it: instance: { installed: crm }"
    if (typeof installed === "string") return { problem: `instance.installed is the string "${installed}"; capabilities are imported values, not ids`, fix }
    if (kind === "tool") return { problem: "instance.installed is a tool that is not installable", fix: `give the tool installable: { config: Schema.Struct({...}) }, or ${fix}` }
    return { problem: `instance.installed is ${kind === undefined ? "not a Foundry definition" : aKind(kind)}, not an installable capability`, fix }
  }
  if ("key" in instance) {
    const extra = fields.filter((field) => field !== "key" && field !== "create")
    if (extra.length > 0) return { problem: `instance has ${extra.join(", ")} beside key`, fix: "give { key, create? }: key picks the instance, create makes it when none has the key" }
    if (typeof instance.key !== "function") return { problem: "instance.key is not a function", fix: "use key: (event) => event.customerId (the instance's provisioning key)" }
    return instance.create === undefined || typeof instance.create === "function"
      ? undefined
      : { problem: "instance.create is not a function", fix: "use create: (event) => ({ context: {...}, installations: [{ kind: \"tool\", id: \"crm\", config: {...} }] })" }
  }
  return { problem: `instance is an object with ${fields.length === 0 ? "no fields" : fields.join(", ")}`, fix: `use ${instanceForms}` }
}

const checkPlaybook = (file: string, definition: Record<string, unknown>): Array<DefinitionProblem | undefined> => {
  const on = definition.on
  return [
    relationship(file, "agent", definition.agent, "agent"),
    isRecord(on) && (on._tag === "Webhook" || on._tag === "Event") && typeof on.name === "string" && Schema.isSchema(on.schema)
      ? /^[a-z][a-z0-9-]*$/.test(on.name)
        ? undefined
        : { problem: `${on._tag === "Event" ? "event" : "webhook"} name "${on.name}" is not valid`, fix: `use lowercase letters, digits and dashes, e.g. "tickets"` }
      : { problem: "on is not an event source", fix: `use on: webhook("<name>", EventSchema) or on: event("<name>", EventSchema)` },
    typeof definition.message === "function"
      ? undefined
      : { problem: "message is not a function", fix: "use message: (event) => `...`" },
    // `definePlaybook` fills a missing `when` in; one given that is no function fails every event.
    typeof definition.when === "function"
      ? undefined
      : { problem: "when is not a function", fix: "use when: (event) => event.priority >= 3, or leave it out to take every event" },
    checkPlaybookInstance(definition.instance)
  ]
}

const checks: Partial<
  Record<RouteKind, (file: string, definition: Record<string, unknown>) => Array<DefinitionProblem | undefined>>
> = {
  agent: checkAgent,
  tool: checkTool,
  mcp: checkMcpServer,
  schedule: checkSchedule,
  playbook: checkPlaybook,
  environment: checkEnvironment
}

/** A field the `define*` call does not know: misspelt (`subagent`), it would be dropped without a word. */
const checkFields = (kind: RouteKind, definition: Record<string, unknown>): Array<DefinitionProblem> => {
  const known = Object.keys(definition)
  return unknownFieldsOf(definition).map((field) => {
    const meant = closest(field, known)
    return {
      problem: `${field} is not a field of ${defineFunctionOf[kind]}${meant === undefined ? "" : `; did you mean ${meant}?`}`,
      fix: `${meant === undefined ? "remove it" : `rename it to ${meant}`} (the fields: ${known.join(", ")})`
    }
  })
}

/** The problems of one definition of `kind` in `file`; empty when it is sound. */
export const validateDefinition = (file: string, kind: RouteKind, definition: unknown): ReadonlyArray<DefinitionProblem> => {
  const check = checks[kind]
  if (check === undefined || !isRecord(definition)) return []
  return [...checkFields(kind, definition), ...check(file, definition).filter((problem): problem is DefinitionProblem => problem !== undefined)]
}
