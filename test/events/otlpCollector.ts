/**
 * A local OTLP/HTTP receiver that records every request it is sent (path, headers, resources and
 * spans, a gzip-compressed body unpacked) and answers each as the test says: a status (with
 * headers and a body of its own), or never.
 */
import { createServer, type IncomingHttpHeaders } from "node:http"
import { gunzipSync } from "node:zlib"
import { Effect } from "effect"

/** A span as the exporter sends it. */
export interface Span {
  readonly traceId: string
  readonly spanId: string
  readonly parentSpanId?: string
  readonly name: string
  readonly startTimeUnixNano: string
  readonly endTimeUnixNano: string
  readonly attributes: ReadonlyArray<{ key: string; value: { stringValue?: string; intValue?: string } }>
  readonly events?: ReadonlyArray<{ readonly name: string; readonly timeUnixNano: string; readonly attributes: Span["attributes"] }>
}

/** One request the collector got. */
export interface Received {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** Each resource's attributes as key -> string value. */
  readonly resources: ReadonlyArray<Readonly<Record<string, string>>>
  readonly spans: ReadonlyArray<Span>
  /** The status it was answered with, or "hang". */
  readonly answer: number | "hang"
  /** When it arrived (ms since the epoch). */
  readonly at: number
  /** How many bytes its body had, as sent. */
  readonly bytes: number
}

/** An answer with headers or a body other than `{}`. */
export interface FullAnswer {
  readonly status: number
  readonly headers?: Readonly<Record<string, string>>
  readonly body?: string
}

/** How the `n`th request (from 0) is answered. */
export type Answer = (n: number) => number | "hang" | FullAnswer

/** A running collector. */
export interface Collector {
  readonly url: string
  readonly requests: Array<Received>
  /** The spans of the requests answered with a 2xx. */
  readonly spans: () => ReadonlyArray<Span>
}

/** Starts a collector in the scope; every request is answered 200 unless `answer` says otherwise. */
export const collector = (answer: Answer = () => 200) =>
  Effect.acquireRelease(
    Effect.async<{ readonly collector: Collector; readonly close: () => void }>((resume) => {
      const requests: Array<Received> = []
      const server = createServer((request, response) => {
        const chunks: Array<Buffer> = []
        request.on("data", (chunk: Buffer) => chunks.push(chunk))
        request.on("end", () => {
          const raw = Buffer.concat(chunks)
          const body = (request.headers["content-encoding"] === "gzip" ? gunzipSync(raw) : raw).toString()
          const parsed = JSON.parse(body) as {
            resourceSpans: Array<{ resource: { attributes: Span["attributes"] }; scopeSpans: Array<{ spans: Array<Span> }> }>
          }
          const given = answer(requests.length)
          const full: FullAnswer | "hang" = typeof given === "number" ? { status: given } : given
          requests.push({
            path: request.url ?? "",
            headers: request.headers,
            resources: parsed.resourceSpans.map((r) => Object.fromEntries(r.resource.attributes.map((a) => [a.key, a.value.stringValue ?? ""]))),
            spans: parsed.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans)),
            answer: full === "hang" ? "hang" : full.status,
            at: Date.now(),
            bytes: raw.length
          })
          if (full !== "hang") response.writeHead(full.status, { "content-type": "application/json", ...full.headers }).end(full.body ?? "{}")
        })
      })
      server.listen(0, "127.0.0.1", () => {
        const address = server.address()
        const port = typeof address === "object" && address !== null ? address.port : 0
        resume(Effect.succeed({
          collector: {
            url: `http://127.0.0.1:${port}`,
            requests,
            spans: () => requests.filter((r) => typeof r.answer === "number" && r.answer < 300).flatMap((r) => r.spans)
          },
          close: () => {
            server.closeAllConnections()
            server.close()
          }
        }))
      })
    }),
    (c) => Effect.sync(c.close)
  ).pipe(Effect.map((c) => c.collector))
