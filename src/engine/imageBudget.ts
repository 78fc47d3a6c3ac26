/**
 * The images one model request carries, kept within the project's `images` budget: tool results
 * (screenshots) and `view_image` put images in the transcript, and a long conversation carries
 * every one of them into each request, until the provider refuses the whole request (OpenAI: 50 MB
 * a request, and a count of images) and the conversation is stuck. Past the budget, the oldest
 * images are left out (the newest are what the model is working from), each result that lost some
 * saying so, so that the model knows it once saw more.
 */
import type { ChatMessage, ModelRequest } from "../models/Model.js"

/** The project config's `images`. */
export interface ImageBudget {
  /** The most bytes of images one request carries, as sent (base64 text). */
  readonly maxBytesPerRequest: number
  /** The most images one request carries. */
  readonly maxPerRequest: number
}

/** Why images were left out: the limit the next one would have gone past. */
type Limit = "maxPerRequest" | "maxBytesPerRequest"

const limitText = (limit: Limit, budget: ImageBudget): string =>
  limit === "maxPerRequest"
    ? `images.maxPerRequest (${budget.maxPerRequest} images)`
    : `images.maxBytesPerRequest (${budget.maxBytesPerRequest} bytes)`

/** The note a result that lost `left` of its `total` images gets. */
const leftOutNote = (left: number, total: number, limit: Limit, budget: ImageBudget): string => {
  const which = left === total ? (total === 1 ? "the image" : `the ${total} images`) : `${left} of the ${total} images`
  return `(${which} this tool showed ${left === 1 ? "is" : "are"} left out of this request, to keep it within ${
    limitText(limit, budget)
  } of foundry.config.ts; newer images are shown)`
}

/**
 * `request` with its images within `budget`: counted from the newest tool result back, each
 * result's images in order, every image from the first that does not fit on is left out.
 * The request itself when everything fits (nearly every turn).
 */
export const withinImageBudget = (request: ModelRequest, budget: ImageBudget): ModelRequest => {
  let count = 0
  let bytes = 0
  let over: Limit | undefined
  // For each message that loses images: how many it keeps.
  const kept = new Map<number, number>()
  for (let index = request.messages.length - 1; index >= 0; index--) {
    const message = request.messages[index]
    if (message === undefined || message._tag !== "tool" || message.images === undefined || message.images.length === 0) continue
    if (over !== undefined) {
      kept.set(index, 0)
      continue
    }
    let keeps = 0
    for (const image of message.images) {
      if (count + 1 > budget.maxPerRequest) over = "maxPerRequest"
      else if (bytes + image.data.length > budget.maxBytesPerRequest) over = "maxBytesPerRequest"
      if (over !== undefined) break
      count += 1
      bytes += image.data.length
      keeps += 1
    }
    if (keeps < message.images.length) kept.set(index, keeps)
  }
  if (over === undefined || kept.size === 0) return request
  const limit = over
  const messages = request.messages.map((message, index): ChatMessage => {
    const keeps = kept.get(index)
    if (keeps === undefined || message._tag !== "tool" || message.images === undefined) return message
    const total = message.images.length
    const content = `${message.content}\n${leftOutNote(total - keeps, total, limit, budget)}`
    return keeps === 0
      ? { _tag: "tool", toolCallId: message.toolCallId, name: message.name, content }
      : { _tag: "tool", toolCallId: message.toolCallId, name: message.name, content, images: message.images.slice(0, keeps) }
  })
  return { ...request, messages }
}
