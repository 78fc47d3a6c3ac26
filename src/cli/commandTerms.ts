/**
 * The runtime's messages say how to go on as API calls (`PATCH /api/instances/acme?agent=desk
 * {"paused": false}`), since most of their readers are HTTP clients. Printed by a command, the
 * same way on is said as the command that takes it (`foundry instances resume acme --agent desk`):
 * someone at a terminal should not have to turn a call into a command, or reach for curl.
 */
import { shellWord } from "./terminal.js"

/** A path or query segment as typed on a command line; a placeholder (`<id>`) stays one. */
const word = (encoded: string) => /^<[\w.-]+>$/.test(encoded) ? encoded : shellWord(decodeURIComponent(encoded))

/** `--agent <agent>` when the call named one. */
const agentFlag = (agent: string | undefined) => agent === undefined ? "" : ` --agent ${word(agent)}`

/** Each API call a message may suggest, and the command that makes it. The more specific come first. */
const calls: ReadonlyArray<readonly [RegExp, (...groups: Array<string | undefined>) => string]> = [
  [/GET \/api\/instances\?search=(\S+)/g, (search = "") => `foundry instances --search ${word(search)}`],
  [/GET \/api\/instances\?agent=(\S+)/g, (agent = "") => `foundry instances --agent ${word(agent)}`],
  [
    /PATCH \/api\/instances\/([^?\s]+)(?:\?agent=(\S+))? \{"paused": (true|false)\}/g,
    (id = "", agent, paused) => `foundry instances ${paused === "true" ? "pause" : "resume"} ${word(id)}${agentFlag(agent)}`
  ],
  [
    /PATCH \/api\/instances\/([^?\s,]+)(?:\?agent=([^\s,]+))?(?: \{"context": \{\.\.\.\}\})?/g,
    (id = "", agent) => `foundry instances context ${word(id)} <context.json>${agentFlag(agent)}`
  ],
  [
    /POST \/api\/instances \{"agent": "([^"]+)", "id": "([^"]+)", "context": \{\.\.\.\}\}/g,
    (agent = "", id = "") => `foundry instances create ${word(agent)} --id ${word(id)} --context <context.json>`
  ],
  [/ \(or POST \/api\/instances\/[^\s)]+\/installations\?agent=[^\s)]+\)/g, () => ""],
  [
    /POST \/api\/instances\/([^/\s]+)\/installations \{"kind":\s*"(\w+)",\s*"id":\s*"([^"]+)"\}/g,
    (id = "", kind = "", capability = "") => `foundry install ${word(id)} ${kind}:${word(capability)}`
  ],
  [/POST \/api\/instances(?![/\w])/g, () => "foundry instances create <agent>"],
  [/POST \/api\/runs\/([^/\s]+)\/cancel/g, (id = "") => `foundry runs cancel ${word(id)}`]
]

/** `message` with every API call it suggests said as the command that makes it. */
export const inCommandTerms = (message: string): string =>
  calls.reduce((said, [call, command]) => said.replace(call, (_, ...groups: Array<string | undefined>) => command(...groups)), message)
