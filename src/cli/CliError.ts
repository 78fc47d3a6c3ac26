/**
 * A command could not do what was asked; `message` says what and how to fix it.
 */
import { Data } from "effect"

/** A CLI failure shown to the user as its message, with exit code 1. */
export class CliError extends Data.TaggedError("CliError")<{ readonly message: string }> {}
