/**
 * Fuzzing the HTTP surface: well over a thousand malformed requests (bad JSON, wrong types, huge
 * bodies, bad headers, bad paths, methods, query and path parameters), generated with a seeded
 * PRNG across every route of the OpenAPI document the server serves (so a new route is fuzzed as
 * soon as it is documented) plus the routes it serves beside the document (`/mcp`). Every one
 * must be answered 4xx: never 5xx, never a reset, never a stack trace. Afterwards the server still
 * answers its health check and the store holds no partial rows.
 *
 * A failure prints the seed; `FOUNDRY_FUZZ_SEED=<seed>` replays the same requests.
 */
import Database from "better-sqlite3"
import { describe, expect, it } from "@effect/vitest"
import { Effect } from "effect"
import * as Scripted from "../../src/models/scripted.js"
import { http, startServer, waitForRun } from "../support/server.js"
import { agentFile, tempProject } from "../support/tempProject.js"
import { type RawAnswer, type RawRequest, rawRequest } from "./edgeClient.js"

const seed = Number(process.env.FOUNDRY_FUZZ_SEED ?? 20261130)
const requestsPerRoute = 48
const minimumRequests = 1000
const bodyLimit = 32 * 1024

/** mulberry32: small, fast and the same on every machine. */
const prng = (start: number) => {
  let state = start >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

type Random = () => number
const pick = <A>(random: Random, items: ReadonlyArray<A>): A => items[Math.floor(random() * items.length)]!
const junk = (random: Random, length: number) =>
  Array.from({ length }, () => String.fromCharCode(33 + Math.floor(random() * 94))).join("")

// --- The routes, from the OpenAPI document ----------------------------------------------------

type Json = null | boolean | number | string | ReadonlyArray<Json> | { readonly [key: string]: Json }
const isObject = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null && !Array.isArray(value)

/** A JSON schema as the document gives it, `$ref`s resolved. */
interface SchemaView {
  readonly type?: string
  readonly enum?: ReadonlyArray<unknown>
  readonly properties?: Record<string, SchemaView>
  readonly required?: ReadonlyArray<string>
  readonly pattern?: string
  readonly anyOf?: ReadonlyArray<SchemaView>
}

interface Parameter {
  readonly name: string
  readonly in: "path" | "query" | "header"
  readonly schema: SchemaView
}

interface Route {
  readonly method: string
  /** With `{param}` placeholders. */
  readonly path: string
  readonly parameters: ReadonlyArray<Parameter>
  /** The JSON body's schema, when the route takes one. */
  readonly body: SchemaView | undefined
  /** Every method the path answers (a wrong method is one of the others). */
  readonly methods: ReadonlyArray<string>
}

const resolve = (document: Record<string, unknown>, schema: unknown, depth = 0): SchemaView => {
  if (!isObject(schema) || depth > 8) return {}
  if (typeof schema.$ref === "string") {
    const target = schema.$ref.replace(/^#\//, "").split("/").reduce<unknown>((at, key) => isObject(at) ? at[key] : undefined, document)
    return resolve(document, target, depth + 1)
  }
  const properties = isObject(schema.properties)
    ? Object.fromEntries(Object.entries(schema.properties).map(([key, value]) => [key, resolve(document, value, depth + 1)]))
    : undefined
  const anyOf = Array.isArray(schema.anyOf) ? schema.anyOf.map((member) => resolve(document, member, depth + 1)) : undefined
  return {
    ...(typeof schema.type === "string" ? { type: schema.type } : {}),
    ...(Array.isArray(schema.enum) ? { enum: schema.enum } : {}),
    ...(properties === undefined ? {} : { properties }),
    ...(Array.isArray(schema.required) ? { required: schema.required.filter((r): r is string => typeof r === "string") } : {}),
    ...(typeof schema.pattern === "string" ? { pattern: schema.pattern } : {}),
    ...(anyOf === undefined ? {} : { anyOf })
  }
}

const routesOf = (document: Record<string, unknown>): ReadonlyArray<Route> => {
  const paths = isObject(document.paths) ? document.paths : {}
  return Object.entries(paths).flatMap(([path, item]) => {
    if (!isObject(item)) return []
    const methods = Object.keys(item).filter((m) => ["get", "post", "put", "patch", "delete"].includes(m)).map((m) => m.toUpperCase())
    return methods.map((method): Route => {
      const operation = item[method.toLowerCase()]
      const op = isObject(operation) ? operation : {}
      const parameters = (Array.isArray(op.parameters) ? op.parameters : []).flatMap((p): Array<Parameter> =>
        isObject(p) && typeof p.name === "string" && (p.in === "path" || p.in === "query" || p.in === "header")
          ? [{ name: p.name, in: p.in, schema: resolve(document, p.schema) }]
          : []
      )
      const content = isObject(op.requestBody) && isObject(op.requestBody.content) ? op.requestBody.content["application/json"] : undefined
      const body = isObject(content) && content.schema !== undefined ? resolve(document, content.schema) : undefined
      return { method, path, parameters, body, methods }
    })
  })
}

/** Routes served beside the document, fuzzed when the server has them. */
const undocumented: ReadonlyArray<Route> = [
  { method: "POST", path: "/mcp", parameters: [], body: { type: "object", required: ["jsonrpc", "method"], properties: { jsonrpc: { type: "string", enum: ["2.0"] }, method: { type: "string" } } }, methods: ["POST", "GET", "DELETE"] }
]

// --- Malformed requests -----------------------------------------------------------------------

/** A value of the schema's type, for the fields that are not the one made wrong. */
const sample = (schema: SchemaView): Json => {
  if (schema.enum !== undefined && schema.enum.length > 0) return schema.enum[0] as Json
  if (schema.anyOf !== undefined && schema.anyOf.length > 0) return sample(schema.anyOf[0]!)
  switch (schema.type) {
    case "string":
      return "fuzz"
    case "integer":
    case "number":
      return 1
    case "boolean":
      return true
    case "array":
      return []
    case "object":
      return Object.fromEntries(Object.entries(schema.properties ?? {}).map(([key, value]) => [key, sample(value)]))
    default:
      return "fuzz"
  }
}

/** A value that is certainly not of `schema`'s type. */
const wrongFor = (random: Random, schema: SchemaView): Json | undefined => {
  switch (schema.type) {
    case "string":
      return pick(random, [12345, true, [], { nested: "object" }, null])
    case "integer":
    case "number":
      return pick(random, ["twelve", true, [], {}, null, "1"])
    case "boolean":
      return pick(random, ["yes", 1, [], null])
    case "array":
      return pick(random, ["list", 3, { 0: "a" }, null])
    case "object":
      return pick(random, ["object", 7, [1, 2], null])
    default:
      return schema.enum !== undefined ? `not-one-of-${junk(random, 6)}` : undefined
  }
}

const badJsonTexts = ["{", "{\"agent\":", "nul", "[1,2", "{'single': 'quotes'}", "{\"a\":1}}", "\u0000\u0001", "{\"a\":\"\\uZZZZ\"}", "\ufeff{]", "NaN", "{\"a\" 1}"]
const pathJunk = (random: Random) =>
  pick(random, [
    `does-not-exist-${junk(random, 4)}`.replace(/[/?#%]/g, "x"),
    "%ZZ",
    "%E0%A4%A",
    "..%2F..%2Fetc%2Fpasswd",
    "x".repeat(2048),
    encodeURIComponent("💥 ünïcödé"),
    "%00",
    "run_00000000000000000000000000"
  ])
// Not "": node:http then sends its own Host.
const badHosts = ["evil.example", "evil.example:80", "localhost:1", "127.0.0.1.nip.io", "a b", "[::1"]
const inspectorPrefixes = ["/agents", "/conversations", "/runs", "/approvals", "/schedules", "/playbooks"]

interface Case {
  readonly kind: string
  readonly request: RawRequest
}

const fillPath = (route: Route, values: Record<string, string> = {}) =>
  route.path.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? `missing-${name}`)

/** A request for `route` with one definite flaw the route checks. */
const malformed = (random: Random, route: Route, known: Record<string, string>): Case => {
  const json = { "content-type": "application/json" }
  const validBody = route.body === undefined ? undefined : JSON.stringify(sample(route.body))
  const pathParams = route.parameters.filter((p) => p.in === "path")
  const checkedQuery = route.parameters.filter((p) => p.in === "query" && (p.schema.type === "integer" || p.schema.type === "number" || p.schema.enum !== undefined || p.schema.anyOf !== undefined))
  const path = fillPath(route, known)
  const flaws: Array<() => Case> = [
    () => ({ kind: "bad host", request: { method: route.method, path, headers: { ...json, host: pick(random, badHosts) }, body: validBody ?? "" } }),
    () => ({
      kind: "foreign origin",
      request: { method: route.method, path, headers: { ...json, origin: pick(random, ["http://evil.example", "null", "https://attacker.test:8443"]), "sec-fetch-site": "cross-site" }, body: validBody ?? "" }
    }),
    () => ({ kind: "huge body", request: { method: route.method, path, headers: json, body: "x".repeat(bodyLimit + 1 + Math.floor(random() * 4 * bodyLimit)) } }),
    () => ({ kind: "huge header", request: { method: route.method, path, headers: { ...json, "x-padding": "p".repeat(20_000 + Math.floor(random() * 20_000)) } } }),
    () => {
      const method = pick(random, ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "FUZZ"].filter((m) => !route.methods.includes(m)))
      return { kind: "bad method", request: { method, path, headers: json, ...(method === "GET" || method === "OPTIONS" ? {} : { body: validBody ?? "{}" }) } }
    }
  ]
  if (pathParams.length > 0) {
    flaws.push(() => {
      const target = pick(random, pathParams)
      return { kind: "bad path param", request: { method: route.method, path: fillPath(route, { ...known, [target.name]: pathJunk(random) }), headers: json, body: validBody ?? "" } }
    })
  }
  if (checkedQuery.length > 0) {
    flaws.push(() => {
      const target = pick(random, checkedQuery)
      const isNumber = target.schema.type === "integer" || target.schema.type === "number"
      const value = isNumber ? pick(random, ["abc", "12abc", "1.5.2", "∞", "0x1G"]) : `bogus-${junk(random, 5)}`
      const query = random() < 0.3
        ? `${encodeURIComponent(target.name)}=${encodeURIComponent(value)}&${encodeURIComponent(target.name)}=${encodeURIComponent(value)}x`
        : `${encodeURIComponent(target.name)}=${encodeURIComponent(value)}`
      return { kind: "bad query param", request: { method: route.method, path: `${path}?${query}`, headers: json } }
    })
  }
  if (route.body !== undefined) {
    const body = route.body
    flaws.push(() => ({
      kind: "bad JSON",
      request: { method: route.method, path, headers: json, ...(random() < 0.25 ? { chunks: [...pick(random, badJsonTexts)] } : { body: pick(random, badJsonTexts) }) }
    }))
    flaws.push(() => {
      const required = (body.required ?? []).filter((name) => body.properties?.[name] !== undefined)
      if (required.length === 0 || random() < 0.3) {
        return { kind: "wrong type", request: { method: route.method, path, headers: json, body: JSON.stringify(pick(random, [[], 42, "text", null, true, [{}]])) } }
      }
      const name = pick(random, required)
      const fields = isObject(sample(body)) ? { ...(sample(body) as Record<string, Json>) } : {}
      const wrong = wrongFor(random, body.properties?.[name] ?? {})
      if (wrong === undefined || random() < 0.3) delete fields[name]
      else fields[name] = wrong
      return { kind: "wrong type", request: { method: route.method, path, headers: json, body: JSON.stringify(fields) } }
    })
    flaws.push(() => ({
      kind: "wrong content type",
      request: { method: route.method, path, headers: { "content-type": pick(random, ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data", "application/xml"]) }, body: pick(random, ["a=1&b=2", "<x/>", "plain words", "--boundary--"]) }
    }))
  }
  return pick(random, flaws)()
}

/** A request for no route at all. */
const strayPath = (random: Random): Case => {
  const path = pick(random, [
    `/api/${junk(random, 8).replace(/[?#%/\\]/g, "z")}`,
    `/zz${junk(random, 6).replace(/[?#%/\\]/g, "z")}`,
    "/api/runs/../../etc/passwd",
    "/api/%",
    `/v0/${encodeURIComponent(junk(random, 5))}`,
    `/${"a".repeat(20_000)}`,
    "/api//runs",
    "/.env",
    `${pick(random, ["/api/runs", "/api/events"])}/${encodeURIComponent(junk(random, 5))}/extra/segments`
  ])
  expect(inspectorPrefixes.some((prefix) => path === prefix || path.startsWith(`${prefix}/`))).toBe(false)
  return { kind: "bad path", request: { method: pick(random, ["GET", "POST", "DELETE"]), path, headers: { "content-type": "application/json" }, body: "{}" } }
}

// --- The test ---------------------------------------------------------------------------------

const project = {
  "agents/echo/agent.ts": agentFile(),
  "playbooks/tickets.ts": `import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import echo from "../agents/echo/agent.js"
export default definePlaybook({ on: webhook("tickets", Schema.Struct({ id: Schema.String })), agent: echo, message: (t) => t.id })
`,
  "foundry.config.ts": `import { defineConfig } from "foundry"\nexport default defineConfig({ server: { bodyLimit: ${bodyLimit} } })\n`
}

const stackTrace = /\n\s+at .+:\d+:\d+|\.ts:\d+:\d+/

describe("fuzzing the HTTP API", () => {
  it.scopedLive(`at least ${minimumRequests} malformed requests across every route are all answered 4xx, and the store stays whole`, () =>
    Effect.gen(function*() {
      const server = yield* startServer(yield* tempProject(project), { model: Scripted.make(() => ({ text: "ok" })) })
      // Real rows first, so that there is something to leave half-written.
      const created = (yield* http(`${server.url}/api/runs`, { body: { agent: "echo", message: "before the fuzz" } })).json as { runId: string; conversationId: string }
      yield* waitForRun(server.url, created.runId)
      expect((yield* http(`${server.url}/hooks/tickets`, { body: { id: "t-0" }, headers: { "x-event-id": "e-0" } })).status).toBe(202)
      const document = (yield* http(`${server.url}/api/openapi.json`)).json
      expect(isObject(document)).toBe(true)
      const documented = routesOf(isObject(document) ? document : {})
      const present = yield* Effect.filter(undocumented, (route) =>
        Effect.map(rawRequest(server.url, { method: route.method, path: route.path, headers: { "content-type": "application/json" }, body: "{" }), (answer) =>
          answer._tag === "response" && answer.status !== 404))
      const routes = [...documented, ...present]
      // Every documented route is here, including the groups added after this test was written.
      expect(routes.map((r) => `${r.method} ${r.path}`)).toEqual(expect.arrayContaining(["POST /api/runs", "GET /api/runs/{runId}", "POST /hooks/{name}", "GET /health"]))

      // Real ids for the path parameters that are not the flaw: a flaw elsewhere must be the reason.
      const known = { runId: created.runId, conversationId: created.conversationId, name: "tickets" }
      const random = prng(seed)
      const cases: Array<Case & { readonly route: string }> = []
      for (const route of routes) {
        for (let i = 0; i < requestsPerRoute; i++) cases.push({ ...malformed(random, route, known), route: `${route.method} ${route.path}` })
      }
      for (let i = 0; i < 120; i++) cases.push({ ...strayPath(random), route: "(no route)" })
      expect(cases.length).toBeGreaterThanOrEqual(minimumRequests)

      const runsBefore = ((yield* http(`${server.url}/api/runs?limit=1000`)).json as ReadonlyArray<unknown>).length
      const answers = yield* Effect.forEach(cases, (c) =>
        rawRequest(server.url, c.request).pipe(
          Effect.timeoutTo({ duration: "15 seconds", onTimeout: (): RawAnswer => ({ _tag: "reset", code: "no answer in 15 s" }), onSuccess: (a) => a }),
          Effect.map((answer) => ({ c, answer }))
        ), { concurrency: 8 })
      const wrong = answers.flatMap(({ answer, c }) => {
        const problem = answer._tag === "reset"
          ? `reset (${answer.code})`
          : answer.status < 400 || answer.status > 499
          ? `status ${answer.status}: ${answer.text.slice(0, 200)}`
          : stackTrace.test(answer.text)
          ? `a stack trace: ${answer.text.slice(0, 200)}`
          : undefined
        return problem === undefined ? [] : [`${c.route} [${c.kind}] ${c.request.method} ${c.request.path.slice(0, 80)}: ${problem}`]
      })
      expect(wrong, `seed ${seed}: ${wrong.length} of ${cases.length} answered wrong`).toEqual([])
      const kinds = new Set(cases.map((c) => c.kind))
      expect([...kinds].sort()).toEqual(
        ["bad JSON", "bad host", "bad method", "bad path", "bad path param", "bad query param", "foreign origin", "huge body", "huge header", "wrong content type", "wrong type"]
      )

      // Still healthy, and nothing was started or half-written.
      expect((yield* http(`${server.url}/health`)).status).toBe(200)
      expect(((yield* http(`${server.url}/api/runs?limit=1000`)).json as ReadonlyArray<unknown>).length).toBe(runsBefore)
      const db = new Database(server.storeFile, { readonly: true })
      const count = (sql: string) => Number((db.prepare(sql).get() as { n: number }).n)
      const partial = {
        runsWithoutConversation: count(`SELECT COUNT(*) AS n FROM foundry_runs r LEFT JOIN foundry_conversations c ON c.id = r.conversation_id WHERE c.id IS NULL`),
        conversationsWithoutInstance: count(
          `SELECT COUNT(*) AS n FROM foundry_conversations c LEFT JOIN foundry_instances i ON i.agent = c.agent AND i.id = c.instance_id WHERE i.id IS NULL`
        ),
        messagesWithoutConversation: count(`SELECT COUNT(*) AS n FROM foundry_messages m LEFT JOIN foundry_conversations c ON c.id = m.conversation_id WHERE c.id IS NULL`),
        eventsOfMissingRuns: count(`SELECT COUNT(*) AS n FROM foundry_events e LEFT JOIN foundry_runs r ON r.id = e.run_id WHERE e.run_id <> '' AND r.id IS NULL`),
        deliveriesLeftProcessing: count(`SELECT COUNT(*) AS n FROM foundry_deliveries WHERE status <> 'done'`),
        keyedRunsWithoutFingerprint: count(`SELECT COUNT(*) AS n FROM foundry_runs WHERE idempotency_key IS NOT NULL AND idempotency_fingerprint IS NULL`)
      }
      const rows = count(`SELECT COUNT(*) AS n FROM foundry_runs`)
      db.close()
      expect(partial).toEqual({
        runsWithoutConversation: 0,
        conversationsWithoutInstance: 0,
        messagesWithoutConversation: 0,
        eventsOfMissingRuns: 0,
        deliveriesLeftProcessing: 0,
        keyedRunsWithoutFingerprint: 0
      })
      expect(rows).toBe(runsBefore)
    }), 240_000)
})
