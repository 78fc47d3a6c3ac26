/**
 * The timer tools an agent opts into with `timers` (`foundry_schedule`, `foundry_schedules`,
 * `foundry_sleep`) as compiled tools: their names, inputs and JSON schemas. The engine runs them
 * (`engine/agentTimers.ts`); their definitions never run.
 */
import { Effect, Schema } from "effect"
import type { TimerToolName } from "../definitions/defineAgent.js"
import { defineTool } from "../definitions/defineTool.js"
import type { CompiledTool } from "./CompiledApp.js"

/** What `foundry_schedule` takes: a message, and one of at, in, every or cron. */
export const ScheduleInput = Schema.Struct({
  message: Schema.String,
  at: Schema.optional(Schema.String),
  in: Schema.optional(Schema.String),
  every: Schema.optional(Schema.String),
  cron: Schema.optional(Schema.String),
  timezone: Schema.optional(Schema.String)
})

/** What `foundry_schedules` takes: an action, and the timer it applies to. */
export const SchedulesInput = Schema.Struct({
  action: Schema.Literal("list", "pause", "resume", "cancel"),
  id: Schema.optional(Schema.String)
})

/** What `foundry_sleep` takes: a message, and until or for. */
export const SleepInput = Schema.Struct({
  message: Schema.String,
  until: Schema.optional(Schema.String),
  for: Schema.optional(Schema.String)
})

/** Which of the timer tools a compiled tool is. */
export type TimerTool = TimerToolName

const tool = <A, I>(builtin: TimerTool, name: string, description: string, input: Schema.Schema<A, I>, parameters: Record<string, unknown>): CompiledTool => ({
  id: `foundry/${name}`,
  name,
  file: undefined,
  builtin,
  definition: defineTool({ description, input, output: Schema.Unknown, run: () => Effect.dieMessage(`${name} is run by the engine`) }),
  spec: { name, description, parameters: { type: "object", additionalProperties: false, ...parameters } }
})

const text = { type: "string" }

/** The timer tools, as an agent that opts into them offers them to its model. */
export const timerTools: ReadonlyArray<CompiledTool> = [
  tool("schedule", "foundry_schedule", "Schedule work for yourself later: once (at an ISO time, or in a duration like \"2 hours\") or repeatedly (every a duration, or a cron expression); the message is what you will be told then", ScheduleInput, {
    properties: { message: text, at: text, in: text, every: text, cron: text, timezone: text },
    required: ["message"]
  }),
  tool("schedules", "foundry_schedules", "List, pause, resume or cancel the schedules you made", SchedulesInput, {
    properties: { action: { type: "string", enum: ["list", "pause", "resume", "cancel"] }, id: text },
    required: ["action"]
  }),
  tool("sleep", "foundry_sleep", "Pause this conversation until a time (ISO) or for a duration, then wake it with a message", SleepInput, {
    properties: { message: text, until: text, for: text },
    required: ["message"]
  })
]
