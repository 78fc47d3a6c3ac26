/**
 * The inspector's script as one file: `inspector/src/main.ts` bundled with esbuild. The build
 * writes it to `dist/inspector`; a framework running from its sources bundles it when first served.
 */
import { join } from "node:path"
import { build } from "esbuild"

/** Bundles the inspector whose folder is `dir` (holding `src/main.ts`) and returns the script. */
export const bundleInspector = (dir: string, production: boolean): Promise<string> =>
  build({
    entryPoints: [join(dir, "src/main.ts")],
    bundle: true,
    write: false,
    format: "esm",
    target: "es2022",
    minify: true,
    sourcemap: production ? false : "inline",
    logLevel: "silent"
  }).then((result) => result.outputFiles[0]?.text ?? "")
