/**
 * `foundry token create|list|revoke`: API tokens in the project's store (the one its config
 * names), so a server can be opened beyond loopback and clients can authenticate. A token is
 * printed once, when it is made; the store keeps only its hash.
 */
import { Effect, Layer, Option } from "effect"
import { isTokenId } from "../../auth/token.js"
import * as TokenStorage from "../../auth/TokenStorage.js"
import type { TokenScope } from "../../auth/TokenScope.js"
import { emptyApp } from "../../compiler/loadProject.js"
import { defaultConfig } from "../../definitions/configDefaults.js"
import { loadConfig } from "../../router/loadConfig.js"
import { CliError } from "../CliError.js"
import { notAProjectOrRelease } from "../projectFolder.js"
import { databaseLayer } from "../ProjectRuntime.js"
import { addressOf, servingUrl } from "../servingAddress.js"
import { say, style, table, when } from "../terminal.js"

/** Token storage on the store that the config of the project at `dir` names. */
const projectTokens = (dir: string) =>
  Layer.unwrapEffect(
    Effect.gen(function*() {
      // A mistyped --dir would make a token in a store of its own, which no server reads.
      const refusal = notAProjectOrRelease(dir)
      if (refusal !== undefined) return yield* new CliError({ message: refusal })
      const project = yield* loadConfig(dir, 1).pipe(
        Effect.catchTag("RouteError", (error) => Effect.fail(new CliError({ message: `the project's config is broken:\n${error.message}` })))
      )
      return TokenStorage.layer.pipe(Layer.provide(databaseLayer(emptyApp(dir, project), undefined)))
    })
  )

/** `foundry token create`: makes a token and prints it, the only time it is shown. */
export const create = (options: { readonly dir: string; readonly scope: TokenScope; readonly name: string | undefined }) =>
  Effect.gen(function*() {
    const tokens = yield* TokenStorage.TokenStorage
    const { record, token } = yield* tokens.create({ name: options.name ?? "", scope: options.scope })
    // Where the examples reach the server: the one serving the project now (started with --port or
    // --host, perhaps), else where its config says one listens (on loopback when that is every interface).
    const server = yield* Option.match(servingUrl(options.dir), {
      onSome: Effect.succeed,
      onNone: () =>
        loadConfig(options.dir, 1).pipe(
          Effect.map((project) => addressOf(project.config.server.host, project.config.server.port)),
          Effect.orElseSucceed(() => addressOf(defaultConfig.server.host, defaultConfig.server.port))
        )
    })
    yield* say(style.green(`created token ${record.id} (scope ${record.scope}${record.name === "" ? "" : `, name ${record.name}`}):`))
    yield* say(`\n  ${token}\n`)
    yield* say(style.yellow("This is the only time the token is shown: keep it in a secret store."))
    yield* say(`Send it as a bearer token:  curl -H "Authorization: Bearer ${token}" ${server}/api/runs`)
    yield* say(`OpenAI-compatible clients:  apiKey = the token, baseURL = ${server}/v1`)
    yield* say(`The inspector asks for it when the server needs tokens. Revoke it: foundry token revoke ${record.id}`)
  }).pipe(Effect.provide(projectTokens(options.dir)))

/** `foundry token list`: every token, never its secret. */
export const list = (dir: string) =>
  Effect.gen(function*() {
    const found = yield* Effect.flatMap(TokenStorage.TokenStorage, (tokens) => tokens.list)
    if (found.length === 0) {
      yield* say("no tokens; create one with `foundry token create --scope read|run|deploy|admin`")
      return
    }
    const rows = found.map((t) => [t.id, t.name === "" ? "-" : t.name, t.scope, when(t.createdAt), when(t.lastUsedAt), when(t.revokedAt)])
    yield* table(["ID", "NAME", "SCOPE", "CREATED", "LAST USED", "REVOKED"], rows)
  }).pipe(Effect.provide(projectTokens(dir)))

/** `foundry token revoke <id>`: the token stops working at once, on every server on this store. */
export const revoke = (options: { readonly dir: string; readonly id: string }) =>
  Effect.gen(function*() {
    if (!isTokenId(options.id)) {
      return yield* new CliError({ message: `${options.id} is not a token id (16 hex digits); \`foundry token list\` shows the ids` })
    }
    const tokens = yield* TokenStorage.TokenStorage
    const revoked = yield* tokens.revoke(options.id)
    if (Option.isNone(revoked)) {
      return yield* new CliError({ message: `there is no token ${options.id}; \`foundry token list\` shows the ids` })
    }
    yield* say(`revoked token ${options.id} (revoked at ${when(revoked.value.revokedAt)} UTC)`)
  }).pipe(Effect.provide(projectTokens(options.dir)))
