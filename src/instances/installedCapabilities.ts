/**
 * An instance's installations as a run reads them: each of a capability the build offers, its
 * config opened (secrets as `Redacted`); those that cannot be used (their capability gone from the
 * build, a config its schema no longer accepts, secrets that cannot be opened) apart, with why.
 */
import { Effect, Either } from "effect"
import { type Capability, capabilityKey, type CompiledApp } from "../compiler/CompiledApp.js"
import type { CapabilityKind, InstallationRecord } from "../durable/records.js"
import { openConfig } from "./installationConfig.js"
import type { SecretBox, SecretUnreadable } from "./SecretBox.js"

/** An installed capability with its config opened for a run (secrets as `Redacted`). */
export interface InstalledCapability {
  readonly capability: Capability
  readonly config: unknown
}

/** What an installed capability cannot be used as, for the run to say. */
export interface UnusableInstallation {
  readonly kind: CapabilityKind
  readonly id: string
  readonly reason: string
}

/** What an installation that cannot be opened lacks, and how to set it right. */
const reasonOf = (error: SecretUnreadable | { readonly _tag: "ParseError"; readonly message: string }): string =>
  error._tag === "SecretUnreadable" ? error.message : `its config no longer matches the capability's schema (${error.message.split("\n")[0]}); install it again`

/** `installations` opened with `box` for a run of the build `app`: the usable ones, and the rest with why. */
export const installedCapabilities = (box: SecretBox["Type"], app: CompiledApp, installations: ReadonlyArray<InstallationRecord>) =>
  Effect.gen(function*() {
    const usable: Array<InstalledCapability> = []
    const unusable: Array<UnusableInstallation> = []
    for (const installation of installations) {
      const capability = app.capabilities.get(capabilityKey(installation.kind, installation.capability))
      if (capability === undefined) {
        unusable.push({ kind: installation.kind, id: installation.capability, reason: "it is not installable in the current build" })
        continue
      }
      const opened = yield* Effect.either(openConfig(box, capability.config, installation))
      if (Either.isRight(opened)) usable.push({ capability, config: opened.right })
      else unusable.push({ kind: installation.kind, id: installation.capability, reason: reasonOf(opened.left) })
    }
    return { usable, unusable }
  })
