/**
 * The `Idempotency-Key` a client sends with a submission. Foundry's own submissions are keyed in
 * the same store (a schedule's firing by its activation and time, an agent's timer likewise, a
 * webhook's runs by their delivery): a client's key may not take one of their forms, or it would
 * stand for a firing or a delivery to come, which would then start no run of its own.
 */
import { Schema } from "effect"

/** How the keys of Foundry's own submissions begin: activations' ids (`schedule:`, `agent:`) and deliveries. */
export const ownKeyPrefixes: ReadonlyArray<string> = ["schedule:", "agent:", "delivery:"]

/** Why a client may not send `key`, when it may not. */
export const ownKeyProblem = (key: string): string | undefined =>
  ownKeyPrefixes.some((prefix) => key.startsWith(prefix))
    ? `expected a key that does not begin with ${ownKeyPrefixes.join(", ")}: Foundry keys its own submissions so`
    : undefined

/** A client's idempotency key: any text but one in the form of Foundry's own keys. */
export const ClientIdempotencyKey = Schema.String.pipe(
  Schema.filter((key) => ownKeyProblem(key) === undefined, { message: (issue) => typeof issue.actual === "string" ? ownKeyProblem(issue.actual) ?? "" : "" })
)
