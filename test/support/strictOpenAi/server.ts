/** The strict fake's HTTP server: routes, the order of its checks, and the script's next reply. */
import { Effect, Either, type Scope } from "effect"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import { close, listen } from "../loopback.js"
import type { Reply } from "./replies.js"
import { compatibleRefusal } from "./compatible.js"
import { parseChatRequest } from "./request.js"
import { complete, sendChunks, sendCompletion, sendError, sendJson, sendStream } from "./responses.js"
import type { State, StrictOpenAi, StrictOpenAiOptions } from "./state.js"
import { estimateTokens } from "./tokens.js"
import { contextLengthError } from "./replies.js"
import type { ChatRequest, OpenAiError } from "./wire.js"

const scriptError = (message: string, code: string): OpenAiError => ({
  message: `Strict fake OpenAI: ${message}`,
  type: "invalid_request_error",
  param: null,
  code
})

/** The next scripted reply for an accepted request. */
const nextReply = (state: State, request: ChatRequest): Reply => {
  const index = state.answered++
  const step = state.script.shift()
  const resolve = step ?? state.options.otherwise
  if (resolve === undefined) {
    return {
      _tag: "Error",
      status: 400,
      error: scriptError(`no reply scripted for completion request ${index}.`, "fake_script_exhausted")
    }
  }
  if (typeof resolve !== "function") return resolve
  try {
    return resolve(request, index)
  } catch (cause) {
    // A throwing reply function is a bug in the test; report it through the response.
    const detail = cause instanceof Error ? cause.message : String(cause)
    return { _tag: "Error", status: 400, error: scriptError(`the reply function threw: ${detail}`, "fake_script_error") }
  }
}

const handleCompletion = (state: State, res: ServerResponse, body: unknown, requestId: string) => {
  const parsed = parseChatRequest(body)
  if (Either.isLeft(parsed)) {
    state.rejected.push(parsed.left)
    return sendError(res, 400, parsed.left, requestId)
  }
  const request = parsed.right
  const refused = compatibleRefusal(state.options, request)
  if (refused !== undefined) {
    state.rejected.push(refused)
    return sendError(res, 400, refused, requestId)
  }
  const window = state.options.contextWindows?.[request.model]
  const tokens = estimateTokens(request)
  if (window !== undefined && tokens > window) {
    return sendError(res, 400, contextLengthError(window, tokens), requestId)
  }
  const reply = nextReply(state, request)
  if (reply._tag === "Error") return sendError(res, reply.status, reply.error, requestId, reply.headers)
  if (reply._tag === "Chunks") return sendChunks(res, reply.chunks, requestId)
  const completion = complete(state, request, reply)
  if (request.stream) return sendStream(res, request, completion, state.options.fragmentSize ?? 4, requestId)
  return sendCompletion(res, request, completion, requestId)
}

const listModels = (state: State, res: ServerResponse, requestId: string) => {
  const names = new Set([...(state.options.models ?? ["gpt-4.1-mini"]), ...Object.keys(state.options.contextWindows ?? {})])
  sendJson(res, 200, {
    object: "list",
    data: [...names].map((id) => ({ id, object: "model", created: 1_700_000_000, owned_by: "system" }))
  }, requestId)
}

const missingKey: OpenAiError = {
  message: "You didn't provide an API key. You need to provide your API key in an Authorization header using " +
    "Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're " +
    "accessing the API from your browser and are prompted for a username and password. You can obtain an API key " +
    "from https://platform.openai.com/account/api-keys.",
  type: "invalid_request_error",
  param: null,
  code: null
}

const unparsableBody: OpenAiError = {
  message: "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP " +
    "library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON. If you have " +
    "trouble figuring out how to fix this, please contact us through our help center at help.openai.com.)",
  type: "invalid_request_error",
  param: null,
  code: null
}

const handle = (state: State, req: IncomingMessage, res: ServerResponse, raw: string) => {
  const requestId = `req_fake${state.requests.length + 1}`
  const path = (req.url ?? "/").split("?")[0]
  const route = `${req.method} ${path}`
  let body: unknown = undefined
  if (req.method === "POST") {
    try {
      body = JSON.parse(raw)
      state.requests.push(body)
    } catch {
      state.requests.push(raw)
      return sendError(res, 400, unparsableBody, requestId)
    }
  }
  if (route !== "POST /v1/chat/completions" && route !== "GET /v1/models") {
    return sendError(res, 404, {
      message: `Invalid URL (${route})`,
      type: "invalid_request_error",
      param: null,
      code: null
    }, requestId)
  }
  if (!/^Bearer \S+/.test(req.headers.authorization ?? "")) return sendError(res, 401, missingKey, requestId)
  if (route === "GET /v1/models") return listModels(state, res, requestId)
  return handleCompletion(state, res, body, requestId)
}


/** Starts the strict fake; it stops when the scope closes. */
export const strictOpenAi = (options: StrictOpenAiOptions = {}): Effect.Effect<StrictOpenAi, never, Scope.Scope> =>
  Effect.gen(function*() {
    const state: State = {
      options,
      script: [...(options.replies ?? [])],
      requests: [],
      rejected: [],
      answered: 0,
      nextToolCallId: 0,
      nextCompletionId: 0
    }
    const server = yield* Effect.acquireRelease(
      Effect.sync(() =>
        createServer((req, res) => {
          let raw = ""
          req.setEncoding("utf8")
          req.on("data", (piece: string) => {
            raw += piece
          })
          req.on("end", () => handle(state, req, res, raw))
        })
      ),
      close
    )
    const port = yield* Effect.orDie(listen(server))
    const fake: StrictOpenAi = {
      url: `http://127.0.0.1:${port}/v1`,
      requests: state.requests,
      rejected: state.rejected,
      push: (...steps) => {
        state.script.push(...steps)
      }
    }
    return fake
  })
