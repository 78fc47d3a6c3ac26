/**
 * `foundry dev [dir]`: discover, generate, serve, and rebuild on every change.
 */
import { Command } from "@effect/cli"
import { Effect, Option } from "effect"
import { serveProject } from "../serveProject.js"
import { host, port, projectDir } from "./options.js"

/** The `dev` command. */
export const dev = Command.make("dev", { dir: projectDir, port, host }, ({ dir, host, port }) =>
  serveProject({ root: dir, port: Option.getOrUndefined(port), host: Option.getOrUndefined(host), watch: true }).pipe(
    Effect.scoped
  )).pipe(Command.withDescription("serve a project and reload it on every change"))
