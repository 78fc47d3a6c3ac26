/**
 * Arguments and options shared by several commands.
 */
import { Args, HelpDoc, Options, ValidationError } from "@effect/cli"
import { resolve } from "node:path"
import { Effect } from "effect"
import { noFolder, notAProject } from "../projectFolder.js"

/** `dir` as an absolute path when it is a folder, else the refusal that says what it is not. */
const existingFolder = (dir: string) => {
  const absolute = resolve(dir)
  const refusal = noFolder(dir, absolute)
  return refusal === undefined ? Effect.succeed(absolute) : Effect.fail(refusal)
}

/** The project folder, default the current one. */
export const projectDir = Args.text({ name: "dir" }).pipe(
  Args.withDescription("the project folder (default: the current folder)"),
  Args.withDefault("."),
  Args.mapEffect((dir) => Effect.mapError(existingFolder(dir), HelpDoc.p))
)

/** `--dir`, for commands whose positional arguments are taken. */
export const projectDirOption = Options.text("dir").pipe(
  Options.withDescription("the project folder (default: the current folder)"),
  Options.withDefault("."),
  Options.mapEffect((dir) => Effect.mapError(existingFolder(dir), (refusal) => ValidationError.invalidValue(HelpDoc.p(refusal))))
)

/** `projectDir`, which must be a project. */
export const projectRoot = projectDir.pipe(Args.mapEffect((dir) => {
  const refusal = notAProject(dir)
  return refusal === undefined ? Effect.succeed(dir) : Effect.fail(HelpDoc.p(refusal))
}))

/** `projectDirOption`, which must be a project. */
export const projectRootOption = projectDirOption.pipe(Options.mapEffect((dir) => {
  const refusal = notAProject(dir)
  return refusal === undefined ? Effect.succeed(dir) : Effect.fail(ValidationError.invalidValue(HelpDoc.p(refusal)))
}))

/** `--port`: overrides `server.port` of the config. */
export const port = Options.integer("port").pipe(
  Options.withDescription("the port to listen on (default: server.port of foundry.config.ts, else 4141)"),
  Options.mapEffect((port) =>
    port >= 0 && port <= 65535
      ? Effect.succeed(port)
      : Effect.fail(ValidationError.invalidValue(HelpDoc.p(`--port ${port} is no port: give one from 1 to 65535 (0 picks a free one)`)))
  ),
  Options.optional
)

/** `--host`: overrides `server.host` of the config. */
export const host = Options.text("host").pipe(
  Options.withDescription("the address to listen on (default: 127.0.0.1)"),
  Options.optional
)

/** `--cluster`: run as one runner of a cluster, as if the config had `cluster: {}`. */
export const cluster = Options.boolean("cluster").pipe(
  Options.withDescription("run as a cluster runner (PostgreSQL store; see the README's Cluster section)")
)

/** `--runner-port`: where this runner listens for the other runners (implies `--cluster`). */
export const runnerPort = Options.integer("runner-port").pipe(
  Options.withDescription("the port other runners reach this one at (default: cluster.port of the config, else 34431)"),
  Options.optional
)

/** `--runner-host`: the address other runners reach this one at (implies `--cluster`). */
export const runnerHost = Options.text("runner-host").pipe(
  Options.withDescription("the address other runners reach this one at (default: cluster.host of the config, else 127.0.0.1)"),
  Options.optional
)
