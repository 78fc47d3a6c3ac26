/**
 * A project with an agent that has a working environment (`clerk`, on `workspace`, which starts
 * with `/inbox/a.txt`), one whose environment is kept per conversation (`scribe`, on `journal`)
 * and one without (`echo`); and what the environment tests seed straight into
 * a started server's store: versions of clerk's instance `acme` and the artifacts of a run.
 */
import * as XLSX from "@e965/xlsx"
import { NodeContext } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { type EnvironmentScope, EnvironmentStorage, type NewArtifact, type NewVersion, SqlEnvironmentStorage } from "../../../src/durable/EnvironmentStorage.js"
import * as SqliteDatabase from "../../../src/durable/SqliteDatabase.js"
import { agentFile, tempProject } from "../../support/tempProject.js"

/** The project's files; `config` is added as `foundry.config.ts` when given. */
export const environmentProject = (config?: string) =>
  tempProject({
    "environments/workspace.ts": `import { defineEnvironment } from "foundry"

export default defineEnvironment({ files: { "/inbox/a.txt": "hello" } })
`,
    "agents/clerk/agent.ts": `import { defineAgent } from "foundry"
import workspace from "../../environments/workspace.js"

export default defineAgent({
  description: "Keeps the books in its workspace",
  model: "demo",
  environment: workspace
})
`,
    "environments/journal.ts": `import { defineEnvironment } from "foundry"

export default defineEnvironment({ files: { "/notes.md": "start" }, persistence: "conversation" })
`,
    "agents/scribe/agent.ts": `import { defineAgent } from "foundry"
import journal from "../../environments/journal.js"

export default defineAgent({
  description: "Keeps a journal per conversation",
  model: "demo",
  environment: journal
})
`,
    "agents/echo/agent.ts": agentFile(),
    ...(config === undefined ? {} : { "foundry.config.ts": config })
  })

/** The store's scope of clerk's instance `acme`. */
export const acmeScope: EnvironmentScope = { environment: "workspace", key: "instance:clerk/acme" }

const encode = (text: string) => new TextEncoder().encode(text)

/** A 1x1 PNG. */
export const png = Uint8Array.from(Buffer.from("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==", "base64"))

/** A workbook: "Revenue" (a header and two rows) and "Orders" (60 rows of 25 columns, more than a preview holds). */
export const workbook = (): Uint8Array => {
  const book = XLSX.utils.book_new()
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet([["region", "amount"], ["north", 165], ["south", 80]]), "Revenue")
  const orders = Array.from({ length: 60 }, (_, row) => Array.from({ length: 25 }, (_, column) => `r${row}c${column}`))
  XLSX.utils.book_append_sheet(book, XLSX.utils.aoa_to_sheet(orders), "Orders")
  const written: unknown = XLSX.write(book, { type: "array", bookType: "xlsx" })
  if (!(written instanceof ArrayBuffer)) throw new Error("XLSX.write did not give an ArrayBuffer")
  return new Uint8Array(written)
}

/** The versions seeded: v1 writes a first draft of /out/notes.md, v2 a second draft and a chart. */
export const versions = {
  v1: new Map([["/inbox/a.txt", encode("hello")], ["/out/notes.md", encode("first draft")]]),
  v2: new Map([["/inbox/a.txt", encode("hello")], ["/out/notes.md", encode("second draft")], ["/out/chart.png", png]])
}

const withStorage = <A, E>(storeFile: string, use: (storage: EnvironmentStorage["Type"]) => Effect.Effect<A, E>) =>
  Effect.scoped(Effect.flatMap(EnvironmentStorage, use).pipe(
    Effect.provide(SqlEnvironmentStorage.pipe(Layer.provide(SqliteDatabase.layer(storeFile)), Layer.provide(NodeContext.layer)))
  ))

/** Appends a version of `tree` to `scope`, after `expectedHead`. */
export const seedVersion = (storeFile: string, scope: EnvironmentScope, tree: ReadonlyMap<string, Uint8Array>, expectedHead = 0) =>
  withStorage(storeFile, (storage) =>
    storage.append({ scope, kind: "checkpoint", label: "seeded", tree, runId: null, toolCallId: null, outcome: null, expectedHead }))

/** Appends v1 and v2 of acme's environment, as run `runId`'s changes. */
export const seedVersions = (storeFile: string, runId: string) =>
  withStorage(storeFile, (storage) =>
    Effect.gen(function*() {
      const base = { scope: acmeScope, kind: "change", runId, outcome: null } satisfies Partial<NewVersion>
      yield* storage.append({ ...base, label: "write_file /out/notes.md", tree: versions.v1, toolCallId: "call_1", expectedHead: 0 })
      yield* storage.append({ ...base, label: "write_file /out/chart.png", tree: versions.v2, toolCallId: "call_2", expectedHead: 1 })
    }))

/** Adds artifacts to run `runId`, in order. */
export const seedArtifacts = (storeFile: string, artifacts: ReadonlyArray<readonly [NewArtifact, Uint8Array]>) =>
  withStorage(storeFile, (storage) => Effect.forEach(artifacts, ([artifact, bytes]) => storage.addArtifact(artifact, bytes)))
