/**
 * An installation's config as the API takes it, the store keeps it and a run uses it. The config
 * is decoded with its capability's schema; every field that decodes to a `Redacted` value is a
 * secret: stored as `"<redacted>"` in the config (which is therefore what the API and events may
 * show), its value sealed apart, and put back only when a run decodes the config to use it.
 */
import { Effect, Either, ParseResult, Redacted, Schema } from "effect"
import type { AnySchema } from "../definitions/defineAgent.js"
import { type ReadableIssue, readableIssues } from "../definitions/readableIssues.js"
import type { SecretBox, SecretUnreadable } from "./SecretBox.js"

/** A field's path in the config, e.g. `["auth", "token"]`. */
export type FieldPath = ReadonlyArray<string>

/** A config ready for the store: its public part (secrets as `"<redacted>"`) and its secrets by path. */
export interface SplitConfig {
  readonly config: unknown
  readonly secrets: ReadonlyArray<readonly [FieldPath, unknown]>
}

/** How a secret is shown wherever a config is shown. */
export const redactedMark = "<redacted>"

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** The paths of the `Redacted` values in a decoded config. */
const secretPaths = (value: unknown, path: FieldPath = []): ReadonlyArray<FieldPath> => {
  if (Redacted.isRedacted(value)) return [path]
  if (Array.isArray(value)) return value.flatMap((item, index) => secretPaths(item, [...path, String(index)]))
  if (isRecord(value)) return Object.entries(value).flatMap(([key, item]) => secretPaths(item, [...path, key]))
  return []
}

const at = (value: unknown, path: FieldPath): unknown =>
  path.reduce<unknown>(
    (current, key) => Array.isArray(current) ? current[Number(key)] : isRecord(current) ? current[key] : undefined,
    value
  )

/** `value` with `path` set to `replacement` (copied on the way down, never mutated). */
const setAt = (value: unknown, path: FieldPath, replacement: unknown): unknown => {
  const [key, ...rest] = path
  if (key === undefined) return replacement
  if (Array.isArray(value)) return value.map((item, index) => String(index) === key ? setAt(item, rest, replacement) : item)
  const record = isRecord(value) ? value : {}
  return { ...record, [key]: setAt(record[key], rest, replacement) }
}

/** What is wrong with a config, one issue per field: `config.token`, `is missing`. */
const configIssues = (error: ParseResult.ParseError): ReadonlyArray<ReadableIssue> =>
  readableIssues(error, { root: "config" }).map((issue) => issue.path === "config" ? issue : { ...issue, path: `config.${issue.path}` })

/**
 * Checks `input` against `schema` and splits it for the store; `Left` lists every field that is
 * wrong. Unknown fields are refused, so a misspelt secret cannot slip into the public part.
 */
export const splitConfig = (schema: AnySchema, input: unknown): Either.Either<SplitConfig, ReadonlyArray<ReadableIssue>> => {
  const decoded = Schema.decodeUnknownEither(schema)(input, { errors: "all", onExcessProperty: "error" })
  if (Either.isLeft(decoded)) return Either.left(configIssues(decoded.left))
  const encoded = Schema.encodeEither(schema)(decoded.right)
  if (Either.isLeft(encoded)) return Either.left(configIssues(encoded.left))
  const paths = secretPaths(decoded.right)
  const secrets = paths.map((path) => [path, at(encoded.right, path)] as const)
  const config = paths.reduce<unknown>((value, path) => setAt(value, path, redactedMark), encoded.right)
  return Either.right({ config, secrets })
}

/** Seals a split config's secrets; `null` when it has none. */
export const sealSecrets = (box: SecretBox["Type"], split: SplitConfig): string | null =>
  split.secrets.length === 0 ? null : box.seal(JSON.stringify(split.secrets))

const SealedSecrets = Schema.parseJson(Schema.Array(Schema.Tuple(Schema.Array(Schema.String), Schema.Unknown)))

/**
 * A stored config with its secrets opened and put back, decoded by the capability's schema for a
 * run to use (secrets as `Redacted`).
 */
export const openConfig = (box: SecretBox["Type"], schema: AnySchema, stored: { readonly config: unknown; readonly secrets: string | null }) =>
  Effect.gen(function*() {
    const secrets = stored.secrets === null ? [] : yield* Schema.decodeUnknown(SealedSecrets)(yield* box.open(stored.secrets))
    const whole = secrets.reduce<unknown>((value, [path, secret]) => setAt(value, path, secret), stored.config)
    return yield* Schema.decodeUnknown(schema)(whole)
  }) satisfies Effect.Effect<unknown, SecretUnreadable | ParseResult.ParseError>
