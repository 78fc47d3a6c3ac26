/**
 * Installations as a client asks for them, checked against the build's capabilities (each listed
 * once, installable, its config valid for the capability's schema, its name free in the agent's
 * runs) and their secrets sealed; what does not hold is one issue per field.
 */
import { Effect, Either } from "effect"
import { type Capability, capabilityKey, type CompiledAgent, type CompiledApp } from "../compiler/CompiledApp.js"
import type { ReadableIssue } from "../definitions/readableIssues.js"
import type { NewInstallation } from "../durable/InstanceStorage.js"
import type { CapabilityKind, InstallationRecord } from "../durable/records.js"
import { placeholderSecrets, resplitConfig, sealSecrets, splitConfig } from "./installationConfig.js"
import type { SecretBox } from "./SecretBox.js"

/** A capability to install, as a client sends it; `config` may be left out when changing an installed one. */
export interface InstallRequest {
  readonly kind: CapabilityKind
  readonly id: string
  readonly config?: unknown
}

/** `field` under `prefix`: `context.company`. */
const fieldPath = (prefix: string, field: string): string => prefix === "" ? field : `${prefix}.${field}`

/** `issues` under `prefix`. */
const under = (prefix: string, issues: ReadonlyArray<ReadableIssue>): ReadonlyArray<ReadableIssue> =>
  issues.map((issue) => ({ ...issue, path: fieldPath(prefix, issue.path) }))

/**
 * Checks requested installations and seals their secrets, or fails with every issue found (each at
 * `path` of its request). `installedOf` gives what is installed already: a request without a
 * config keeps its config, and a `"<redacted>"` where a secret is installed keeps that secret.
 */
export const prepareInstallations = (
  box: SecretBox["Type"],
  app: CompiledApp,
  requests: ReadonlyArray<InstallRequest>,
  path: (index: number) => string,
  installedOf: (request: InstallRequest) => InstallationRecord | undefined = () => undefined
): Effect.Effect<ReadonlyArray<NewInstallation>, ReadonlyArray<ReadableIssue>> =>
  Effect.gen(function*() {
    const issues: Array<ReadableIssue> = []
    const prepared: Array<NewInstallation> = []
    // Of two entries for one capability the last would win silently, the first one's config lost.
    const listed = new Set<string>()
    for (const [index, request] of requests.entries()) {
      const key = capabilityKey(request.kind, request.id)
      if (listed.has(key)) {
        issues.push({
          path: fieldPath(path(index), "id"),
          message: `the ${request.kind} "${request.id}" is listed twice: list each capability once, with the config it should have`
        })
        continue
      }
      listed.add(key)
      const capability = app.capabilities.get(key)
      if (capability === undefined) {
        const known = [...app.capabilities.values()].map((c) => `${c.kind} ${c.id}`).join(", ")
        issues.push({ path: fieldPath(path(index), "id"), message: `there is no installable ${request.kind} "${request.id}"; installable: ${known || "(none)"}` })
        continue
      }
      const installed = installedOf(request)
      if (request.config === undefined && installed !== undefined) {
        prepared.push({ kind: request.kind, capability: request.id, config: installed.config, secrets: installed.secrets })
        continue
      }
      const { sealed, split } = installed === undefined
        ? { split: splitConfig(capability.config, request.config ?? {}), sealed: undefined }
        : yield* resplitConfig(box, capability.config, request.config, installed).pipe(
          // Secrets sealed with another key cannot be kept: the config is taken as sent.
          Effect.orElseSucceed(() => ({ split: splitConfig(capability.config, request.config), sealed: undefined }))
        )
      const wrong = Either.isLeft(split) ? split.left : placeholderSecrets(split.right)
      if (wrong.length > 0 || Either.isLeft(split)) {
        issues.push(...under(path(index), wrong))
        continue
      }
      prepared.push({ kind: request.kind, capability: request.id, config: split.right.config, secrets: sealed ?? sealSecrets(box, split.right) })
    }
    if (issues.length > 0) return yield* Effect.fail(issues)
    return prepared
  })

/** A capability as the check of names sees it: where it was asked for, or `undefined` when the instance has it already. */
interface Named {
  readonly capability: Capability
  readonly path: string | undefined
}

/** What `named` is, for a message: `the mcp "sales/crm"`. */
const what = ({ capability }: Named): string => `the ${capability.kind} "${capability.id}"`

/**
 * The name `capability` reaches `agent`'s model under, how it does, which of the agent's own holds
 * that name already, and how to free it.
 */
const nameOf = (agent: CompiledAgent, capability: Capability) => {
  if (capability.kind === "tool") {
    const name = capability.tool.name
    const own = agent.tools.get(name)
    return {
      key: capabilityKey("tool", name),
      offered: `is offered as "${name}"`,
      own: own === undefined ? undefined : `agent "${agent.id}"'s own tool "${name}" (${own.file ?? agent.file})`,
      rename: `give one of them another name (defineTool({ name: "..." }))`
    }
  }
  const name = capability.mount
  const own = agent.mcp.find((mount) => mount.name === name)
  return {
    key: capabilityKey("mcp", name),
    offered: `is mounted as "${name}" (the last part of its id)`,
    own: own === undefined ? undefined : `agent "${agent.id}"'s own MCP server "${name}" (${own.declaredIn})`,
    rename: `rename ${capability.file} or the agent's server`
  }
}

/**
 * The requests whose capability a run of `agent` would leave out for its name (see
 * engine/RunInstance.ts): an MCP server mounted under the name of one of the agent's own or of
 * another installed one, a tool named like one of the agent's tools or another installed one.
 * Accepted, it would be installed and never offered to the model. `kept`: the capabilities the
 * instance keeps beside `requests`, checked against but never refused themselves.
 */
export const nameClashes = (
  app: CompiledApp,
  agent: CompiledAgent,
  requests: ReadonlyArray<InstallRequest>,
  path: (index: number) => string,
  kept: ReadonlyArray<{ readonly kind: CapabilityKind; readonly capability: string }> = []
): ReadonlyArray<ReadableIssue> => {
  const named: Array<Named> = []
  for (const { capability: id, kind } of kept) {
    const capability = app.capabilities.get(capabilityKey(kind, id))
    if (capability !== undefined) named.push({ capability, path: undefined })
  }
  for (const [index, request] of requests.entries()) {
    // One the build does not offer is refused by `prepareInstallations`, which says why.
    const capability = app.capabilities.get(capabilityKey(request.kind, request.id))
    if (capability !== undefined) named.push({ capability, path: fieldPath(path(index), "id") })
  }
  const issues: Array<ReadableIssue> = []
  // Keyed by kind too: a tool and a server's tools are offered under names that never meet (`crm`, `crm__...`).
  const taken = new Map<string, Named>()
  for (const entry of named) {
    const { key, offered, own, rename } = nameOf(agent, entry.capability)
    const other = taken.get(key)
    // The same capability listed twice is `prepareInstallations`' to refuse.
    if (other?.capability === entry.capability) continue
    if (other === undefined) taken.set(key, entry)
    if (entry.path === undefined) continue
    const neverOffered = entry.capability.kind === "tool" ? "it" : "its tools"
    if (own !== undefined) {
      issues.push({
        path: entry.path,
        message: `${what(entry)} ${offered}, like ${own}, which keeps the name: the model would never be offered ${neverOffered}; ${rename}`
      })
    } else if (other !== undefined) {
      issues.push({
        path: entry.path,
        message: `${what(entry)} ${offered}, like ${what(other)}` +
          (other.path === undefined ? ", which this instance has installed" : ` (${other.path})`) +
          `: a run would offer only one of them; install one of them, or ${entry.capability.kind === "tool" ? rename : "rename one's file"}`
      })
    }
  }
  return issues
}
