/**
 * The `foundry` command line: `init`, `dev`, `start`, `build`, `deploy`, `releases`, `rollback`,
 * `run`, `routes`, `check`, `token`, `instances`, `install`, `uninstall`, `runs`, `approvals`. Each
 * command's work lives in its own module under `commands/`, imported only when that command runs,
 * so that parsing a command line loads the parser and nothing else.
 */
import { constants } from "node:os"
import { resolve } from "node:path"
import { Args, CliConfig, Command, HelpDoc, Options, ValidationError } from "@effect/cli"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import { defaultTeardown, type Teardown } from "@effect/platform/Runtime"
import { Cause, Console, Effect, Option } from "effect"
import packageJson from "../../package.json" with { type: "json" }
import { tokenScopes } from "../auth/TokenScope.js"
import { cluster, host, port, projectDir, projectDirOption, projectRoot, projectRootOption, runnerHost, runnerPort } from "./commands/options.js"
import { inCommandTerms } from "./commandTerms.js"
import { type Commands, helpRequest, helpText } from "./help.js"
import { reportError, shellWord, withTerminalColors } from "./terminal.js"

const init = Command.make(
  "init",
  { dir: Args.directory({ name: "dir" }).pipe(Args.withDescription("the folder to create the project in")) },
  ({ dir }) => Effect.flatMap(Effect.promise(() => import("./commands/init.js")), (command) => command.init(dir))
).pipe(Command.withDescription("create a new project"))

const serveOptions = { dir: projectDir, port, host, cluster, runnerPort, runnerHost }

/** `dev` and `start`: serving a project (or a release, for `start --release`), with or without watching it. */
const serve = (
  { cluster, dir, host, port, release, runnerHost, runnerPort }: Command.Command.ParseConfig<typeof serveOptions> & {
    readonly release: Option.Option<string>
  },
  watch: boolean
) =>
  Effect.flatMap(
    Effect.promise(() => import("./serveProject.js")),
    ({ serveProject }) =>
      Effect.scoped(serveProject({
        root: Option.getOrElse(release, () => dir),
        release: Option.isSome(release),
        port: Option.getOrUndefined(port),
        host: Option.getOrUndefined(host),
        watch,
        cluster: cluster || Option.isSome(runnerPort) || Option.isSome(runnerHost)
          ? {
            ...Option.match(runnerPort, { onNone: () => ({}), onSome: (port) => ({ port }) }),
            ...Option.match(runnerHost, { onNone: () => ({}), onSome: (host) => ({ host }) })
          }
          : undefined
      }))
  ).pipe(
    // A server is stopped by a signal (Ctrl-C, or its process manager's SIGTERM): that is its normal end.
    Effect.onInterrupt(() =>
      Effect.sync(() => {
        process.exitCode = 0
      })
    )
  )

const dev = Command.make("dev", { ...serveOptions, dir: projectRoot }, (options) => serve({ ...options, release: Option.none() }, true)).pipe(
  Command.withDescription("serve a project and reload it on every change")
)

const release = Options.directory("release", { exists: "yes" }).pipe(
  Options.withDescription("serve a release folder built by `foundry build` (.foundry/releases/<id>) instead of a project's sources"),
  Options.map((dir) => resolve(dir)),
  Options.optional
)

const start = Command.make("start", { ...serveOptions, release }, (options) => serve(options, false)).pipe(
  Command.withDescription("serve a project or a release (production: no watching)")
)

const build = Command.make("build", {
  dir: projectRoot,
  docker: Options.boolean("docker").pipe(
    Options.withDescription("also write a Dockerfile, a compose.yaml (with PostgreSQL) and the framework's packed tarball into the release")
  )
}, ({ dir, docker }) => Effect.flatMap(Effect.promise(() => import("./commands/build.js")), (command) => command.build({ dir, docker }))).pipe(
  Command.withDescription("check the project and bundle it into a release that runs without its sources: .foundry/releases/rel_<hash>")
)

const run = Command.make(
  "run",
  {
    agent: Args.text({ name: "agent" }).pipe(Args.withDescription("the agent's id, e.g. support/triage")),
    message: Args.text({ name: "message" }).pipe(Args.withDescription("the message to send")),
    dir: projectRootOption,
    instance: Options.text("instance").pipe(Options.withDescription("the instance (default: default)"), Options.optional)
  },
  ({ agent, dir, instance, message }) =>
    Effect.flatMap(
      Effect.promise(() => import("./commands/run.js")),
      (command) => command.run({ agent, message, dir, instance: Option.getOrUndefined(instance) })
    )
).pipe(Command.withDescription("send one message to an agent and stream its answer"))

const routes = Command.make("routes", { dir: projectRoot }, ({ dir }) =>
  Effect.flatMap(Effect.promise(() => import("./commands/routes.js")), (command) => command.routes(dir))).pipe(
    Command.withDescription("print the project's route table")
  )

const check = Command.make("check", { dir: projectRoot }, ({ dir }) =>
  Effect.flatMap(Effect.promise(() => import("./commands/check.js")), (command) => command.check(dir))).pipe(
    Command.withDescription("validate routes and type-check them with the generated types")
  )

const tokenCommand = () => Effect.promise(() => import("./commands/token.js"))

// `foundry token` alone: what it can do.
const token = Command.make("token", {}, () => showHelp(["token"])).pipe(
  Command.withDescription("API tokens, needed when the server listens beyond loopback or the config requires them"),
  Command.withSubcommands([
    Command.make("create", {
      scope: Options.choice("scope", tokenScopes).pipe(
        Options.withDescription("read: GET routes and event streams; run: read, and start, cancel, steer and approve runs; deploy: read, and ship and roll back releases; admin: everything")
      ),
      name: Options.text("name").pipe(Options.withDescription("what the token is for, shown by `foundry token list`"), Options.optional),
      dir: projectDirOption
    }, ({ dir, name, scope }) => Effect.flatMap(tokenCommand(), (command) => command.create({ dir, scope, name: Option.getOrUndefined(name) })))
      .pipe(Command.withDescription("create a token and print it (the only time it is shown)")),
    Command.make("list", { dir: projectDirOption }, ({ dir }) => Effect.flatMap(tokenCommand(), (command) => command.list(dir)))
      .pipe(Command.withDescription("list the tokens: id, name, scope, created, last used, revoked")),
    Command.make("revoke", {
      id: Args.text({ name: "id" }).pipe(Args.withDescription("the token's id, as `foundry token list` shows it")),
      dir: projectDirOption
    }, ({ dir, id }) => Effect.flatMap(tokenCommand(), (command) => command.revoke({ dir, id })))
      .pipe(Command.withDescription("revoke a token: it stops working at once"))
  ])
)

const instancesCommand = () => Effect.promise(() => import("./commands/instances.js"))

/** `--url` (or `--to`): the running server a command talks to. */
const serverUrl = Options.text("url").pipe(
  Options.withAlias("to"),
  Options.withDescription("the server's base URL, e.g. http://127.0.0.1:4141 (an /api at its end is dropped; default: the one serving the project on this machine, else http://<server.host>:<server.port> of its foundry.config.ts)"),
  Options.optional
)

/** Which running server a client command talks to, and the token it sends. */
const server = {
  dir: projectDirOption,
  url: serverUrl,
  token: Options.redacted("token").pipe(Options.withDescription("an API token, sent as a bearer token (default: $FOUNDRY_TOKEN)"), Options.optional)
}

const instanceAgent = Options.text("agent").pipe(
  Options.withDescription("the instance's agent, needed when instances of several agents have that id"),
  Options.optional
)

const instanceArg = Args.text({ name: "instance" }).pipe(Args.withDescription("the instance's id, as `foundry instances` shows it"))

const capabilityArg = Args.text({ name: "capability" }).pipe(
  Args.withDescription("tool:<id> or mcp:<id>, or the id alone when only one capability has it")
)

const instanceChanges = () => Effect.promise(() => import("./commands/instanceChanges.js"))

const reasonOption = (what: string) => Options.text("reason").pipe(Options.withDescription(`why it is ${what}, shown with its status`), Options.optional)

const instanceSubcommands = [
  Command.make("create", {
    ...server,
    agent: Args.text({ name: "agent" }).pipe(Args.withDescription("the agent the instance is of")),
    id: Options.text("id").pipe(Options.withDescription("the instance's id (default: one is made)"), Options.optional),
    key: Options.text("key").pipe(
      Options.withDescription("a provisioning key (your customer's id): asked again with it, the same instance is answered"),
      Options.optional
    ),
    context: Options.file("context", { exists: "yes" }).pipe(Options.withDescription("a JSON file with the instance's context"), Options.optional)
  }, (options) => Effect.flatMap(instanceChanges(), (command) => command.create(options)))
    .pipe(Command.withDescription("create an instance of an agent on a running server, with its context")),
  Command.make("show", { ...server, instance: instanceArg, agent: instanceAgent }, (options) =>
    Effect.flatMap(instanceChanges(), (command) => command.show(options)))
    .pipe(Command.withDescription("show an instance: status, context and installations")),
  Command.make("context", {
    ...server,
    instance: instanceArg,
    file: Args.file({ name: "file", exists: "yes" }).pipe(Args.withDescription("a JSON file with the whole new context")),
    agent: instanceAgent
  }, (options) => Effect.flatMap(instanceChanges(), (command) => command.setContext(options)))
    .pipe(Command.withDescription("replace an instance's context with a JSON file's (checked against its agent's context schema)")),
  Command.make("pause", { ...server, instance: instanceArg, agent: instanceAgent, reason: reasonOption("paused") }, (options) =>
    Effect.flatMap(instanceChanges(), (command) => command.setPaused({ ...options, paused: true })))
    .pipe(Command.withDescription("pause an instance: it takes no new runs until it is resumed")),
  Command.make("resume", { ...server, instance: instanceArg, agent: instanceAgent }, (options) =>
    Effect.flatMap(instanceChanges(), (command) => command.setPaused({ ...options, paused: false, reason: Option.none() })))
    .pipe(Command.withDescription("resume a paused instance")),
  Command.make("archive", { ...server, instance: instanceArg, agent: instanceAgent, reason: reasonOption("archived") }, (options) =>
    Effect.flatMap(instanceChanges(), (command) => command.archive(options)))
    .pipe(Command.withDescription("archive an instance for good: it takes no runs again; its runs stay readable"))
] as const

const instances = Command.make("instances", {
  ...server,
  agent: Options.text("agent").pipe(Options.withDescription("only this agent's instances"), Options.optional),
  search: Options.text("search").pipe(Options.withDescription("only instances whose id or provisioning key contains this"), Options.optional),
  all: Options.boolean("all").pipe(Options.withDescription("every instance, page after page (default: the first page)"))
}, (options) => Effect.flatMap(instancesCommand(), (command) => command.list(options)))
  .pipe(
    Command.withDescription("list a running server's instances: id, agent, key, status, installed, updated; or create, show, change one"),
    Command.withSubcommands(instanceSubcommands)
  )

const install = Command.make("install", {
  ...server,
  instance: instanceArg,
  capability: capabilityArg,
  config: Options.file("config", { exists: "yes" }).pipe(
    Options.withDescription("a JSON file with the installation's config (secret fields are sealed by the server)"),
    Options.optional
  ),
  agent: instanceAgent
}, (options) => Effect.flatMap(instancesCommand(), (command) => command.install(options)))
  .pipe(Command.withDescription("install a capability on an instance of a running server, with its config"))

const uninstall = Command.make("uninstall", { ...server, instance: instanceArg, capability: capabilityArg, agent: instanceAgent }, (options) =>
  Effect.flatMap(instancesCommand(), (command) => command.uninstall(options)))
  .pipe(Command.withDescription("remove a capability from an instance of a running server"))

const runsCommand = () => Effect.promise(() => import("./commands/runs.js"))

const runs = Command.make("runs", {
  ...server,
  agent: Options.text("agent").pipe(Options.withDescription("only this agent's runs"), Options.optional),
  status: Options.choice("status", ["queued", "running", "suspended", "completed", "failed", "cancelled"]).pipe(
    Options.withDescription("only runs with this status"),
    Options.optional
  ),
  limit: Options.integer("limit").pipe(Options.withDescription("how many of the newest runs (default 50, at most 1000)"), Options.withDefault(50))
}, (options) => Effect.flatMap(runsCommand(), (command) => command.list(options))).pipe(
  Command.withDescription("list a running server's newest runs: id, agent, instance, status, created, input; or cancel one"),
  Command.withSubcommands([
    Command.make("cancel", { ...server, run: Args.text({ name: "run" }).pipe(Args.withDescription("the run's id, as `foundry runs` shows it")) }, (options) =>
      Effect.flatMap(runsCommand(), (command) => command.cancel(options)))
      .pipe(Command.withDescription("cancel a run that has not ended, wherever it executes"))
  ])
)

const approvalArg = Args.text({ name: "approval" }).pipe(Args.withDescription("the approval's id, as `foundry approvals` shows it"))
const decisionReason = Options.text("reason").pipe(Options.withDescription("why, shown with the decision (the model reads a denial's)"), Options.optional)

const approvals = Command.make("approvals", server, (options) => Effect.flatMap(runsCommand(), (command) => command.pending(options))).pipe(
  Command.withDescription("list the approvals waiting on a person; approve or deny one"),
  Command.withSubcommands([
    Command.make("approve", {
      ...server,
      approval: approvalArg,
      reason: decisionReason,
      conversation: Options.boolean("conversation").pipe(Options.withDescription("approve the tool for the rest of the run's conversation too"))
    }, (options) => Effect.flatMap(runsCommand(), (command) => command.decide({ ...options, decision: "approve" })))
      .pipe(Command.withDescription("approve a call: the run goes on and makes it")),
    Command.make("deny", { ...server, approval: approvalArg, reason: decisionReason }, (options) =>
      Effect.flatMap(runsCommand(), (command) => command.decide({ ...options, decision: "deny", conversation: false })))
      .pipe(Command.withDescription("deny a call: the run goes on, told the call was denied"))
  ])
)

const deployCommand = () => Effect.promise(() => import("./commands/deploy.js"))

/** The server a release command talks to (`--to`, or `--url` as the other client commands say), and the token it sends. */
const target = {
  url: serverUrl,
  token: Options.redacted("token").pipe(
    Options.withDescription("an API token, sent as a bearer token (default: $FOUNDRY_TOKEN); changing releases needs the deploy scope"),
    Options.optional
  )
}

const deploy = Command.make("deploy", {
  ...target,
  dir: projectRoot,
  dryRun: Options.boolean("dry-run").pipe(Options.withDescription("print what would change, and switch nothing"))
}, (options) => Effect.flatMap(deployCommand(), (command) => command.deploy(options))).pipe(
  Command.withDescription("build the project's release and ship it to a running server, which switches new runs to it")
)

const releases = Command.make("releases", { ...target, dir: projectDirOption }, (options) =>
  Effect.flatMap(deployCommand(), (command) => command.releases(options))).pipe(
    Command.withDescription("list a server's releases: id, deployed, by, current, runs, changes")
  )

const rollback = Command.make("rollback", {
  ...target,
  dir: projectDirOption,
  id: Args.text({ name: "id" }).pipe(Args.withDescription("the release's id, as `foundry releases` shows it"))
}, (options) => Effect.flatMap(deployCommand(), (command) => command.rollback(options))).pipe(
  Command.withDescription("make an earlier release of a server current again: new runs start on it")
)

const commands = [init, dev, start, build, deploy, releases, rollback, run, routes, check, token, instances, install, uninstall, runs, approvals] as const

const foundry = Command.make("foundry").pipe(
  Command.withDescription("an Effect-native, file-routed runtime for AI agents"),
  Command.withSubcommands(commands)
)

const cli = Command.run(foundry, { name: "foundry", version: packageJson.version })

/** Failures the user can act on print their message (or their cause's), not a stack trace. */
const readable = (error: unknown): { readonly message: string } => {
  if (typeof error !== "object" || error === null) return { message: String(error) }
  const message = "message" in error && typeof error.message === "string" ? error.message : ""
  if (message !== "") return { message }
  if ("cause" in error && error.cause !== undefined) return readable(error.cause)
  return { message: "_tag" in error ? String(error._tag) : String(error) }
}

// A reader that stops early (`foundry releases | head -2`) closes the pipe: the rest is not wanted.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error
  process.exit(process.exitCode ?? 0)
})

/** 128 + the number of the signal that stopped this process, as a shell reports a command a signal killed; none before one. */
let stoppedBySignal: number | undefined
const stoppingSignals: ReadonlyArray<"SIGINT" | "SIGTERM"> = ["SIGINT", "SIGTERM"]
for (const signal of stoppingSignals) {
  process.once(signal, () => {
    stoppedBySignal ??= 128 + constants.signals[signal]
  })
}

/**
 * The exit code: the one a command or the failure handler set, else a signal's (a command that a
 * signal stopped before its end did not succeed: `foundry run ... && next` must not go on), else
 * the runtime's.
 */
const teardown: Teardown = (exit, onExit) => {
  const set = Number(process.exitCode ?? Number.NaN)
  if (Number.isInteger(set)) return onExit(set)
  if (stoppedBySignal !== undefined) return onExit(stoppedBySignal)
  defaultTeardown(exit, onExit)
}

/**
 * Where `--log-level` goes, when @effect/cli refused it: it reads it only before a command's own
 * options (and has no global options to declare it on), so after them it is an unknown argument.
 */
const logLevelPlace = (error: ValidationError.ValidationError): Effect.Effect<void> => {
  if (!("error" in error) || !/unknown argument: '--log-level/.test(HelpDoc.toAnsiText(error.error))) return Effect.void
  const args = process.argv.slice(2)
  const at = args.findIndex((arg) => arg.startsWith("--log-level"))
  const flag = args[at]?.includes("=") === true ? args.slice(at, at + 1) : args.slice(at, at + 2)
  const rest = args.filter((_, index) => index < at || index >= at + flag.length)
  return reportError("--log-level goes before the command", {
    message: `as in: foundry ${[...flag, ...rest].map(shellWord).join(" ")}`
  })
}

/**
 * An option given last without its value: @effect/cli refuses it as an unknown argument, or as an
 * invalid subcommand, as if there were no such option. The usage says what kind of value it takes.
 */
const valueMissing = (): Effect.Effect<void> => {
  const args = process.argv.slice(2)
  const flag = args[args.length - 1]
  if (flag === undefined || !/^--[\w-]+$/.test(flag)) return Effect.void
  const kind = new RegExp(`\\[${flag} (\\w+)\\]`).exec(HelpDoc.toAnsiText(Command.getHelp(foundry, CliConfig.defaultConfig)))?.[1]
  if (kind === undefined) return Effect.void
  return reportError(`${flag} needs a value`, { message: `as in: foundry ${args.map(shellWord).join(" ")} <${kind}>` })
}

/** The help `foundry` prints: @effect/cli's for each command, laid out for a terminal (`help.ts`). */
const commandLine: Commands = { root: foundry.descriptor, commands: commands.map((command) => command.descriptor) }

function showHelp(path: ReadonlyArray<string>): Effect.Effect<void> {
  return Console.log(helpText(commandLine, path, { name: "foundry", version: packageJson.version, width: Math.min(process.stdout.columns ?? 100, 100) }))
}

const program = Option.match(helpRequest(commandLine, process.argv.slice(2)), { onNone: () => cli(process.argv), onSome: showHelp })

withTerminalColors(program).pipe(
  Effect.catchAllCause((cause) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.void
    const failure = Cause.failureOption(cause)
    // @effect/cli has already printed usage for a validation error.
    if (failure._tag === "Some" && ValidationError.isValidationError(failure.value)) {
      return Effect.zipRight(
        Effect.zipRight(logLevelPlace(failure.value), valueMissing()),
        Effect.sync(() => {
          process.exitCode = 2
        })
      )
    }
    const error = failure._tag === "Some" ? failure.value : Cause.squash(cause)
    return Effect.zipRight(
      reportError("error", { message: inCommandTerms(readable(error).message) }),
      Effect.sync(() => {
        process.exitCode = 1
      })
    )
  }),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true, teardown })
)
