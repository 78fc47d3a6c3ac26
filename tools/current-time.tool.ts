import { Clock, Effect, Schema } from "effect"
import { defineTool } from "foundry"

export default defineTool({
  description: "Tell the current date and time (UTC)",
  input: Schema.Struct({}),
  output: Schema.Struct({ now: Schema.String }),
  run: () => Effect.map(Clock.currentTimeMillis, (millis) => ({ now: new Date(millis).toISOString() }))
})
