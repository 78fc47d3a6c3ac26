/**
 * `SecretBox`: seals the secrets of installations for the store (AES-256-GCM) and opens them when
 * a run needs them. The key comes from `FOUNDRY_SECRET_KEY` (`Config.redacted`); a project without
 * one gets a generated key in `.foundry/secret.key` (readable by its owner only), so that `foundry
 * dev` works out of the box. A server whose store others share should set the variable: every
 * process must seal with the same key.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto"
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Config, Context, Data, Effect, Layer, Option, Redacted } from "effect"

/** A sealed value could not be opened: another key sealed it, or it was altered. */
export class SecretUnreadable extends Data.TaggedError("SecretUnreadable")<{ readonly message: string }> {}

/** Seals and opens secrets. */
export class SecretBox extends Context.Tag("foundry/SecretBox")<SecretBox, {
  readonly seal: (plaintext: string) => string
  readonly open: (sealed: string) => Effect.Effect<string, SecretUnreadable>
}>() {}

const version = "v1"

/** A box over 32 bytes derived from `material`. */
export const make = (material: Redacted.Redacted<string>): SecretBox["Type"] => {
  const key = Buffer.from(hkdfSync("sha256", Redacted.value(material), "foundry", "installation secrets", 32))
  return SecretBox.of({
    seal: (plaintext) => {
      const iv = randomBytes(12)
      const cipher = createCipheriv("aes-256-gcm", key, iv)
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return [version, iv.toString("base64"), cipher.getAuthTag().toString("base64"), body.toString("base64")].join(".")
    },
    open: (sealed) =>
      Effect.try({
        try: () => {
          const [tag, iv, auth, body] = sealed.split(".")
          if (tag !== version || iv === undefined || auth === undefined || body === undefined) throw new Error("not a sealed value")
          const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"))
          decipher.setAuthTag(Buffer.from(auth, "base64"))
          return Buffer.concat([decipher.update(Buffer.from(body, "base64")), decipher.final()]).toString("utf8")
        },
        catch: () =>
          new SecretUnreadable({
            message: "an installation's secrets cannot be opened with this key: set FOUNDRY_SECRET_KEY to the key they were sealed with, or install the capability again"
          })
      })
  })
}

/** The project's generated key, made on first use. */
const keyFileOf = (root: string): Redacted.Redacted<string> => {
  const folder = join(root, ".foundry")
  const file = join(folder, "secret.key")
  if (!existsSync(file)) {
    mkdirSync(folder, { recursive: true })
    try {
      writeFileSync(file, randomBytes(32).toString("base64"), { mode: 0o600, flag: "wx" })
      chmodSync(file, 0o600)
    } catch (error) {
      // Another process starting on this project made it first: theirs is the key.
      if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error
    }
  }
  return Redacted.make(readFileSync(file, "utf8").trim())
}

/** The box with `FOUNDRY_SECRET_KEY`, or the project's generated key at `root`. */
export const layer = (root: string): Layer.Layer<SecretBox> =>
  Layer.effect(
    SecretBox,
    Effect.gen(function*() {
      const configured = yield* Config.option(Config.redacted("FOUNDRY_SECRET_KEY")).pipe(Effect.orDie)
      if (Option.isSome(configured)) return make(configured.value)
      return make(yield* Effect.sync(() => keyFileOf(root)).pipe(Effect.catchAllDefect((cause) => Effect.dieMessage(`could not make .foundry/secret.key in ${root} (${String(cause)}): set FOUNDRY_SECRET_KEY instead`))))
    })
  )
