/**
 * Raw HTTP for the edge tests: `fetch` forbids setting `Host` and always frames its body, so these
 * requests go through `node:http`, with every header as given and the body as one piece (with a
 * content-length) or as chunks (chunked transfer encoding). A connection the server resets is an
 * answer too (`reset`), so that a test can assert it never happens.
 */
import { request } from "node:http"
import { Effect } from "effect"

/** What came back: a response, or the connection's error code when there was none. */
export type RawAnswer =
  | {
    readonly _tag: "response"
    readonly status: number
    readonly headers: Readonly<Record<string, string | Array<string> | undefined>>
    readonly text: string
    readonly json: unknown
  }
  | { readonly _tag: "reset"; readonly code: string }

/** One request. */
export interface RawRequest {
  readonly method?: string
  readonly path: string
  readonly headers?: Readonly<Record<string, string>>
  /** Sent with a content-length. */
  readonly body?: string | Buffer
  /** Sent chunked, without a content-length. */
  readonly chunks?: ReadonlyArray<string | Buffer>
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Sends `raw` to the server at `url` (`http://127.0.0.1:<port>`). */
export const rawRequest = (url: string, raw: RawRequest) =>
  Effect.async<RawAnswer>((resume) => {
    const { hostname, port } = new URL(url)
    const headers: Record<string, string | number> = { ...raw.headers }
    if (raw.body !== undefined) headers["content-length"] = Buffer.byteLength(raw.body)
    const req = request({ host: hostname, port, method: raw.method ?? "GET", path: raw.path, headers, agent: false })
    let settled = false
    const settle = (answer: RawAnswer) => {
      if (settled) return
      settled = true
      resume(Effect.succeed(answer))
    }
    req.on("response", (res) => {
      const parts: Array<Buffer> = []
      res.on("data", (chunk: Buffer) => parts.push(chunk))
      res.on("end", () => {
        const text = Buffer.concat(parts).toString("utf8")
        settle({ _tag: "response", status: res.statusCode ?? 0, headers: res.headers, text, json: parse(text) })
      })
      res.on("error", (error: NodeJS.ErrnoException) => settle({ _tag: "reset", code: error.code ?? error.message }))
    })
    // A write error after the response is complete is the server closing a connection it had
    // answered; only an error before a response counts as a reset.
    req.on("error", (error: NodeJS.ErrnoException) => settle({ _tag: "reset", code: error.code ?? error.message }))
    if (raw.chunks !== undefined) {
      const chunks = [...raw.chunks]
      const next = () => {
        const chunk = chunks.shift()
        if (chunk === undefined) return req.end()
        if (req.write(chunk)) setImmediate(next)
        else req.once("drain", next)
      }
      next()
    } else {
      req.end(raw.body)
    }
  })
