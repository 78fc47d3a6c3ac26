#!/usr/bin/env node
// The `foundry` command: the framework as built JavaScript (dist/), so that a launch compiles no
// TypeScript; tsx is loaded only for a project's route files.
import { existsSync, readFileSync } from "node:fs"

const args = process.argv.slice(2)
// `--version` alone needs nothing of the framework: answer before loading it.
if (args.length === 1 && args[0] === "--version") {
  const { version } = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"))
  process.stdout.write(`${version}\n`)
} else {
  const cli = new URL("../dist/cli.js", import.meta.url)
  if (!existsSync(cli)) {
    process.stderr.write(
      "foundry: the framework is not built (dist/cli.js is missing)\n" +
        `  fix: run \`npm run build\` in ${new URL("..", import.meta.url).pathname}\n`
    )
    process.exitCode = 1
  } else {
    await import(cli.href)
  }
}
