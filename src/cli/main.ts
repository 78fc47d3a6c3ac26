/**
 * The `foundry` command line: `init`, `dev`, `start`, `run`, `routes`, `check`.
 */
import { Command, ValidationError } from "@effect/cli"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Cause, Effect } from "effect"
import packageJson from "../../package.json" with { type: "json" }
import { check } from "./commands/check.js"
import { dev } from "./commands/dev.js"
import { init } from "./commands/init.js"
import { routes } from "./commands/routes.js"
import { run } from "./commands/run.js"
import { start } from "./commands/start.js"
import { reportError } from "./terminal.js"

const foundry = Command.make("foundry").pipe(
  Command.withDescription("an Effect-native, file-routed runtime for AI agents"),
  Command.withSubcommands([init, dev, start, run, routes, check])
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

cli(process.argv).pipe(
  Effect.catchAllCause((cause) => {
    if (Cause.isInterruptedOnly(cause)) return Effect.void
    const failure = Cause.failureOption(cause)
    // @effect/cli has already printed usage for a validation error.
    if (failure._tag === "Some" && ValidationError.isValidationError(failure.value)) {
      return Effect.sync(() => {
        process.exitCode = 2
      })
    }
    const error = failure._tag === "Some" ? failure.value : Cause.squash(cause)
    return Effect.zipRight(
      reportError("error", readable(error)),
      Effect.sync(() => {
        process.exitCode = 1
      })
    )
  }),
  Effect.provide(NodeContext.layer),
  NodeRuntime.runMain({ disableErrorReporting: true })
)
