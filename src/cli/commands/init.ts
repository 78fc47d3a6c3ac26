/**
 * `foundry init <dir>`: a new project that `foundry dev <dir>` runs at once, offline.
 */
import { join } from "node:path"
import { FileSystem, Path } from "@effect/platform"
import { Effect } from "effect"
import { CliError } from "../CliError.js"
import { say, style } from "../terminal.js"

const files: Record<string, string> = {
  "package.json": `${JSON.stringify({ name: "my-foundry-project", private: true, type: "module" }, null, 2)}\n`,
  ".gitignore": ".foundry/\nnode_modules/\n",
  "foundry.config.ts": `import { defineConfig } from "foundry"

export default defineConfig({
  store: { sqlite: ".foundry/foundry.db" },
  server: { port: 4141 },
  layers: []
})
`,
  "agents/assistant/agent.ts": `import { defineAgent } from "foundry"
import wordCount from "./tools/word-count.tool.js"

export default defineAgent({
  description: "A helpful assistant that can count words",
  model: "demo",
  instructions: "Answer briefly. Use your tools when they help.",
  tools: [wordCount]
})
`,
  "agents/assistant/tools/word-count.tool.ts": `import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Count the words in a text",
  input: Schema.Struct({ text: Schema.String }),
  output: Schema.Struct({ words: Schema.Number }),
  run: ({ text }) => Effect.succeed({ words: text.split(/\\s+/).filter((w) => w.length > 0).length })
})
`
}

/** `foundry init`: a new project in `dir`. */
export const init = (dir: string) =>
  Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const root = path.resolve(dir)
      if (yield* fs.exists(root)) {
        const entries = yield* fs.readDirectory(root)
        if (entries.length > 0) {
          return yield* new CliError({ message: `${root} is not empty; choose a new folder for the project` })
        }
      }
      for (const [file, content] of Object.entries(files)) {
        yield* fs.makeDirectory(path.dirname(join(root, file)), { recursive: true })
        yield* fs.writeFileString(join(root, file), content)
      }
      yield* say(style.green(`created a Foundry project in ${root}`))
      yield* say(`next: foundry dev ${dir}`)
      yield* say(`then: curl -X POST http://127.0.0.1:4141/api/runs -H 'content-type: application/json' \\`)
      yield* say(`        -d '{"agent":"assistant","message":"count the words in \\"hello brave new world\\""}'`)
  })
