/**
 * `SecretBox`: seals the secrets of installations for the store (AES-256-GCM) and opens them when
 * a run needs them. The key comes from `FOUNDRY_SECRET_KEY` (`Config.redacted`); a project without
 * one gets a generated key in `.foundry/secret.key` (readable by its owner only), so that `foundry
 * dev` works out of the box. A server whose store others share should set the variable: every
 * process must seal with the same key.
 */
import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto"
import { existsSync, linkSync, mkdirSync, readFileSync, unlinkSync, writeFileSync } from "node:fs"
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

/** The lengths of a sealed value's nonce and authentication tag, in bytes. */
const nonceBytes = 12
const tagBytes = 16

/** The least key material taken from `.foundry/secret.key`: a generated key is 44 characters. */
const leastKeyFileLength = 32

/** A box over 32 bytes derived from `material`. */
export const make = (material: Redacted.Redacted<string>): SecretBox["Type"] => {
  const key = Buffer.from(hkdfSync("sha256", Redacted.value(material), "foundry", "installation secrets", 32))
  return SecretBox.of({
    seal: (plaintext) => {
      const iv = randomBytes(nonceBytes)
      const cipher = createCipheriv("aes-256-gcm", key, iv, { authTagLength: tagBytes })
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()])
      return [version, iv.toString("base64"), cipher.getAuthTag().toString("base64"), body.toString("base64")].join(".")
    },
    open: (sealed) =>
      Effect.try({
        try: () => {
          const [tag, iv, auth, body] = sealed.split(".")
          if (tag !== version || iv === undefined || auth === undefined || body === undefined) throw new Error("not a sealed value")
          const nonce = Buffer.from(iv, "base64")
          const authTag = Buffer.from(auth, "base64")
          // As sealed, whole: GCM would take a tag cut short (down to 4 bytes), which a writer to the
          // store could forge far more easily than the 16 bytes every sealed value carries.
          if (nonce.length !== nonceBytes || authTag.length !== tagBytes) throw new Error("not a sealed value")
          const decipher = createDecipheriv("aes-256-gcm", key, nonce, { authTagLength: tagBytes })
          decipher.setAuthTag(authTag)
          return Buffer.concat([decipher.update(Buffer.from(body, "base64")), decipher.final()]).toString("utf8")
        },
        catch: () =>
          new SecretUnreadable({
            message: "an installation's secrets cannot be opened with this key: set FOUNDRY_SECRET_KEY to the key they were sealed with, or install the capability again"
          })
      })
  })
}

/**
 * The project's generated key, made on first use. Written to a file of its own and linked into
 * place, so a process starting beside this one never reads a half-written key: it finds no file,
 * or the whole key.
 */
const keyFileOf = (root: string): Redacted.Redacted<string> => {
  const folder = join(root, ".foundry")
  const file = join(folder, "secret.key")
  if (!existsSync(file)) {
    mkdirSync(folder, { recursive: true })
    const draft = join(folder, `secret.key.${process.pid}.${randomBytes(4).toString("hex")}`)
    writeFileSync(draft, randomBytes(32).toString("base64"), { mode: 0o600 })
    try {
      linkSync(draft, file)
    } catch (error) {
      // Another process made it first: theirs is the key.
      if (!(error instanceof Error && "code" in error && error.code === "EEXIST")) throw error
    } finally {
      unlinkSync(draft)
    }
  }
  const material = readFileSync(file, "utf8").trim()
  // An empty or cut file would seal with a key anyone can derive.
  if (material.length < leastKeyFileLength) {
    throw new Error(
      `${file} holds ${material.length === 0 ? "no key" : "too short a key"}: set FOUNDRY_SECRET_KEY to the key the store's secrets were sealed with, ` +
        "or delete the file to have a new one made (installations with secrets must then be installed again)"
    )
  }
  return Redacted.make(material)
}

/**
 * The box with `FOUNDRY_SECRET_KEY`, or the project's generated key at `root`. `shared`: the store
 * is one that other machines use too (PostgreSQL), where a generated key would be this machine's
 * alone, so its use is warned about.
 */
export const layer = (root: string, options: { readonly shared?: boolean } = {}): Layer.Layer<SecretBox> =>
  Layer.effect(
    SecretBox,
    Effect.gen(function*() {
      const configured = yield* Config.option(Config.redacted("FOUNDRY_SECRET_KEY")).pipe(Effect.orDie)
      if (Option.isSome(configured)) {
        if (Redacted.value(configured.value).trim() === "") return yield* Effect.dieMessage("FOUNDRY_SECRET_KEY is empty: set it to a long random value, or unset it")
        return make(configured.value)
      }
      if (options.shared === true) {
        yield* Effect.logWarning(
          "FOUNDRY_SECRET_KEY is not set: installation secrets are sealed with this machine's .foundry/secret.key; " +
            "every process that shares this store must use the same key, so set FOUNDRY_SECRET_KEY on each"
        )
      }
      const generated = yield* Effect.try({ try: () => keyFileOf(root), catch: (error) => error instanceof Error ? error.message : String(error) }).pipe(
        Effect.orDieWith((cause) => new Error(`could not use .foundry/secret.key in ${root} (${cause}): set FOUNDRY_SECRET_KEY instead`))
      )
      return make(generated)
    })
  )
