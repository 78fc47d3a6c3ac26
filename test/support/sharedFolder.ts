/**
 * Vitest's global setup: a folder for what the test files of one run share (`deskReleases`, built
 * once per worker), removed when the run ends. By the run's main process: Vitest stops its workers
 * with SIGTERM, which runs no exit handler of theirs.
 */
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { TestProject } from "vitest/node"

declare module "vitest" {
  export interface ProvidedContext {
    /** The run's shared folder (`inject("sharedFolder")`). */
    readonly sharedFolder: string
  }
}

export default function setup(project: TestProject): () => void {
  const folder = mkdtempSync(join(tmpdir(), "foundry-suite-"))
  project.provide("sharedFolder", folder)
  return () => rmSync(folder, { recursive: true, force: true })
}
