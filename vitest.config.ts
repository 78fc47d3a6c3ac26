import { availableParallelism } from "node:os"
import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/buildFramework.ts", "test/support/sharedFolder.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
    // Vitest's default is one file at a time per core but one, so a single file on two cores. The
    // tests spend much of their time waiting for child processes, servers and timers: two files at
    // once on two cores took the suite from 735 to 489 s.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // A worker runs its files one after another in one process, importing the framework once
    // rather than once per file: collecting took 305 of the suite's 684 s, and 26-28 s this way
    // (483-575 s in all). Every test file makes its own stores, servers, ports and processes in
    // its own scope (docs/decisions.md).
    isolate: false
  }
})
