/**
 * An installation's config as the API takes it, the store keeps it and a run uses it. The config
 * is decoded with its capability's schema; every field that decodes to a `Redacted` value is a
 * secret: stored as `"<redacted>"` in the config (which is therefore what the API and events may
 * show), its value sealed apart, and put back only when a run decodes the config to use it.
 */
import { randomBytes } from "node:crypto"
import { Effect, Either, type ParseResult, Redacted, Schema } from "effect"
import type { AnySchema } from "../definitions/defineAgent.js"
import { type ReadableIssue, readableIssues } from "../definitions/readableIssues.js"
import type { SecretBox, SecretUnreadable } from "./SecretBox.js"

/** A field's path in the config as sent and stored (its encoded form), e.g. `["auth", "token"]`. */
export type FieldPath = ReadonlyArray<string>

/** A config ready for the store: its public part (secrets as `"<redacted>"`) and its secrets by path. */
export interface SplitConfig {
  readonly config: unknown
  readonly secrets: ReadonlyArray<readonly [FieldPath, unknown]>
}

/** How a secret is shown wherever a config is shown; sent back in its place, it keeps the installed secret. */
export const redactedMark = "<redacted>"

const isPlainObject = (value: unknown): value is Readonly<Record<string, unknown>> =>
  typeof value === "object" && value !== null && Object.getPrototypeOf(value) === Object.prototype

const at = (value: unknown, path: FieldPath): unknown =>
  path.reduce<unknown>(
    (current, key) => Array.isArray(current) ? current[Number(key)] : isPlainObject(current) ? current[key] : undefined,
    value
  )

/** `value` with `path` set to `replacement` (copied on the way down, never mutated). */
const setAt = (value: unknown, path: FieldPath, replacement: unknown): unknown => {
  const [key, ...rest] = path
  if (key === undefined) return replacement
  if (Array.isArray(value)) return value.map((item, index) => String(index) === key ? setAt(item, rest, replacement) : item)
  const record = isPlainObject(value) ? value : {}
  return { ...record, [key]: setAt(record[key], rest, replacement) }
}

/** Every `Redacted` in a decoded value, looking inside any object (an `Option`, a class). */
const redactedIn = (value: unknown, seen = new Set<unknown>()): ReadonlyArray<Redacted.Redacted<unknown>> => {
  if (Redacted.isRedacted(value)) return [value]
  if (typeof value !== "object" || value === null || seen.has(value)) return []
  seen.add(value)
  return Object.values(value).flatMap((item) => redactedIn(item, seen))
}

/** `value` with each `Redacted` in plain objects and arrays replaced by `replace`'s; other objects are kept as they are. */
const replaceRedacted = (value: unknown, replace: () => Redacted.Redacted<string>): unknown => {
  if (Redacted.isRedacted(value)) return replace()
  if (Array.isArray(value)) return value.map((item) => replaceRedacted(item, replace))
  if (isPlainObject(value)) return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, replaceRedacted(item, replace)]))
  return value
}

/** Where `text` sits as a value in an encoded config. */
const pathOf = (value: unknown, text: string, path: FieldPath = []): FieldPath | undefined => {
  if (value === text) return path
  const entries = Array.isArray(value) ? value.map((item, index) => [String(index), item] as const) : isPlainObject(value) ? Object.entries(value) : []
  for (const [key, item] of entries) {
    const found = pathOf(item, text, [...path, key])
    if (found !== undefined) return found
  }
  return undefined
}

/** The strings of an encoded config. */
const leaves = (value: unknown): ReadonlyArray<string> =>
  typeof value === "string" ? [value] : Array.isArray(value) ? value.flatMap(leaves) : isPlainObject(value) ? Object.values(value).flatMap(leaves) : []

/**
 * What is wrong with a config, one issue per field: `config.token`, `is missing`. The value sent is
 * never quoted (`got "sk-..."`): the field may be a secret.
 */
const configIssues = (error: ParseResult.ParseError): ReadonlyArray<ReadableIssue> =>
  readableIssues(error, { under: "config" }).map((issue) => ({ ...issue, message: issue.message.replace(/, got [\s\S]*$/, "") }))

const hidden: ReadonlyArray<ReadableIssue> = [{
  path: "config",
  message: "the capability's config schema keeps a secret where Foundry cannot seal it apart (inside a transformation); " +
    "declare each secret as a field of its own: Schema.Redacted(Schema.String)"
}]

/**
 * Checks `input` against `schema` and splits it for the store; `Left` lists every field that is
 * wrong. Unknown fields are refused, so a misspelt secret cannot slip into the public part.
 * Secrets are found where they land in the encoded config (a renamed field included) by encoding
 * the config once more with a marker in place of each secret; a config whose secrets cannot be
 * found that way is refused rather than stored with a secret in it.
 */
export const splitConfig = (schema: AnySchema, input: unknown): Either.Either<SplitConfig, ReadonlyArray<ReadableIssue>> => {
  const decoded = Schema.decodeUnknownEither(schema)(input, { errors: "all", onExcessProperty: "error" })
  if (Either.isLeft(decoded)) return Either.left(configIssues(decoded.left))
  const encoded = Schema.encodeEither(schema)(decoded.right)
  if (Either.isLeft(encoded)) return Either.left(configIssues(encoded.left))
  const found = redactedIn(decoded.right)
  if (found.length === 0) return Either.right({ config: encoded.right, secrets: [] })
  const nonce = randomBytes(12).toString("hex")
  const markers: Array<string> = []
  const marked = replaceRedacted(decoded.right, () => {
    const marker = `foundry-secret-${nonce}-${markers.length}`
    markers.push(marker)
    return Redacted.make(marker)
  })
  const markedEncoded = markers.length === found.length ? Schema.encodeEither(schema)(marked) : undefined
  if (markedEncoded === undefined || Either.isLeft(markedEncoded)) return Either.left(hidden)
  const paths = markers.map((marker) => pathOf(markedEncoded.right, marker))
  if (paths.some((path) => path === undefined)) return Either.left(hidden)
  const secretPaths = paths.filter((path): path is FieldPath => path !== undefined)
  const config = secretPaths.reduce<unknown>((value, path) => setAt(value, path, redactedMark), encoded.right)
  // Whatever the schema did, no secret's value is left in what is stored and shown.
  const shown = leaves(config)
  const leaked = found.map((secret) => String(Redacted.value(secret))).some((value) =>
    value.length > 0 && value !== redactedMark && shown.some((leaf) => leaf === value || (value.length >= 8 && leaf.includes(value)))
  )
  if (leaked) return Either.left(hidden)
  return Either.right({ config, secrets: secretPaths.map((path) => [path, at(encoded.right, path)] as const) })
}

/** Seals a split config's secrets; `null` when it has none. */
export const sealSecrets = (box: SecretBox["Type"], split: SplitConfig): string | null =>
  split.secrets.length === 0 ? null : box.seal(JSON.stringify(split.secrets))

const SealedSecrets = Schema.parseJson(Schema.Array(Schema.Tuple(Schema.Array(Schema.String), Schema.Unknown)))

const openSecrets = (box: SecretBox["Type"], sealed: string | null) =>
  sealed === null ? Effect.succeed([]) : Effect.flatMap(box.open(sealed), Schema.decodeUnknown(SealedSecrets))

/**
 * A new config for an installed capability: split like any, with each `"<redacted>"` that stands
 * where a secret is installed taken as that secret (a client that sends back a config as the API
 * showed it keeps its secrets). When the secrets come out as installed, their sealed form is kept
 * too, so sending back an unchanged config changes nothing.
 */
export const resplitConfig = (box: SecretBox["Type"], schema: AnySchema, input: unknown, installed: { readonly secrets: string | null }) =>
  Effect.map(openSecrets(box, installed.secrets), (secrets) => {
    const kept = secrets.filter(([path]) => at(input, path) === redactedMark)
    const restored = kept.reduce<unknown>((value, [path, secret]) => setAt(value, path, secret), input)
    const split = Either.flatMap(splitConfig(schema, restored), (split) => {
      // A field the capability's schema no longer takes as a secret (a new version of it) would
      // store the installed secret in the open: its value must be sent again, knowingly.
      const secretNow = new Set(split.secrets.map(([path]) => path.join(".")))
      const exposed = kept.filter(([path]) => !secretNow.has(path.join(".")))
      return exposed.length === 0 ? Either.right(split) : Either.left(exposed.map(([path]): ReadableIssue => ({
        path: ["config", ...path].join("."),
        message: `the secret installed here is no secret in the capability's config any more, and would be stored and shown as it is: ` +
          `send the value to keep in its place`
      })))
    })
    const unchanged = Either.isRight(split) && JSON.stringify(split.right.secrets) === JSON.stringify(secrets)
    return { split, sealed: unchanged ? installed.secrets : undefined }
  })

/** The secrets of a split config that are `"<redacted>"` itself: a placeholder, not a secret. */
export const placeholderSecrets = (split: SplitConfig): ReadonlyArray<ReadableIssue> =>
  split.secrets.flatMap(([path, value]) =>
    value === redactedMark
      ? [{ path: ["config", ...path].join("."), message: `send the secret itself: "${redactedMark}" keeps a secret only where one is installed` }]
      : []
  )

/**
 * A stored config with its secrets opened and put back, decoded by the capability's schema for a
 * run to use (secrets as `Redacted`).
 */
export const openConfig = (box: SecretBox["Type"], schema: AnySchema, stored: { readonly config: unknown; readonly secrets: string | null }) =>
  Effect.gen(function*() {
    const secrets = yield* openSecrets(box, stored.secrets)
    const whole = secrets.reduce<unknown>((value, [path, secret]) => setAt(value, path, secret), stored.config)
    return yield* Schema.decodeUnknown(schema)(whole)
  }) satisfies Effect.Effect<unknown, SecretUnreadable | ParseResult.ParseError>
