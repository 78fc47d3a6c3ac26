/**
 * A release summary in words, the same in the terminal (`foundry deploy`, `foundry releases`) and
 * the inspector's Releases page. Imports nothing, so that the inspector's bundle can take it as it
 * is (the summary's schema lives beside release code that reads files).
 */

/** The kinds of route a summary reports, in the order they are told, singular and plural. */
const kinds = [
  ["agents", "agent", "agents"],
  ["tools", "tool", "tools"],
  ["mcpServers", "MCP server", "MCP servers"],
  ["schedules", "schedule", "schedules"],
  ["playbooks", "playbook", "playbooks"]
] as const

type Kind = typeof kinds[number][0]

/** What the words need of a summary: the ids each kind added, removed and changed, and whether the config changed. */
export type SummaryChanges =
  & { readonly [K in Kind]: { readonly added: ReadonlyArray<string>; readonly removed: ReadonlyArray<string>; readonly changed: ReadonlyArray<string> } }
  & { readonly config?: boolean | undefined }

const signs = [["added", "+"], ["removed", "-"], ["changed", "~"]] as const

const configLine = "~ config (layers, auth, limits or webhooks)"

/** Each change on a line of its own: `+ agent support` added, `- tool old` removed, `~ schedule nightly` changed, `~ config ...`. */
export const changeLines = (summary: SummaryChanges): ReadonlyArray<string> => [
  ...kinds.flatMap(([key, one]) => signs.flatMap(([change, sign]) => summary[key][change].map((id) => `${sign} ${one} ${id}`))),
  ...(summary.config === true ? [configLine] : [])
]

/** The changes counted, for a table cell: `agents +1 ~1, tools ~1, config ~`; empty when nothing changed. */
export const changeCounts = (summary: SummaryChanges): string =>
  [
    ...kinds.flatMap(([key, , many]) => {
      const shown = signs.flatMap(([change, sign]) => summary[key][change].length === 0 ? [] : [`${sign}${summary[key][change].length}`])
      return shown.length === 0 ? [] : [`${many} ${shown.join(" ")}`]
    }),
    ...(summary.config === true ? ["config ~"] : [])
  ].join(", ")
