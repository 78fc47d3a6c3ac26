/**
 * Token secrets: `fdy_<id>_<secret>`. The id is what the store looks a token up by, and what the
 * CLI and the API show; the store keeps only a SHA-256 hash of the whole token, compared in
 * constant time, so neither a copy of the store nor the timing of an answer gives a token away.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto"
import { Option } from "effect"

const prefix = "fdy_"

/** A token's public part: 16 lowercase hex digits. */
const idPattern = /^[0-9a-f]{16}$/

const tokenPattern = /^fdy_([0-9a-f]{16})_[A-Za-z0-9_-]{43}$/

/**
 * Whether an `Authorization` header sends a Foundry token (`Bearer fdy_...`), rather than nothing
 * or a key Foundry never issued (an OpenAI client always sends its API key, whatever it is).
 */
export const sendsFoundryToken = (authorization: string | undefined): boolean =>
  authorization !== undefined && /^Bearer\s+fdy_/i.test(authorization)

/** A new token: its id and the text shown once to the person who made it. */
export const issueToken = (): { readonly id: string; readonly token: string } => {
  const id = randomBytes(8).toString("hex")
  return { id, token: `${prefix}${id}_${randomBytes(32).toString("base64url")}` }
}

/** The id inside a token's text; none when the text is not shaped like a token. */
export const tokenId = (token: string): Option.Option<string> => {
  const match = tokenPattern.exec(token)
  return match === null || match[1] === undefined ? Option.none() : Option.some(match[1])
}

/** Whether `id` could be a token's id (the CLI and the API check ids before looking them up). */
export const isTokenId = (id: string): boolean => idPattern.test(id)

/** The hash the store keeps: SHA-256 of the token's text, as hex. */
export const hashToken = (token: string): string => createHash("sha256").update(token).digest("hex")

/** Whether `token` hashes to `hash`, in time that does not depend on where they differ. */
export const matchesHash = (token: string, hash: string): boolean => {
  const given = createHash("sha256").update(token).digest()
  const stored = Buffer.from(hash, "hex")
  return stored.length === given.length && timingSafeEqual(given, stored)
}

const sessionPattern = /^[A-Za-z0-9_-]{43}$/

/**
 * A new session's secret, for the inspector's cookie: random and opaque, with no id in it and
 * nothing of the token it was signed in with (the store finds a session by the secret's hash).
 */
export const issueSessionSecret = (): string => randomBytes(32).toString("base64url")

/** Whether `text` is shaped like a session's secret (anything else is no session, without asking the store). */
export const isSessionSecret = (text: string): boolean => sessionPattern.test(text)
