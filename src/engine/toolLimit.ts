/**
 * The most tools a turn may offer: the smallest limit of the agent's models (OpenAI's 128). Over
 * it, every request would be refused ("array too long"), so the run fails at once saying why.
 */
import type { LanguageModel } from "../models/Model.js"

/**
 * Why a turn offering `count` tools cannot be asked of `models`, or `undefined` when it can. The
 * count is known only here, where the tool list is built each turn: MCP servers' tools and an
 * instance's installed ones come at run time.
 */
export const overToolLimit = (
  agent: { readonly id: string; readonly file: string },
  models: ReadonlyArray<LanguageModel>,
  count: number
): string | undefined => {
  const strictest = models.reduce<LanguageModel | undefined>(
    (least, model) => model.maxTools !== undefined && (least?.maxTools === undefined || model.maxTools < least.maxTools) ? model : least,
    undefined
  )
  if (strictest?.maxTools === undefined || count <= strictest.maxTools) return undefined
  return `agent "${agent.id}" offers its model ${count} tools, but ${strictest.name} takes at most ${strictest.maxTools} in one request; ` +
    `list fewer tools in ${agent.file} (or narrow its MCP servers' tools with their \`tools\` allowlist, or install fewer on its instance), ` +
    "or split it into agents that each need fewer"
}
