/**
 * The images one model request carries, kept within the project's `images` budget: tool results
 * (screenshots) and `view_image` put images in the transcript, and a long conversation carries
 * every one of them into each request, until the provider refuses the whole request (OpenAI: 50 MB
 * a request, and a count of images) and the conversation is stuck. Past the budget, the older
 * images that no longer fit are left out (the newest are what the model is working from), each
 * result that lost some saying so, so that the model knows it once saw more.
 */
import type { ChatMessage, ModelRequest } from "../models/Model.js"

/** The project config's `images`. */
export interface ImageBudget {
  /** The most bytes of images one request carries, as sent (base64 text). */
  readonly maxBytesPerRequest: number
  /** The most images one request carries. */
  readonly maxPerRequest: number
}

/** Why an image was left out: the limit it would have gone past. */
type Limit = "maxPerRequest" | "maxBytesPerRequest"

const limits: ReadonlyArray<Limit> = ["maxPerRequest", "maxBytesPerRequest"]

const limitText = (limit: Limit, budget: ImageBudget): string =>
  limit === "maxPerRequest"
    ? `images.maxPerRequest (${budget.maxPerRequest} images)`
    : `images.maxBytesPerRequest (${budget.maxBytesPerRequest} bytes)`

/** What one result lost: the positions (from 0) of its images left out, each with the limit it would have gone past. */
type Losses = ReadonlyArray<{ readonly position: number; readonly limit: Limit }>

/** `1`, `1 and 3`, `1, 2 and 4`. */
const listed = (numbers: ReadonlyArray<number>): string =>
  numbers.length === 1 ? String(numbers[0]) : `${numbers.slice(0, -1).join(", ")} and ${numbers[numbers.length - 1]}`

/** The note a result of `total` images that lost `losses` gets: which it lost, when not all, and the limits they would have gone past. */
const leftOutNote = (losses: Losses, total: number, budget: ImageBudget): string => {
  const left = losses.length
  const which = left === total
    ? total === 1 ? "the image" : `the ${total} images`
    : `${left === 1 ? "image" : "images"} ${listed(losses.map((loss) => loss.position + 1))} of the ${total} images`
  const within = limits.filter((limit) => losses.some((loss) => loss.limit === limit)).map((limit) => limitText(limit, budget)).join(" and ")
  return `(${which} this tool showed ${left === 1 ? "is" : "are"} left out of this request, to keep it within ${within} of foundry.config.ts; newer images are shown)`
}

/**
 * `request` with its images within `budget`: counted from the newest tool result back, each
 * result's images in order, every image that still fits is kept and every one that does not is
 * left out (an older, smaller image may fit where a newer, larger one did not).
 * The request itself when everything fits (nearly every turn).
 */
export const withinImageBudget = (request: ModelRequest, budget: ImageBudget): ModelRequest => {
  let count = 0
  let bytes = 0
  // For each message that loses images: which, and why.
  const lost = new Map<number, Losses>()
  for (let index = request.messages.length - 1; index >= 0; index--) {
    const message = request.messages[index]
    if (message === undefined || message._tag !== "tool" || message.images === undefined) continue
    const losses: Array<Losses[number]> = []
    for (const [position, image] of message.images.entries()) {
      if (count + 1 > budget.maxPerRequest) losses.push({ position, limit: "maxPerRequest" })
      else if (bytes + image.data.length > budget.maxBytesPerRequest) losses.push({ position, limit: "maxBytesPerRequest" })
      else {
        count += 1
        bytes += image.data.length
      }
    }
    if (losses.length > 0) lost.set(index, losses)
  }
  if (lost.size === 0) return request
  const messages = request.messages.map((message, index): ChatMessage => {
    const losses = lost.get(index)
    if (losses === undefined || message._tag !== "tool" || message.images === undefined) return message
    const content = `${message.content}\n${leftOutNote(losses, message.images.length, budget)}`
    const images = message.images.filter((_, position) => !losses.some((loss) => loss.position === position))
    return images.length === 0
      ? { _tag: "tool", toolCallId: message.toolCallId, name: message.name, content }
      : { _tag: "tool", toolCallId: message.toolCallId, name: message.name, content, images }
  })
  return { ...request, messages }
}
