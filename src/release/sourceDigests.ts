/**
 * What a route's code is made of, named by its sources: for each entry of a release's bundle, a
 * digest of every source module bundled into it or into the chunks it imports, by path and
 * content. Unchanged sources give the same digests however esbuild splits them into chunks: a
 * module two routes share moves into a chunk of its own when a third starts to import it, which
 * changes the bundled files of routes whose code did not change.
 */
import { createHash } from "node:crypto"
import { existsSync, readFileSync } from "node:fs"
import { join } from "node:path"
import type { Metafile } from "esbuild"

/** Digests by entry file, keyed without its extension (`agents/desk/agent`): a release's `.js` names the same route as its source's `.ts`. */
export type SourceDigests = Readonly<Record<string, string>>

/** The key of a route file in `SourceDigests`. */
export const sourceKey = (file: string): string => file.replace(/\.[cm]?[jt]sx?$/, "")

/** The digests of the entries of a build whose metafile is `metafile`, run with `root` as its working folder. */
export const sourceDigests = (root: string, metafile: Metafile): SourceDigests => {
  const inputDigests = new Map<string, string>()
  const inputDigest = (input: string): string => {
    const known = inputDigests.get(input)
    if (known !== undefined) return known
    const path = join(root, input)
    // A module no file holds (a plugin's virtual module) is named by its path alone.
    const digest = existsSync(path) ? createHash("sha256").update(readFileSync(path)).digest("hex") : "virtual"
    inputDigests.set(input, digest)
    return digest
  }
  const digests: Record<string, string> = {}
  for (const [output, { entryPoint }] of Object.entries(metafile.outputs)) {
    if (entryPoint === undefined) continue
    const inputs = new Set<string>()
    const seen = new Set<string>()
    const pending = [output]
    while (pending.length > 0) {
      const next = pending.pop()
      const meta = next === undefined || seen.has(next) ? undefined : metafile.outputs[next]
      if (next === undefined || meta === undefined) continue
      seen.add(next)
      // A module tree-shaken out of every output is no part of the route's code.
      for (const [input, { bytesInOutput }] of Object.entries(meta.inputs)) if (bytesInOutput > 0) inputs.add(input)
      for (const imported of meta.imports) if (imported.external !== true) pending.push(imported.path)
    }
    const hash = createHash("sha256")
    for (const input of [...inputs].sort()) hash.update(`${input}\0${inputDigest(input)}\n`)
    digests[sourceKey(entryPoint)] = hash.digest("hex")
  }
  return digests
}
