/**
 * Route folders as editors and tools leave them: a symbolic link to nothing, files that vanish
 * while the folders are read (`sed -i`'s temporary file), a link back to a folder above. Each is a
 * problem of its own path, or nothing at all, never a crash of the whole discovery.
 */
import { spawn } from "node:child_process"
import { mkdirSync, symlinkSync } from "node:fs"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import { tempProject } from "../support/tempProject.js"
import { agentFile, discoverAt, onlyErrorFor, routeErrorsAt } from "./support.js"

const config = `import { defineConfig } from "foundry"\nexport default defineConfig({})\n`

/** Runs `script` in a Node child process in `cwd` until the test's scope closes. */
const child = (script: string, cwd: string) =>
  Effect.acquireRelease(
    Effect.async<ReturnType<typeof spawn>>((resume) => {
      const running = spawn(process.execPath, ["-e", script], { cwd, stdio: ["ignore", "pipe", "inherit"] })
      running.stdout.once("data", () => resume(Effect.succeed(running)))
    }),
    (running) => Effect.sync(() => running.kill("SIGKILL"))
  )

describe("unreadable paths under the route folders", () => {
  it.scoped("a symbolic link to nothing named like a route is a problem of its own path; one named like no route is ignored", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "foundry.config.ts": config, "agents/helper/agent.ts": agentFile() })
      mkdirSync(join(root, "agents/helper/tools"))
      symlinkSync("../../../shared/extra.tool.ts", join(root, "agents/helper/tools/extra.tool.ts"))
      symlinkSync("gone.md", join(root, "agents/helper/notes.md"))
      const errors = yield* routeErrorsAt(root)
      const error = onlyErrorFor(errors, "agents/helper/tools/extra.tool.ts")
      expect(error.problem).toBe("a symbolic link to ../../../shared/extra.tool.ts, which does not exist")
      expect(error.fix).toContain("point the link at a file that exists, or remove the link")
    }))

  it.scoped("a link to a folder of routes that does not exist is a problem; a link to a missing helper folder is not", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/helper/agent.ts": agentFile() })
      symlinkSync("../../elsewhere/schedules", join(root, "schedules"))
      symlinkSync("../../shared-lib", join(root, "agents/helper/lib"))
      const error = onlyErrorFor(yield* routeErrorsAt(root), "schedules")
      expect(error.problem).toBe("a symbolic link to ../../elsewhere/schedules, which does not exist")
    }))

  it.scoped("a folder linked inside itself is listed once", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/helper/agent.ts": agentFile() })
      symlinkSync("..", join(root, "agents/helper/again"))
      const table = yield* discoverAt(root)
      expect(table.agents.map((route) => route.id)).toEqual(["helper"])
    }))

  it.scoped("files that vanish while the folders are read (sed -i's temporary files) are not listed and break nothing", () =>
    Effect.gen(function*() {
      const root = yield* tempProject({ "agents/helper/agent.ts": agentFile(), "agents/helper/notes.txt": "notes\n" })
      // What `sed -i` does to a file, over and over: a temporary file beside it, renamed over it.
      yield* child(
        `const fs = require("node:fs")
let n = 0
process.stdout.write("started\\n")
for (;;) {
  for (let i = 0; i < 20; i++) fs.writeFileSync("agents/helper/sed" + n + "x" + i, "notes " + n + "\\n")
  for (let i = 0; i < 20; i++) fs.renameSync("agents/helper/sed" + n + "x" + i, "agents/helper/notes.txt")
  n++
}`,
        root
      )
      for (let generation = 1; generation <= 100; generation++) {
        const table = yield* discoverAt(root, generation)
        expect(table.agents.map((route) => route.id)).toEqual(["helper"])
      }
    }))
})
