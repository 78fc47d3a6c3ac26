/**
 * What a token may do. Each scope lists the scopes it includes, so a scope added later is one
 * entry here: what it allows, and that `admin` includes it.
 */
import { Schema } from "effect"

/** The scopes a token can have, as the CLI, the API and the store spell them. */
export const TokenScope = Schema.Literal("read", "run", "deploy", "admin")
export type TokenScope = typeof TokenScope.Type

/** What each scope allows, itself included. */
const includedScopes: { readonly [Scope in TokenScope]: ReadonlySet<TokenScope> } = {
  read: new Set(["read"]),
  run: new Set(["read", "run"]),
  // Shipping code is not running it: a deploy token (a CI job's) starts no runs.
  deploy: new Set(["read", "deploy"]),
  admin: new Set(["read", "run", "deploy", "admin"])
}

/** Whether a token with scope `held` may do what needs scope `needed`. */
export const allows = (held: TokenScope, needed: TokenScope): boolean => includedScopes[held].has(needed)

/** Every scope, for help texts and error messages. */
export const tokenScopes: ReadonlyArray<TokenScope> = TokenScope.literals
