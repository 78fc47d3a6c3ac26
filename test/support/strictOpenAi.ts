/**
 * A strict fake of OpenAI's Chat Completions API, for tests that talk to it through the real
 * `openai` SDK (or through `src/models/openai.ts`, which wraps it).
 *
 * Why strict: the scripted model accepts any transcript, so a bug that produces a transcript
 * OpenAI rejects (a tool call without its result, a result in the wrong place, an empty
 * message, an unknown tool) passes every test and fails only in production, with a 400 on every
 * later turn of the conversation. This server checks each request the way OpenAI does and
 * answers with OpenAI's error shape and, as far as we know them, OpenAI's own messages.
 *
 * What it serves, on `127.0.0.1` and a free port, for the lifetime of the enclosing `Scope`:
 *
 * - `POST /v1/chat/completions`, streamed (SSE chunks exactly as OpenAI sends them: a first
 *   chunk with `role: "assistant"`, text in several `content` deltas, each tool call in
 *   fragments, a `finish_reason` chunk, a `choices: []` usage chunk when
 *   `stream_options.include_usage` is set, then `data: [DONE]`) or not (a `chat.completion`).
 * - `GET /v1/models`, listing the configured models.
 * - Anything else: OpenAI's 404 `Invalid URL (METHOD /path)`.
 *
 * Each completion request is answered, in this order, by:
 * 1. a 401 when there is no `Authorization: Bearer …` header;
 * 2. a 400 when the body breaks a rule of `parseChatRequest` (see `validateChatRequest`);
 * 3. the context-length 400 when the request's estimated tokens (`estimateTokens`) exceed the
 *    model's entry in `contextWindows`;
 * 4. otherwise the next scripted step (`replies`, then `push`ed ones, then `otherwise`): a text
 *    reply, tool calls, an error (429, 500, 400, …), or a function of the request returning one.
 *
 * Rejected requests (1–3) consume no scripted step: the model never saw them.
 */
export * from "./strictOpenAi/replies.js"
export * from "./strictOpenAi/request.js"
export * from "./strictOpenAi/server.js"
export type { StrictOpenAi, StrictOpenAiOptions } from "./strictOpenAi/state.js"
export { estimateTokens } from "./strictOpenAi/tokens.js"
export { incompleteSchema } from "./strictOpenAi/tools.js"
export type * from "./strictOpenAi/wire.js"
