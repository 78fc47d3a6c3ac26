/**
 * A process whose secret key is not the one that sealed the store's installation secrets refuses
 * to start. Processes that share a store (PostgreSQL, or one SQLite file served by projects with
 * their own `.foundry/secret.key`) must seal with one key; with two, each run left out the other's
 * installed tools with only a warning, so what a run could do depended on which process took it.
 */
import { Config, Data, Effect, Layer, Option } from "effect"
import { InstanceStorage } from "../durable/InstanceStorage.js"
import { SecretBox } from "./SecretBox.js"

/** This process's key does not open the secrets the store holds: another key sealed them. */
export class SecretKeyMismatch extends Data.TaggedError("SecretKeyMismatch")<{ readonly message: string }> {}

/** `FOUNDRY_SECRET_KEY_CHECK=off` starts anyway: for a store whose key is lost, whose installations are then installed again. */
const checkSetting = Config.literal("on", "off")("FOUNDRY_SECRET_KEY_CHECK").pipe(Config.withDefault("on"))

/**
 * Opens the secrets sealed last with this process's key. Only the last: earlier ones sealed with
 * a key since replaced are each reported when a run needs them.
 */
export const secretKeyCheck = Layer.effectDiscard(
  Effect.gen(function*() {
    const latest = yield* (yield* InstanceStorage).latestSealed
    if (Option.isNone(latest) || latest.value.secrets === null) return
    const box = yield* SecretBox
    const opened = yield* Effect.either(box.open(latest.value.secrets))
    if (opened._tag === "Right") return
    const { agent, capability, instanceId, kind } = latest.value
    const configured = Option.isSome(yield* Config.option(Config.redacted("FOUNDRY_SECRET_KEY")))
    const key = configured ? "FOUNDRY_SECRET_KEY" : "the key this project generated in .foundry/secret.key (FOUNDRY_SECRET_KEY is not set)"
    const problem = `this process's secret key, ${key}, does not open the installation secrets in the store ` +
      `(the last sealed: the ${kind} "${capability}" of instance "${instanceId}" of agent "${agent}"): another key sealed them, ` +
      "and every process that shares a store must use the same one"
    if ((yield* checkSetting) === "off") {
      return yield* Effect.logWarning(`${problem}; started anyway (FOUNDRY_SECRET_KEY_CHECK=off): installations sealed with the other key are left out of runs until installed again`)
    }
    return yield* new SecretKeyMismatch({
      message: `${problem}. Set FOUNDRY_SECRET_KEY to the key the other processes use; if that key is lost, ` +
        "start with FOUNDRY_SECRET_KEY_CHECK=off and install those capabilities again"
    })
  }).pipe(
    // Without a store or a readable setting there is nothing to check against: those fail on their own.
    Effect.catchAll((error) => error instanceof SecretKeyMismatch ? Effect.fail(error) : Effect.die(error))
  )
)
