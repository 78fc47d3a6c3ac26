/**
 * The default `ModelResolver`: `demo` is the offline model; `openai:<model>` uses the OpenAI SDK
 * with `OPENAI_API_KEY` (and `OPENAI_BASE_URL` for any compatible server), or falls back to the
 * demo model when no key is configured, so a fresh clone works offline.
 */
import { Config, Effect, Layer, Option, Redacted } from "effect"
import { demoModel } from "./demo.js"
import { type LanguageModel, ModelResolver } from "./Model.js"
import * as OpenAi from "./openai.js"

/** Resolves `demo` and `openai:*` from the environment's configuration. */
export const ModelResolverLive = Layer.effect(
  ModelResolver,
  Effect.gen(function*() {
    const apiKey = yield* Config.option(Config.redacted("OPENAI_API_KEY"))
    const baseURL = yield* Config.option(Config.string("OPENAI_BASE_URL"))
    const cache = new Map<string, LanguageModel>()
    return {
      notice: Option.isNone(apiKey)
        ? "OPENAI_API_KEY is not set: agents that ask for openai:* run on the offline demo model"
        : undefined,
      resolve: (spec) => {
        if (!spec.startsWith("openai:")) return { model: demoModel }
        if (Option.isNone(apiKey)) return { model: demoModel, fallbackFrom: spec }
        const cached = cache.get(spec)
        if (cached !== undefined) return { model: cached }
        const model = OpenAi.make({
          model: spec.slice("openai:".length),
          apiKey: Redacted.value(apiKey.value),
          baseURL: Option.getOrUndefined(baseURL)
        })
        cache.set(spec, model)
        return { model }
      }
    }
  })
)

/** Runs every string-named model on one given model (tests, benchmarks). */
export const layerFixed = (model: LanguageModel): Layer.Layer<ModelResolver> =>
  Layer.succeed(ModelResolver, { notice: undefined, resolve: () => ({ model }) })
