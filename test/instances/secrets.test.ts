/**
 * An installation's config on its way to the store and back: every `Schema.Redacted` field is a
 * secret, stored as "<redacted>" with its value sealed apart (AES-256-GCM), and opened only with
 * the key that sealed it.
 */
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { describe, expect, it } from "@effect/vitest"
import { Cause, ConfigProvider, Effect, Either, Exit, Layer, Redacted, Schema } from "effect"
import { openConfig, redactedMark, resplitConfig, sealSecrets, splitConfig } from "../../src/instances/installationConfig.js"
import * as SecretBox from "../../src/instances/SecretBox.js"

const CrmConfig = Schema.Struct({
  baseUrl: Schema.String,
  apiKey: Schema.Redacted(Schema.String),
  auth: Schema.optional(Schema.Struct({ user: Schema.String, password: Schema.Redacted(Schema.String) })),
  retries: Schema.optionalWith(Schema.Number, { default: () => 3 })
})

const box = SecretBox.make(Redacted.make("test key"))

describe("installation configs", () => {
  it.effect("keeps secrets out of the stored config and puts them back decoded for a run", () =>
    Effect.gen(function*() {
      const input = { baseUrl: "https://crm.test", apiKey: "sk-top-secret", auth: { user: "ann", password: "hunter2" } }
      const split = splitConfig(CrmConfig, input)
      if (Either.isLeft(split)) return expect.fail(split.left.map((i) => i.message).join())
      expect(split.right.config).toEqual({
        baseUrl: "https://crm.test",
        apiKey: redactedMark,
        auth: { user: "ann", password: redactedMark },
        retries: 3
      })
      const sealed = sealSecrets(box, split.right)
      expect(sealed).not.toBeNull()
      expect(sealed).not.toContain("sk-top-secret")
      expect(sealed).not.toContain("hunter2")

      const opened = yield* openConfig(box, CrmConfig, { config: split.right.config, secrets: sealed })
      expect(Schema.is(CrmConfig)(opened)).toBe(true)
      if (!Schema.is(CrmConfig)(opened)) return
      expect(Redacted.value(opened.apiKey)).toBe("sk-top-secret")
      expect(opened.auth === undefined ? undefined : Redacted.value(opened.auth.password)).toBe("hunter2")
      expect(opened.retries).toBe(3)
    }))

  it.effect("a config sent back as shown does not put an installed secret where the capability's schema no longer has a secret", () =>
    Effect.gen(function*() {
      const split = splitConfig(CrmConfig, { baseUrl: "https://crm.test", apiKey: "sk-top-secret" })
      if (Either.isLeft(split)) return expect.fail(split.left.map((i) => i.message).join())
      const installed = { secrets: sealSecrets(box, split.right) }
      // Sent back as shown: the secret is kept.
      const same = yield* resplitConfig(box, CrmConfig, split.right.config, installed)
      expect(Either.isRight(same.split)).toBe(true)
      expect(same.sealed).toBe(installed.secrets)
      // The capability's next version takes the key as plain text.
      const Plain = Schema.Struct({ baseUrl: Schema.String, apiKey: Schema.String, retries: Schema.optional(Schema.Number) })
      const moved = yield* resplitConfig(box, Plain, split.right.config, installed)
      expect(Either.isLeft(moved.split)).toBe(true)
      if (Either.isRight(moved.split)) return
      expect(moved.split.left).toEqual([{ path: "config.apiKey", message: expect.stringContaining("no secret in the capability's config any more") }])
      expect(JSON.stringify(moved)).not.toContain("sk-top-secret")
    }))

  it("lists every wrong field, and refuses fields the schema does not know (a misspelt secret stays out)", () => {
    const split = splitConfig(CrmConfig, { baseUrl: 3, apiKeey: "sk-typo" })
    expect(Either.isLeft(split)).toBe(true)
    if (Either.isRight(split)) return
    const paths = split.left.map((issue) => issue.path)
    expect(paths).toContain("config.baseUrl")
    expect(paths).toContain("config.apiKey")
    expect(paths).toContain("config.apiKeey")
  })

  it("finds a renamed secret where it is sent, and refuses a secret it cannot seal apart rather than store it", () => {
    const Renamed = Schema.Struct({
      url: Schema.String,
      apiKey: Schema.propertySignature(Schema.Redacted(Schema.String)).pipe(Schema.fromKey("api_key"))
    })
    const renamed = splitConfig(Renamed, { url: "https://x.test", api_key: "sk-renamed-secret" })
    if (Either.isLeft(renamed)) return expect.fail(renamed.left.map((i) => i.message).join())
    expect(renamed.right.config).toEqual({ url: "https://x.test", api_key: redactedMark })
    expect(renamed.right.secrets).toEqual([[["api_key"], "sk-renamed-secret"]])

    // A secret folded into another field by a transformation cannot be kept apart: refused.
    const Folded = Schema.transform(
      Schema.Struct({ dsn: Schema.String }),
      Schema.Struct({ password: Schema.Redacted(Schema.String) }),
      { strict: true, decode: ({ dsn }) => ({ password: dsn.split(":")[1] ?? "" }), encode: ({ password }) => ({ dsn: `user:${password}` }) }
    )
    const folded = splitConfig(Folded, { dsn: "user:hunter2-folded" })
    expect(Either.isLeft(folded)).toBe(true)
    expect(JSON.stringify(folded)).not.toContain("hunter2-folded")

    // A wrong value is never quoted back: it may be a secret.
    const Prefixed = Schema.Struct({ token: Schema.Redacted(Schema.String.pipe(Schema.startsWith("sk-"))) })
    const wrong = splitConfig(Prefixed, { token: "supersecret-value" })
    expect(Either.isLeft(wrong) && wrong.left.map((i) => i.path)).toEqual(["config.token"])
    expect(JSON.stringify(wrong)).not.toContain("supersecret-value")
  })

  it.effect("a config without secrets seals nothing; another key cannot open sealed secrets", () =>
    Effect.gen(function*() {
      const plain = splitConfig(Schema.Struct({ region: Schema.String }), { region: "eu" })
      expect(Either.isRight(plain) && sealSecrets(box, plain.right)).toBeNull()

      const split = splitConfig(CrmConfig, { baseUrl: "https://crm.test", apiKey: "sk-1" })
      if (Either.isLeft(split)) return expect.fail("valid config refused")
      const sealed = sealSecrets(box, split.right)
      const other = SecretBox.make(Redacted.make("another key"))
      const refused = yield* Effect.either(openConfig(other, CrmConfig, { config: split.right.config, secrets: sealed }))
      expect(Either.isLeft(refused) && refused.left._tag).toBe("SecretUnreadable")
      const tampered = sealed === null ? null : `${sealed.slice(0, -4)}AAAA`
      const altered = yield* Effect.either(openConfig(box, CrmConfig, { config: split.right.config, secrets: tampered }))
      expect(Either.isLeft(altered)).toBe(true)
      // A tag cut short is refused, though GCM would check the bytes it is given.
      const [tag, iv, auth = "", body] = (sealed ?? "").split(".")
      const shortTag = [tag, iv, Buffer.from(auth, "base64").subarray(0, 4).toString("base64"), body].join(".")
      expect(Either.isLeft(yield* Effect.either(openConfig(box, CrmConfig, { config: split.right.config, secrets: shortTag })))).toBe(true)
    }))

  it.effect("takes its key from FOUNDRY_SECRET_KEY, else makes one in .foundry/secret.key readable by its owner only", () =>
    Effect.gen(function*() {
      const root = mkdtempSync(join(tmpdir(), "foundry-secrets-"))
      const generated = yield* Effect.provide(SecretBox.SecretBox, SecretBox.layer(root))
      const file = join(root, ".foundry", "secret.key")
      expect(statSync(file).mode & 0o777).toBe(0o600)
      expect(readFileSync(file, "utf8").length).toBeGreaterThan(40)
      // The same project opens what it sealed after a restart (a new layer reads the same file).
      const again = yield* Effect.provide(SecretBox.SecretBox, SecretBox.layer(root))
      expect(yield* again.open(generated.seal("kept"))).toBe("kept")

      const fromEnv = Layer.provide(SecretBox.layer(root), Layer.setConfigProvider(ConfigProvider.fromJson({ FOUNDRY_SECRET_KEY: "from the environment" })))
      const configured = yield* Effect.provide(SecretBox.SecretBox, fromEnv)
      expect(yield* SecretBox.make(Redacted.make("from the environment")).open(configured.seal("x"))).toBe("x")
      expect(Either.isLeft(yield* Effect.either(generated.open(configured.seal("x"))))).toBe(true)

      // An emptied key file is no key: refused, saying what to do, rather than sealing with one anyone can derive.
      writeFileSync(file, "\n")
      const emptied = yield* Effect.exit(Effect.provide(SecretBox.SecretBox, SecretBox.layer(root)))
      expect(Exit.isFailure(emptied) ? Cause.pretty(emptied.cause) : "started").toContain("holds no key")
    }))
})
