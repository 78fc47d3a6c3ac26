/**
 * Where a project is being served from this machine: `foundry dev` and `foundry start` write their
 * address to `.foundry/server.json` while they listen, so that the commands that talk to a server
 * (`foundry instances`, `deploy`, `releases`, the hints of `foundry run`) find one started with
 * `--port` or `--host`, not only the one the config names.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { Effect, Option, Schema } from "effect"
import { processEnded } from "../processEnded.js"

/** What a serving process leaves for the others: its address and its process id. */
const Serving = Schema.parseJson(Schema.Struct({ url: Schema.String, pid: Schema.Number }))

const fileOf = (root: string): string => join(root, ".foundry", "server.json")

/** The address of the process serving the project at `root`, if one is serving it now. */
export const servingUrl = (root: string): Option.Option<string> => {
  let text: string
  try {
    text = readFileSync(fileOf(root), "utf8")
  } catch {
    return Option.none()
  }
  return Option.flatMap(Schema.decodeUnknownOption(Serving)(text), (serving) =>
    serving.pid !== process.pid && processEnded(serving.pid) ? Option.none() : Option.some(serving.url))
}

/**
 * The address of a server listening on `host` and `port`: one bound to every interface is reached
 * on loopback; an IPv6 address goes in brackets, as a URL needs it.
 */
export const addressOf = (host: string, port: number): string => urlOf(host === "0.0.0.0" || host === "::" ? "127.0.0.1" : host, port)

/** The URL of `host` and `port` as given: an IPv6 address in brackets, as a URL needs it. */
export const urlOf = (host: string, port: number): string => `http://${host.includes(":") ? `[${host}]` : host}:${port}`

/** Records, for as long as the scope is open, that this process serves the project at `root` at `url`. */
export const recordServing = (root: string, url: string) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      try {
        mkdirSync(join(root, ".foundry"), { recursive: true })
        writeFileSync(fileOf(root), Schema.encodeSync(Serving)({ url, pid: process.pid }))
      } catch {
        // A read-only folder (a release in a container) only loses the other commands' shortcut.
      }
    }),
    () =>
      Effect.sync(() => {
        // Another server of the project may have started since: its record stays.
        if (ownRecord(root)) rmSync(fileOf(root), { force: true })
      })
  )

const ownRecord = (root: string): boolean => {
  try {
    return Option.exists(Schema.decodeUnknownOption(Serving)(readFileSync(fileOf(root), "utf8")), (serving) => serving.pid === process.pid)
  } catch {
    return false
  }
}
