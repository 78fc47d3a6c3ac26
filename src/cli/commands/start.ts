/**
 * `foundry start [dir]`: serve a project as it is, without watching it.
 */
import { Command } from "@effect/cli"
import { Effect, Option } from "effect"
import { serveProject } from "../serveProject.js"
import { host, port, projectDir } from "./options.js"

/** The `start` command. */
export const start = Command.make("start", { dir: projectDir, port, host }, ({ dir, host, port }) =>
  serveProject({ root: dir, port: Option.getOrUndefined(port), host: Option.getOrUndefined(host), watch: false }).pipe(
    Effect.scoped
  )).pipe(Command.withDescription("serve a project (production: no watching)"))
