/**
 * Installations as a client asks for them, checked against the build's capabilities (each listed
 * once, installable, its config valid for the capability's schema, its name free in the agent's
 * runs) and their secrets sealed; what does not hold is one issue per field.
 */
import { Effect, Either } from "effect"
import { capabilityKey, type CompiledAgent, type CompiledApp } from "../compiler/CompiledApp.js"
import type { ReadableIssue } from "../definitions/readableIssues.js"
import type { NewInstallation } from "../durable/records.js"
import type { CapabilityKind, InstallationRecord } from "../durable/records.js"
import { placeholderSecrets, resplitConfig, sealSecrets, splitConfig } from "./installationConfig.js"
import type { SecretBox } from "./SecretBox.js"
import { type NameClaim, toolNames } from "./toolNameClashes.js"

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

/**
 * The requests whose capability a run of `agent` would leave out for its name (the rules:
 * `toolNames`): an MCP server mounted under the name of one of the agent's own or of another
 * installed one, a tool named like one of the agent's tools or another installed one. Accepted, it
 * would be installed and never offered to the model. `kept`: the capabilities the instance keeps
 * beside `requests`, checked against but never refused themselves.
 */
export const nameClashes = (
  app: CompiledApp,
  agent: CompiledAgent,
  requests: ReadonlyArray<InstallRequest>,
  path: (index: number) => string,
  kept: ReadonlyArray<{ readonly kind: CapabilityKind; readonly capability: string }> = []
): ReadonlyArray<ReadableIssue> => {
  const claims: Array<NameClaim> = []
  for (const { capability: id, kind } of kept) {
    const capability = app.capabilities.get(capabilityKey(kind, id))
    if (capability !== undefined) claims.push({ capability, path: undefined })
  }
  for (const [index, request] of requests.entries()) {
    // One the build does not offer is refused by `prepareInstallations`, which says why.
    const capability = app.capabilities.get(capabilityKey(request.kind, request.id))
    if (capability !== undefined) claims.push({ capability, path: fieldPath(path(index), "id") })
  }
  const names = toolNames(agent)
  const issues: Array<ReadableIssue> = []
  for (const claim of claims) {
    const clash = names.clashOf(claim)
    if (claim.path !== undefined && clash !== undefined) issues.push({ path: claim.path, message: clash })
    names.claim(claim)
  }
  return issues
}
