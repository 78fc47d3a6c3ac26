/**
 * The CLI's help and usage errors read as plain text where colors are not wanted: output to a pipe
 * (as every test's is) carries no color codes, which @effect/cli writes whatever the output.
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
      expect(help.stdout).toContain("OPTIONS")
      expect(help.stdout).toContain("--limit integer")
      expect(help.stdout).toContain("how many of the newest runs")
      expect(help.stdout).not.toContain(colorCode)
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
