/**
 * A running server's HTTP API from the terminal, for the commands that talk to one (`instances`,
 * `deploy`, `releases`, ...). The server is the one the project's config names unless a flag
 * names another, and the token comes from `--token` or `FOUNDRY_TOKEN`. What goes wrong reads as
 * a line for the user: no server there, a refusal as the server worded it, an answer of another
 * version; never a stack trace.
 */
import * as Http from "node:http"
import * as Https from "node:https"
import { HttpClient, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import * as NodeHttpClient from "@effect/platform-node/NodeHttpClient"
import { Config, Data, Duration, Effect, Layer, Option, Redacted, Schema } from "effect"
import { ReadableIssue } from "../definitions/readableIssues.js"
import { loadConfig } from "../router/loadConfig.js"
import { CliError } from "./CliError.js"
import { addressOf, servingUrl } from "./servingAddress.js"

/** Where the server is and who asks: `url` (else the project's config) and `token` (else `FOUNDRY_TOKEN`). */
export interface ServerOptions {
  readonly dir: string
  readonly url: Option.Option<string>
  readonly token: Option.Option<Redacted.Redacted>
}

/** How a command names the server and starts one, for the line printed when nobody answers. */
export interface ServerHint {
  /** The flag that names another server, e.g. `--url`. */
  readonly flag: string
  /** The command that starts a server this command can use, e.g. `foundry dev`. */
  readonly start: string
  /**
   * The query parameters the command's flags are sent as, each with its flag (`agent` is
   * `--agent`): a refusal of one names the flag the user passes, not the parameter.
   */
  readonly params?: Readonly<Record<string, string>>
}

/** The server answered with an error status; `message` is what it said, as a person reads it. */
export class ServerRefused extends Data.TaggedError("ServerRefused")<{ readonly status: number; readonly message: string }> {}

/** What the server says when it refuses: its message, and one issue per wrong field when it has them. */
const Refusal = Schema.Struct({ message: Schema.String, issues: Schema.optional(Schema.Array(ReadableIssue)) })

/**
 * The server: the one given, else the one serving the project on this machine now (`foundry dev
 * --port 4500`), else `http://<server.host>:<server.port>` of the project's config.
 */
const serverUrl = (options: ServerOptions, hint: ServerHint) =>
  Option.match(Option.orElse(options.url, () => servingUrl(options.dir)), {
    onSome: (given) => {
      // `localhost:4510` is how people write a server's address; it means HTTP. The address the
      // server prints for its API (`.../api`) names the same server: its routes are under it already.
      const url = (/^[a-z][a-z0-9+.-]*:\/\//i.test(given) ? given : `http://${given}`).replace(/\/+$/, "").replace(/\/api$/, "")
      return URL.canParse(url) && /^https?:/i.test(url)
        ? Effect.succeed(url)
        : Effect.fail(new CliError({ message: `${hint.flag} ${given} is not a server's address: give one like http://127.0.0.1:4141` }))
    },
    onNone: () =>
      loadConfig(options.dir, 1).pipe(
        Effect.map(({ config }) => addressOf(config.server.host, config.server.port)),
        Effect.catchTag("RouteError", (error) =>
          Effect.fail(new CliError({ message: `the project's config is broken, so its server is not known (or pass ${hint.flag}):\n${error.message}` })))
      )
  })

/**
 * What a refusal reads as: the server's first line, then each wrong field on its own line, a
 * parameter named by its flag. A message that is its issues, one line each (a 400's), is not
 * said twice: the issues are.
 */
const refusalText = (status: number, body: unknown, params: Readonly<Record<string, string>>): string => {
  const refusal = Schema.decodeUnknownOption(Refusal)(body)
  if (Option.isNone(refusal)) return `the server answered ${status}`
  const { issues, message } = refusal.value
  if (issues === undefined || issues.length === 0) return message
  const lines = message.split("\n")
  const onlyIssues = lines.length === issues.length && issues.every((issue, index) => lines[index]?.startsWith(`${issue.path}: `))
  const fields = issues.map((issue) => `${params[issue.path] ?? issue.path}: ${issue.message}`)
  return (onlyIssues ? fields : [lines[0] ?? "", ...fields]).join("\n")
}

/**
 * The token as a header carries it, without the whitespace around it (a token file saved with a
 * Windows line end keeps its `\r` through `$(cat file)`); none when that leaves nothing. One with a
 * character no header can carry is refused here, saying where it came from (never what it is),
 * instead of failing as the request is built.
 */
const headerToken = (token: Redacted.Redacted, from: string): Effect.Effect<Option.Option<Redacted.Redacted>, CliError> => {
  const value = Redacted.value(token).trim()
  if (value === "") return Effect.succeed(Option.none())
  if (/^[\x21-\x7e]+$/.test(value)) return Effect.succeed(Option.some(Redacted.make(value)))
  return Effect.fail(
    new CliError({
      message: `the token ${from} has a character an HTTP header cannot carry (a token is visible ASCII, without spaces): copy it again as \`foundry token create\` printed it`
    })
  )
}

/** The token `--token` gives, else `FOUNDRY_TOKEN`. */
const givenToken = (options: ServerOptions) =>
  Effect.flatMap(Config.option(Config.redacted("FOUNDRY_TOKEN")), (fromEnv) =>
    Option.match(options.token, {
      onSome: (token) => headerToken(token, "given with --token"),
      onNone: () => Option.match(fromEnv, { onSome: (token) => headerToken(token, "in FOUNDRY_TOKEN"), onNone: () => Effect.succeedNone })
    }))

/**
 * Requests by Node's `http`, not `fetch`: Node 20's `fetch` parses answers with WebAssembly that V8
 * compiles again in the background, and the command waited about 150 ms for that before it could
 * exit (docs/decisions.md). Its agents keep no socket open once an answer is read, so nothing of
 * theirs needs ending with the API's scope: the commands use the API after it is made.
 */
const nodeHttp = NodeHttpClient.layerWithoutAgent.pipe(
  Layer.provide(
    Layer.sync(NodeHttpClient.HttpAgent, () =>
      NodeHttpClient.HttpAgent.of({ [NodeHttpClient.HttpAgentTypeId]: NodeHttpClient.HttpAgentTypeId, http: new Http.Agent(), https: new Https.Agent() }))
  )
)

/** How long an answer may take, its body included: as long as `fetch` waited for one (undici's default). */
const answerWithin = Duration.minutes(5)

/** The server's API at `options`' URL, with its token: `read` decodes an answer, `send` only needs it to succeed. */
export const serverApi = (options: ServerOptions, hint: ServerHint) =>
  Effect.gen(function*() {
    const url = yield* serverUrl(options, hint)
    const token = yield* givenToken(options)
    const inTime = <A, E, R>(request: HttpClientRequest.HttpClientRequest, answer: Effect.Effect<A, E, R>) =>
      Effect.timeoutFail(answer, {
        duration: answerWithin,
        onTimeout: () => new CliError({ message: `${url} did not answer ${request.method} ${request.url} within ${Duration.format(answerWithin)}` })
      })
    const client = (yield* HttpClient.HttpClient).pipe(
      HttpClient.mapRequest((request) => {
        const sent = HttpClientRequest.prependUrl(request, url)
        return Option.isSome(token) ? HttpClientRequest.bearerToken(sent, token.value) : sent
      })
    )
    const call = (request: HttpClientRequest.HttpClientRequest) =>
      client.execute(request).pipe(
        Effect.flatMap((response) =>
          response.status >= 200 && response.status < 300
            ? Effect.succeed(response)
            : Effect.flatMap(
              Effect.orElseSucceed(response.json, () => undefined),
              (body) =>
                Effect.fail(
                  new ServerRefused({
                    status: response.status,
                    // The server says how to send a token over HTTP; from here, it is a flag or the environment.
                    message: refusalText(response.status, body, hint.params ?? {}) +
                      (response.status === 401 && Option.isNone(token) ? "\nno token was sent: pass --token <token>, or set FOUNDRY_TOKEN" : "")
                  })
                )
            )
        ),
        Effect.catchTag("RequestError", (error) =>
          Effect.fail(
            new CliError({
              message: error.reason === "Transport"
                ? `no Foundry server at ${url}: start one with \`${hint.start}\`, or pass ${hint.flag}`
                : `cannot send the request to ${url}: ${error.message}`
            })
          ))
      )
    /** The answer to `request`, decoded by `schema`. */
    const read = <A, I>(request: HttpClientRequest.HttpClientRequest, schema: Schema.Schema<A, I>) =>
      inTime(request, call(request).pipe(
        Effect.flatMap(HttpClientResponse.schemaBodyJson(schema)),
        Effect.catchTags({
          ResponseError: (error) => Effect.fail(new CliError({ message: `the answer of ${url}${request.url} cannot be read: ${error.message}` })),
          ParseError: () =>
            Effect.fail(new CliError({ message: `the answer of ${url}${request.url} is not what this version of foundry expects: is it a Foundry server of another version?` }))
        }),
        Effect.scoped
      ))
    const send = (request: HttpClientRequest.HttpClientRequest) => inTime(request, Effect.scoped(Effect.asVoid(call(request))))
    return { url, read, send }
  }).pipe(Effect.provide(nodeHttp))

/** A server's API as `serverApi` gives it. */
export type ServerApi = Effect.Effect.Success<ReturnType<typeof serverApi>>
