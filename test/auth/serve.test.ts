import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { describe, expect, it } from "@effect/vitest"
import { Cause, Effect, Exit, Fiber, Option } from "effect"
import { serveProject } from "../../src/cli/serveProject.js"
import { freePort } from "../support/cli.js"
import { http } from "../support/server.js"
import { authProject, bearer, issue } from "./support.js"

/** Whether anything answers on the port. */
const answers = (port: number) =>
  Effect.promise(() => fetch(`http://127.0.0.1:${port}/health`).then(() => true, () => false))

describe("serving beyond loopback", () => {
  it.scopedLive("refuses to start on 0.0.0.0 while the store has no token, naming the fix, and never listens", () =>
    Effect.gen(function*() {
      const root = yield* authProject("{}")
      const port = yield* freePort
      const exit = yield* serveProject({ root, port, host: "0.0.0.0", watch: false }).pipe(
        Effect.scoped,
        Effect.provide(NodeContext.layer),
        Effect.exit
      )
      expect(Exit.isFailure(exit)).toBe(true)
      if (Exit.isFailure(exit)) {
        const failure = Option.getOrThrow(Cause.failureOption(exit.cause))
        expect(failure).toMatchObject({ _tag: "AccessRefused" })
        expect(failure.message).toContain("refusing to listen on 0.0.0.0")
        expect(failure.message).toContain("foundry token create --scope admin")
      }
      expect(yield* answers(port)).toBe(false)
    }))

  it.scopedLive("starts on 0.0.0.0 once the store has a token, and asks every API request for it", () =>
    Effect.gen(function*() {
      const root = yield* authProject("{}")
      const admin = yield* issue(join(root, ".foundry/foundry.db"), "admin")
      const port = yield* freePort
      const server = yield* serveProject({ root, port, host: "0.0.0.0", watch: false }).pipe(
        Effect.scoped,
        Effect.provide(NodeContext.layer),
        Effect.forkScoped
      )
      for (let attempt = 0; attempt < 200 && !(yield* answers(port)); attempt++) yield* Effect.sleep("50 millis")
      const base = `http://127.0.0.1:${port}`
      expect((yield* http(`${base}/api/runs`)).status).toBe(401)
      expect((yield* http(`${base}/api/runs`, { headers: bearer(admin.token) })).status).toBe(200)
      yield* Fiber.interrupt(server)
      expect(yield* answers(port)).toBe(false)
    }))
})
