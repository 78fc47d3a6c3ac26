/**
 * The CLI's help reads in a terminal: every command on a line of its own with what it does, a
 * command's options with their descriptions beside them, nothing wider than the terminal (100
 * columns through a pipe). Help and usage errors read as plain text where colors are not wanted:
 * output to a pipe (as every test's is) carries no color codes, which @effect/cli writes whatever
 * the output.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"

const colorCode = "\u001b["

describe("the CLI's help through a pipe", () => {
  it.live("a command's help is plain text, its options and their descriptions there", () =>
    Effect.gen(function*() {
      const help = yield* runCli(["runs", "--help"])
      expect(help.code).toBe(0)
      expect(help.stdout).toMatch(/^Options:$/m)
      expect(help.stdout).toMatch(/^ {2}--limit <integer> +how many of the newest runs \(default 50, at most 1000\)$/m)
      // Its subcommand, with its usage, not the runs' options again.
      expect(help.stdout).toMatch(/^ {2}foundry runs cancel \[options\] <run>$/m)
      expect(help.stdout).toMatch(/^ {2}cancel <run> +cancel a run that has not ended/m)
      // The value's kind and its being optional are in the option's name already.
      expect(help.stdout).not.toContain("This setting is optional")
      expect(help.stdout).not.toContain("A user-defined piece of text")
      expect(help.stdout).not.toContain(colorCode)
    }))

  it.live("the help lists every command on its own line, with what it does, and fits the terminal", () =>
    Effect.gen(function*() {
      const help = yield* runCli(["--help"])
      expect(help.code).toBe(0)
      expect(help.stdout).toMatch(/^foundry \d+\.\d+\.\d+: an Effect-native, file-routed runtime for AI agents$/m)
      for (
        const [command, does] of [
          ["init <dir>", "create a new project"],
          ["dev \\[<dir>\\]", "serve a project and reload it on every change"],
          ["run <agent> <message>", "send one message to an agent"],
          ["token create --scope <scope>", "create a token"],
          ["instances create <agent>", "create an instance of an agent"],
          ["runs cancel <run>", "cancel a run that has not ended"],
          ["approvals deny <approval>", "deny a call"]
        ]
      ) {
        expect(help.stdout).toMatch(new RegExp(`^ {2}${command} +${does}`, "m"))
      }
      // Neither a parent's options before its subcommands, nor descriptions pushed past the terminal's edge.
      expect(help.stdout).not.toMatch(/instances \[--dir/)
      expect(help.stdout.split("\n").filter((line) => line.length > 100)).toEqual([])
      // Where a command's options are, and the options every command takes.
      expect(help.stdout).toContain("Run `foundry <command> --help` for a command's options.")
      expect(help.stdout).toContain("--log-level <level>")
      // `foundry` alone prints the same; `-h` and `--help` after a command's arguments ask for its help.
      expect((yield* runCli([])).stdout).toBe(help.stdout)
      const run = yield* runCli(["run", "support", "hello", "-h"])
      expect(run.code).toBe(0)
      expect(run.stdout).toMatch(/^foundry run: send one message to an agent and stream its answer$/m)
      expect(run.stdout).toMatch(/^ {2}<agent> +the agent's id, e.g. support\/triage$/m)
      expect((yield* runCli(["instances", "create", "--help"])).stdout).toMatch(/^ {2}--key <text> +a provisioning key/m)
      // After `--` as well (@effect/cli reads it there too).
      expect((yield* runCli(["run", "support", "--", "--help"])).stdout).toBe(run.stdout)
      // A command that does nothing alone says what its subcommands do.
      const token = yield* runCli(["token"])
      expect(token.code).toBe(0)
      expect(token.stdout).toMatch(/^ {2}foundry token revoke \[options\] <id>$/m)
      expect(token.stdout).toMatch(/^ {2}create --scope <scope> +create a token and print it/m)
    }))

  it.live("a usage error is plain text too", () =>
    Effect.gen(function*() {
      const refused = yield* runCli(["runs", "--limit", "many"])
      expect(refused.code).toBe(2)
      expect(`${refused.stdout}${refused.stderr}`).toMatch(/integer/i)
      expect(`${refused.stdout}${refused.stderr}`).not.toContain(colorCode)
    }))

  it.live("an option given last without its value is said to need one, of the kind it takes, not to be unknown", () =>
    Effect.gen(function*() {
      const instance = yield* runCli(["run", "support", "hello", "--instance"])
      expect(instance.code).toBe(2)
      expect(instance.stderr).toContain("--instance needs a value\n  as in: foundry run support hello --instance <text>")
      const limit = yield* runCli(["runs", "--limit"])
      expect(limit.code).toBe(2)
      expect(limit.stderr).toContain("--limit needs a value\n  as in: foundry runs --limit <integer>")
      // A flag that takes no value, misplaced, is not said to need one.
      expect((yield* runCli(["runs", "--all"])).stderr).not.toContain("needs a value")
    }))
})
