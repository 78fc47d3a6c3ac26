import { it } from "@effect/vitest"
import { NodeContext } from "@effect/platform-node"
import { Effect } from "effect"
import ts from "typescript"
import { copyFileSync, readFileSync } from "node:fs"
import { join } from "node:path"
import { writeGenerated } from "../../src/router/codegen.js"
import { tempProject } from "../support/tempProject.js"
import { discoverAt, goodProject } from "./support.js"
const framework = new URL("../../", import.meta.url).pathname
it.scoped("tc", () => Effect.gen(function*() {
  const { ["foundry.config.ts"]: _, ...files } = goodProject
  const root = yield* tempProject(files)
  yield* writeGenerated(yield* discoverAt(root)).pipe(Effect.provide(NodeContext.layer))
  copyFileSync(join(root, ".foundry/routes.d.ts"), join(root, ".foundry/routes-check.ts"))
  console.log(readFileSync(join(root, ".foundry/routes-check.ts"), "utf8"))
  for (const [f, skip] of [["routes-check.ts", true], ["routes.d.ts", false], ["routes-check.ts", false]] as const) {
  const program = ts.createProgram([join(root, ".foundry", f)], {
    strict: true, noEmit: true, skipLibCheck: skip, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts"], types: ["node"], typeRoots: [join(framework, "node_modules/@types")],
    paths: { foundry: [join(framework, "src/index.ts")], effect: [join(framework, "node_modules/effect/dist/dts/index.d.ts")], "effect/*": [join(framework, "node_modules/effect/dist/dts/*.d.ts")] }
  })
  const diags = ts.getPreEmitDiagnostics(program)
  console.log(f, skip, diags.map(d => `${d.file?.fileName}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`).join("\n"))
  }
}))
