/**
 * A webhook's secret as its config gives it: a string, or a `Config` read when a delivery comes
 * (`Config.redacted("TICKETS_SECRET")`), which may not be there. A secret that cannot be read is
 * not a server failure to tell the sender about (a 500 would tell that webhook apart from a name no
 * playbook listens on): it is the owner's to fix, so what is missing, and how to fix it, is said
 * to the owner, in the server's log and when `foundry dev`, `foundry start` and `foundry check` start.
 */
import { type Config, type ConfigError, Effect, Redacted } from "effect"
import type { ConfigDefinition } from "../definitions/defineConfig.js"

/** A webhook's secret: none, its value, or why it cannot be read. */
export type WebhookSecret =
  | { readonly _tag: "None" }
  | { readonly _tag: "Secret"; readonly value: string }
  | { readonly _tag: "Unreadable"; readonly problem: string }

/** Reads `secret`, the one the config gives webhook `webhook`. */
export const readSecret = (webhook: string, secret: Config.Config<Redacted.Redacted> | string | undefined): Effect.Effect<WebhookSecret> =>
  secret === undefined
    ? Effect.succeed({ _tag: "None" })
    : typeof secret === "string"
    ? Effect.succeed({ _tag: "Secret", value: secret })
    : Effect.match(secret, {
      onSuccess: (value): WebhookSecret => ({ _tag: "Secret", value: Redacted.value(value) }),
      onFailure: (error): WebhookSecret => ({ _tag: "Unreadable", problem: unreadable(webhook, error) })
    })

/** What the owner is told of a secret that cannot be read: which webhook, what is missing, and how to fix it. */
const unreadable = (webhook: string, error: ConfigError.ConfigError) => {
  const where = `webhook ${webhook}: its secret (webhooks.${webhook}.secret in foundry.config.ts) cannot be read`
  const refused = `every delivery to /hooks/${webhook} is refused as wrongly signed (401) until it can`
  // The usual case, a variable not set, said plainly (the error itself reads "<redacted>" for its detail).
  return error._op === "MissingData"
    ? `${where}: the environment variable ${error.path.join("_")} is not set, so ${refused}. ` +
      "Set it, where the server runs, to the secret the sender signs with, and restart the server"
    : `${where}: ${String(error)}, so ${refused}. Fix the Config it is read with (or the environment it reads), and restart the server`
}

/** The webhooks of `config` whose secret cannot be read, each with what the owner is told. */
export const unreadableSecrets = (config: Pick<ConfigDefinition, "webhooks">) =>
  Effect.map(
    Effect.forEach(Object.entries(config.webhooks), ([webhook, settings]) => readSecret(webhook, settings.secret)),
    (secrets) => secrets.flatMap((secret) => secret._tag === "Unreadable" ? [secret.problem] : [])
  )
