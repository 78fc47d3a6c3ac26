/**
 * A SQLite store of its own for a test: a new file in a temporary folder, and the `Database` on
 * it (migrated, with its `SqlClient`), so that another connection can open the same file.
 */
import { mkdtempSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { NodeContext } from "@effect/platform-node"
import { Layer } from "effect"
import * as SqliteDatabase from "../../src/durable/SqliteDatabase.js"

/** A new store file named after `name`, and the layer that opens it. */
export const sqliteStore = (name: string) => {
  const file = join(mkdtempSync(join(tmpdir(), `foundry-${name}-`)), "foundry.db")
  return { file, layer: SqliteDatabase.layer(file).pipe(Layer.provide(NodeContext.layer)) }
}
