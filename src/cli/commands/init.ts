/**
 * `foundry init <dir>`: a new project that `foundry dev <dir>` runs at once, offline, and that an
 * editor understands: a package.json that depends on this framework and on the same `effect`, a
 * tsconfig.json, a .gitignore and a README with the two commands that matter.
 */
import { existsSync, readFileSync } from "node:fs"
import { join, relative, resolve, sep } from "node:path"
import { FileSystem, Path } from "@effect/platform"
import { Effect } from "effect"
import { packageLayout } from "../../packageLayout.js"
import { CliError } from "../CliError.js"
import { routeFolders } from "../../router/RoutePath.js"
import { say, shellWord, style } from "../terminal.js"

/** A package.json's dependency maps, as far as init needs them. */
interface PackageJson {
  readonly version?: string
  readonly dependencies?: Readonly<Record<string, string>>
  readonly devDependencies?: Readonly<Record<string, string>>
}

const readPackageJson = (file: string): PackageJson => {
  const json: unknown = JSON.parse(readFileSync(file, "utf8"))
  if (typeof json !== "object" || json === null) return {}
  const record = (key: string): Readonly<Record<string, string>> | undefined => {
    const value = key in json ? Reflect.get(json, key) : undefined
    return typeof value === "object" && value !== null
      ? Object.fromEntries(Object.entries(value).filter((entry): entry is [string, string] => typeof entry[1] === "string"))
      : undefined
  }
  const version = "version" in json && typeof json.version === "string" ? json.version : undefined
  return { ...(version === undefined ? {} : { version }), dependencies: record("dependencies"), devDependencies: record("devDependencies") }
}

/**
 * How the new project depends on this framework: the way the project that installed it did (a
 * `file:` tarball or folder is re-pointed from the new project), or this checkout's folder when
 * the framework runs from its repository. A version range alone would fetch whatever the registry
 * holds under the name.
 */
const frameworkSpec = (app: string, version: string): string => {
  const installed = packageLayout.root.lastIndexOf(`${sep}node_modules${sep}`)
  if (installed < 0) return `file:${relative(app, packageLayout.root) || "."}`
  const owner = packageLayout.root.slice(0, installed)
  const ownerJson = join(owner, "package.json")
  const spec = existsSync(ownerJson) ? readPackageJson(ownerJson).dependencies?.foundry : undefined
  if (spec === undefined) return `^${version}`
  return spec.startsWith("file:") ? `file:${relative(app, resolve(owner, spec.slice("file:".length)))}` : spec
}

/**
 * npm's settings for the project: what `npm run` and `npx` start Node with (docs/decisions.md, "V8's
 * background threads are sized to the machine").
 */
const nodeOptions = `# npm run and npx start Node with these: V8's background threads (compilers, garbage
# collector) one fewer than the machine's cores, instead of Node's four whatever the cores.
node-options=--v8-pool-size=0
`

/** The project's own files: package, compiler settings, ignores, npm's settings and a README. */
const projectFiles = (app: string, name: string): Record<string, string> => {
  const framework = readPackageJson(join(packageLayout.root, "package.json"))
  const version = framework.version ?? "0.0.0"
  const pin = (pkg: string, fallback: string) => framework.dependencies?.[pkg] ?? framework.devDependencies?.[pkg] ?? fallback
  const packageJson = {
    name,
    private: true,
    type: "module",
    scripts: { dev: "foundry dev", start: "foundry start", check: "foundry check" },
    dependencies: { effect: pin("effect", "^3"), foundry: frameworkSpec(app, version) },
    devDependencies: { "@types/node": pin("@types/node", "^20"), typescript: pin("typescript", "^5") }
  }
  const tsconfig = {
    compilerOptions: {
      target: "ES2022",
      module: "NodeNext",
      moduleResolution: "NodeNext",
      lib: ["ES2023"],
      strict: true,
      noEmit: true,
      skipLibCheck: true,
      isolatedModules: true,
      verbatimModuleSyntax: true
    },
    // Every route folder (the router's own list: a folder added there is type-checked here too), and the rest of the project.
    include: [...routeFolders, "lib", "foundry.config.ts", ".foundry/routes.d.ts"]
  }
  return {
    "package.json": `${JSON.stringify(packageJson, null, 2)}\n`,
    "tsconfig.json": `${JSON.stringify(tsconfig, null, 2)}\n`,
    ".gitignore": "node_modules/\n.foundry/\n",
    ".npmrc": nodeOptions,
    "README.md": `# ${name}

A Foundry project: route files under \`agents/\` are the application.

\`\`\`sh
npm install && npx foundry dev
\`\`\`

\`\`\`sh
npx foundry check
\`\`\`

The first installs the dependencies and serves the project on http://127.0.0.1:4141 (the
inspector is at \`/\`, the API under \`/api\`), reloading on every save. The second validates the
routes and type-checks them. Send a message from a terminal:

\`\`\`sh
npx foundry run assistant "count the words in 'hello brave new world'"
\`\`\`
`
  }
}

/** The example routes of a new project: one agent with one tool, on the offline demo model. */
const routeFiles: Record<string, string> = {
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
      const files = { ...projectFiles(root, path.basename(root).toLowerCase().replace(/[^a-z0-9-]+/g, "-") || "app"), ...routeFiles }
      for (const [file, content] of Object.entries(files)) {
        yield* fs.makeDirectory(path.dirname(join(root, file)), { recursive: true })
        yield* fs.writeFileString(join(root, file), content)
      }
      yield* say(style.green(`created a Foundry project in ${root}`))
      // Pasted into a shell as it is: a folder with spaces or quotes in its name is quoted.
      yield* say(`next: foundry dev ${shellWord(dir)}`)
      yield* say(`then: curl -X POST http://127.0.0.1:4141/api/runs -H 'content-type: application/json' \\`)
      yield* say(`        -d '{"agent":"assistant","message":"count the words in \\"hello brave new world\\""}'`)
  })
