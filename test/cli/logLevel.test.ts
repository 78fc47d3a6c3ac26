/**
 * `--log-level`: @effect/cli reads it before a command's own options only, and has no global
 * options to declare it on; given after them, the refusal says where it goes, as a line to paste.
 */
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { runCli } from "../support/cli.js"
import { agentFile, tempProject } from "../support/tempProject.js"

describe("--log-level", () => {
  it.scopedLive("after a command's options it is refused with the command line that takes it, which works", () =>
    Effect.gen(function*() {
      // A folder whose name the line quotes, so that it can be pasted.
      const root = join(yield* tempProject({ "my project/agents/echo/agent.ts": agentFile() }), "my project")
      const late = yield* runCli(["token", "list", "--dir", root, "--log-level=warning"])
      expect(late.code).toBe(2)
      expect(late.stderr).toContain("Received unknown argument: '--log-level=warning'")
      expect(late.stderr).toContain(`--log-level goes before the command\n  as in: foundry --log-level=warning token list --dir '${root}'`)

      const first = yield* runCli(["--log-level=warning", "token", "list", "--dir", root])
      expect(first.stderr).toBe("")
      expect(first.code).toBe(0)
      const afterName = yield* runCli(["token", "list", "--log-level", "warning", "--dir", root])
      expect(afterName.code).toBe(0)

      // Another unknown argument is only that.
      const typo = yield* runCli(["token", "list", "--dir", root, "--log-levl", "debug"])
      expect(typo.code).toBe(2)
      expect(typo.stderr).not.toContain("goes before the command")
    }))
})
