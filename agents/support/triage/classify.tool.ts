import { Effect, Schema } from "effect"
import { defineTool } from "foundry"

const urgentWords = ["down", "outage", "urgent", "broken", "refund", "angry", "lost"]

export default defineTool({
  description: "Classify a support ticket's priority from its text",
  input: Schema.Struct({ ticket: Schema.String }),
  output: Schema.Struct({ priority: Schema.Number, reason: Schema.String }),
  run: ({ ticket }) =>
    Effect.sync(() => {
      const hits = urgentWords.filter((word) => ticket.toLowerCase().includes(word))
      return {
        priority: Math.min(1 + hits.length * 2, 5),
        reason: hits.length === 0 ? "no urgent words" : `mentions ${hits.join(", ")}`
      }
    })
})
