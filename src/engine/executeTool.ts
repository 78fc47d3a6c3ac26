/**
 * One tool call: arguments decoded with the tool's input schema, `run` executed with the
 * application's services under a time limit, the result encoded with its output schema. Whatever
 * goes wrong becomes a readable result for the model, never a crash of the run.
 */
import { Cause, Context, Duration, Effect, Either, Exit, Fiber, Option, type ParseResult, Runtime, Schema } from "effect"
import type { CompiledTool } from "../compiler/CompiledApp.js"
import { AnswerWithImages } from "../definitions/AnswerWithImages.js"
import { durationText } from "../definitions/configFields.js"
import type { ToolRunContext } from "../definitions/defineTool.js"
import { formatIssues, readableIssues } from "../definitions/readableIssues.js"
import type { ImageContent, ToolCall } from "../models/Model.js"
import { entrySpan } from "./entrySpan.js"

/** What a tool call came to. `content` is what the model is shown. */
export type ToolOutcome =
  | { readonly _tag: "Succeeded"; readonly input: unknown; readonly output: unknown; readonly content: string; readonly images?: ReadonlyArray<ImageContent> }
  | { readonly _tag: "Failed"; readonly input: unknown; readonly error: string; readonly content: string }

const failed = (input: unknown, error: string): ToolOutcome => ({ _tag: "Failed", input, error, content: `Error: ${error}` })

/** Whether `tool` keeps fields of its input or output out of events. */
const redacts = (tool: CompiledTool): boolean => tool.definition.redact.length > 0

/**
 * A failure of `tool` whose `detail` may quote a value of its input or output: the model is told
 * it (it wrote the arguments, and reads the output), but events of a tool that redacts fields get
 * `withoutValues`, since the value quoted may be one that the tool keeps out of them.
 */
const failedQuoting = (tool: CompiledTool, input: unknown, detail: string, withoutValues: string): ToolOutcome =>
  redacts(tool) ? { _tag: "Failed", input, error: withoutValues, content: `Error: ${detail}` } : failed(input, detail)

/** Why events of a tool say less than its model is told. */
const leftOut = (tool: CompiledTool, what: string) => `${what} is left out of events: it may quote a value, and ${tool.name} redacts fields`

/** A failure to decode or encode with `tool`'s schema: which fields, and (as `failedQuoting` allows) what is wrong with them. */
const schemaFailed = (tool: CompiledTool, input: unknown, lead: string, error: ParseResult.ParseError, root: string): ToolOutcome => {
  const issues = readableIssues(error, { root })
  const paths = [...new Set(issues.map((issue) => issue.path))].join(", ")
  return failedQuoting(tool, input, `${lead}:\n${formatIssues(issues)}`, `${lead}, at ${paths} (${leftOut(tool, "what is wrong")})`)
}

const parseArguments = (text: string): { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: string } => {
  try {
    return { ok: true, value: text.trim() === "" ? {} : JSON.parse(text) }
  } catch (error) {
    return { ok: false, error: error instanceof Error ? error.message : String(error) }
  }
}

const describeFailure = (cause: Cause.Cause<unknown>): string => {
  const failure = Cause.failureOption(cause)
  if (failure._tag === "Some") {
    const error = failure.value
    if (typeof error === "object" && error !== null && "message" in error && typeof error.message === "string" && error.message !== "") {
      return "_tag" in error && typeof error._tag === "string" ? `${error._tag}: ${error.message}` : error.message
    }
    return typeof error === "object" && error !== null && "_tag" in error ? String(error._tag) : valueText(error)
  }
  const defect = Cause.squash(cause)
  return defect instanceof Error ? defect.message : valueText(defect)
}

/** A failure that is no error (`Effect.fail({ code: 42 })`, `throw "no"`) as the model can read it: as JSON, not "[object Object]". */
const valueText = (value: unknown): string =>
  typeof value !== "object" || value === null ? String(value) : Either.getOrElse(contentOf(value), () => String(value))

/** A call whose arguments decoded: ready to run (or to ask a person about). */
export interface DecodedCall {
  readonly tool: CompiledTool
  readonly input: unknown
  readonly rawInput: unknown
}

/** Decodes a call's arguments with its tool's input schema; a problem becomes a failed outcome. */
export const decodeCall = Effect.fnUntraced(function*(
  tool: CompiledTool | undefined,
  call: ToolCall,
  available: ReadonlyArray<string>
) {
  const parsed = parseArguments(call.arguments)
  const rawInput = parsed.ok ? parsed.value : call.arguments
  if (tool === undefined) {
    return Either.left(failed(rawInput, `there is no tool named "${call.name}"; the tools are: ${available.join(", ") || "(none)"}`))
  }
  if (!parsed.ok) {
    // The parser's message quotes the text it stopped in (Node's, since V8 11).
    const notJson = `the arguments for ${tool.name} are not valid JSON`
    return Either.left(failedQuoting(tool, rawInput, `${notJson} (${parsed.error})`, `${notJson} (${leftOut(tool, "the parser's message")})`))
  }
  // Every failing field at once, so that the model can fix them all in its next call.
  const input = yield* Schema.decodeUnknown(tool.definition.input)(parsed.value, { errors: "all" }).pipe(Effect.either)
  if (input._tag === "Left") return Either.left(schemaFailed(tool, rawInput, `invalid arguments for ${tool.name}`, input.left, "(arguments)"))
  const decoded: DecodedCall = { tool, input: input.right, rawInput }
  return Either.right(decoded)
})

/**
 * Whether the tool's approval policy asks a person before this call runs; `broke` says why a
 * policy that threw could not say (it is taken as asking: fail closed, a person decides).
 */
export const approvalPolicy = ({ input, tool }: DecodedCall): { readonly asks: boolean; readonly broke?: string } => {
  const policy = tool.definition.approval
  if (typeof policy !== "function") return { asks: policy === "always" }
  try {
    return { asks: policy(input) === true }
  } catch (error) {
    return { asks: true, broke: error instanceof Error ? error.message : String(error) }
  }
}

/** A failed outcome with this text (denied approvals, expired ones). */
export const failedOutcome = failed

/** How tool calls are run and answered: the config's limits, and what the models read. */
export interface ToolRunSettings {
  /** For tools that set no `timeout` of their own. */
  readonly timeout: Duration.DurationInput
  /** Whether every model of the run sees images: an `AnswerWithImages` shows them, else describes them. */
  readonly seesImages: boolean
}

/**
 * `content` cut to `limit` characters, with a note saying how much is missing and `why`, so that
 * one huge result cannot crowd the rest of the conversation out of the model's context window.
 */
export const truncateForModel = (content: string, limit: number, why: string): string => {
  if (content.length <= limit) return content
  // Never split a surrogate pair: half an emoji is not valid text for every provider.
  const end = limit > 0 && /[\uD800-\uDBFF]/.test(content.charAt(limit - 1)) ? limit - 1 : limit
  return `${content.slice(0, end)}\n[output truncated: ${content.length - end} of ${content.length} characters cut ${why}]`
}

/**
 * Runs a decoded call with the application's services, interrupted when it outlasts its timeout;
 * never fails (interruption aside).
 */
export const runTool = Effect.fnUntraced(function*(
  call: DecodedCall,
  context: Omit<ToolRunContext<unknown>, "idempotencyKey">,
  services: Context.Context<unknown>,
  settings: ToolRunSettings
) {
  return yield* runWithTimeout(call, context, services, settings)
}, entrySpan("engine.runTool"))

/** The longest delay a Node timer holds (about 24.8 days); a longer one fires at once. */
const longestTimer = 2 ** 31 - 1

/**
 * How `effect` ended, run with `services` added to the caller's context, or `None` when it was
 * still running after `timeout` and was interrupted. One fiber and a timer: `Effect.timeoutOption`
 * races the effect against a sleep, two fibers and about fifty more Effect operations on every
 * tool call. The fiber starts from the caller's runtime with `services` in its context: providing
 * them inside it (`Effect.mapInputContext`) sets the fiber's context and puts it back, each a copy
 * of its references, about 25 operations more per call. The timer is the event loop's, not the
 * `Clock`'s: a tool's time limit is wall-clock time; a limit longer than a timer holds is none.
 * The fiber ends in an `Exit` of its own, never failing (an unobserved failure would be logged).
 * Interrupting the caller interrupts the call and waits for it to stop, as a race would.
 */
const withinTimeout = <A, E>(effect: Effect.Effect<A, E, unknown>, services: Context.Context<unknown>, timeout: Duration.DurationInput) =>
  Effect.flatMap(Effect.runtime<never>(), (caller) => {
    // A tool of the project's own brings no services: the caller's context's entries as they are
    // (a context is never changed in place), not a copy of them.
    const context = services.unsafeMap.size === 0 ? Context.unsafeMake<unknown>(caller.context.unsafeMap) : Context.merge(caller.context, services)
    const start = Runtime.runFork(
      Runtime.make({
        context,
        fiberRefs: caller.fiberRefs,
        runtimeFlags: caller.runtimeFlags
      })
    )
    return Effect.uninterruptibleMask((restore) => {
      const fiber = start(Effect.exit(effect), { immediate: false })
      return restore(Effect.async<Option.Option<Exit.Exit<A, E>>>((resume) => {
        const millis = Duration.toMillis(Duration.decode(timeout))
        const timer = millis <= longestTimer
          ? setTimeout(() => resume(Effect.as(Fiber.interrupt(fiber), Option.none())), millis)
          : undefined
        fiber.addObserver((exit) => {
          clearTimeout(timer)
          resume(Effect.succeed(Option.some(Exit.isSuccess(exit) ? exit.value : Exit.failCause(exit.cause))))
        })
        return Effect.sync(() => clearTimeout(timer))
      })).pipe(Effect.onInterrupt(() => Fiber.interrupt(fiber)))
    })
  })

/** The call itself, under its tool's timeout (or the config's), its output encoded. */
const runWithTimeout = Effect.fnUntraced(function*(
  { input, rawInput, tool }: DecodedCall,
  context: Omit<ToolRunContext<unknown>, "idempotencyKey">,
  services: Context.Context<unknown>,
  { seesImages, timeout: defaultTimeout }: ToolRunSettings
) {
  const keyOf = tool.definition.idempotencyKey
  let idempotencyKey = `${context.runId}:${context.toolCallId}`
  if (keyOf !== undefined) {
    let key: unknown
    try {
      key = keyOf(input)
    } catch (error) {
      yield* Effect.logWarning(`tool ${tool.name}: idempotencyKey(input) threw (run ${context.runId}, call ${context.toolCallId})`, error)
      return failed(rawInput, `${tool.name} was not run: its idempotencyKey(input) threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`)
    }
    // An empty key (or none) would make every call one side effect: the first refund answering all.
    if (typeof key !== "string" || key === "") {
      const got = key === "" ? "an empty string" : typeof key === "string" ? key : `${JSON.stringify(key) ?? String(key)} (${typeof key})`
      yield* Effect.logWarning(`tool ${tool.name}: idempotencyKey(input) returned ${got}, not a key (run ${context.runId}, call ${context.toolCallId})`)
      const notRun = (what: string) => `${tool.name} was not run: its idempotencyKey(input) returned ${what}, not a non-empty string`
      // A key is made of the input: the value returned may be a redacted field's.
      return failedQuoting(tool, rawInput, notRun(got), notRun(key === "" ? got : `a value of type ${typeof key}`))
    }
    idempotencyKey = key
  }
  // The compiler checked that `services` holds every service the tool lists in `requires`. A
  // `run` that throws before returning its Effect has crashed as much as one whose Effect dies.
  const run: Effect.Effect<unknown, unknown, unknown> = Effect.suspend(() => tool.definition.run(input, { ...context, idempotencyKey }))
  const timeout = tool.definition.timeout ?? defaultTimeout
  const timed = yield* withinTimeout(run, services, timeout)
  if (Option.isNone(timed)) {
    const limit = tool.definition.timeout === undefined ? "the config's toolTimeout" : "the tool's timeout"
    // Interrupting the call stops what Effect runs, not a request the tool already sent: the model
    // is told so, since calling again (a new call id, so a new idempotency key) may do it twice.
    return failed(
      rawInput,
      `${tool.name} timed out after ${durationText(timeout)} (${limit}) and was interrupted; what it had already begun ` +
        "(a request sent) may still take effect: check before calling it again"
    )
  }
  const result = timed.value
  if (Exit.isFailure(result)) {
    // The run's own interruption never reaches here (the call is interrupted with it): this is
    // the tool's Effect interrupting itself, a failure of the call like any other.
    if (Cause.isInterruptedOnly(result.cause)) {
      return failed(rawInput, `${tool.name} failed: its Effect was interrupted before it returned a result`)
    }
    // The model reads the message; the developer needs where it crashed: a defect's stack goes to the log.
    if (Option.isNone(Cause.failureOption(result.cause))) {
      yield* Effect.logWarning(`tool ${tool.name} crashed (run ${context.runId}, call ${context.toolCallId})`, result.cause)
    }
    return failed(rawInput, `${tool.name} failed: ${describeFailure(result.cause)}`)
  }
  if (result.value instanceof AnswerWithImages) return withImages(rawInput, result.value, seesImages)
  const encoded = yield* Schema.encode(tool.definition.output)(result.value, { errors: "all" }).pipe(Effect.either)
  if (encoded._tag === "Left") {
    return schemaFailed(tool, rawInput, `${tool.name} returned a value that does not match its output schema`, encoded.left, "(output)")
  }
  const content = contentOf(encoded.right)
  if (Either.isLeft(content)) {
    return failed(
      rawInput,
      `${tool.name} returned a value that cannot be written as JSON (${content.left}): give it an output schema that encodes it ` +
        `(Schema.BigInt encodes a bigint as a string, Schema.DateFromSelf as a date...) or return plain data`
    )
  }
  const outcome: ToolOutcome = { _tag: "Succeeded", input: rawInput, output: encoded.right ?? null, content: content.right }
  return outcome
})

/**
 * An answer with images as the model is shown it: with its images when the run's models see, else
 * described. Its output, which events record, is the text: images stay out of the event log.
 */
const withImages = (input: unknown, answer: AnswerWithImages, seesImages: boolean): ToolOutcome =>
  seesImages
    ? { _tag: "Succeeded", input, output: answer.content, content: answer.content, ...(answer.images.length === 0 ? {} : { images: answer.images }) }
    : { _tag: "Succeeded", input, output: answer.withoutImages, content: answer.withoutImages }

/**
 * A tool's encoded output as the model reads it: a string as it is, anything else as JSON, and
 * nothing (a `Schema.Void` tool) said in words; `Left` says why a value has no JSON form.
 */
const contentOf = (output: unknown): Either.Either<string, string> => {
  if (typeof output === "string") return Either.right(output)
  if (output === undefined) return Either.right("(no output)")
  try {
    const json: string | undefined = JSON.stringify(output)
    return json === undefined ? Either.left(`a ${typeof output}`) : Either.right(json)
  } catch (error) {
    return Either.left(error instanceof Error ? error.message : String(error))
  }
}
