/**
 * `foundry run <agent> "<message>"`: one run from the terminal, its text streamed to standard
 * output, its tool calls to standard error, the exit code by outcome (0 completed, 1 failed,
 * suspended on an approval or cancelled by another process on the store, 130 cancelled by Ctrl-C).
 * With an OTLP endpoint set, its spans are exported before it exits.
 */
import { Effect, Layer, Option, Stream } from "effect"
import { loadProject } from "../../compiler/loadProject.js"
import { Dispatcher } from "../../dispatch/Dispatcher.js"
import { ApprovalStorage } from "../../durable/ApprovalStorage.js"
import { Store } from "../../durable/Store.js"
import { EventLog } from "../../events/EventLog.js"
import type { FoundryEvent } from "../../events/FoundryEvent.js"
import { OtlpExportLive } from "../../events/OtlpExport.js"
import { turnTextReading } from "../../events/turnText.js"
import { CliError } from "../CliError.js"
import { inCommandTerms } from "../commandTerms.js"
import { runtimeLayer } from "../ProjectRuntime.js"
import { addressOf, servingUrl } from "../servingAddress.js"
import { firstApprovalBelow } from "../../transports/approvalsBelow.js"
import { clip, style, warn } from "../terminal.js"

const write = (stream: NodeJS.WriteStream, text: string) => Effect.sync(() => stream.write(text))

const short = (value: unknown): string => clip(typeof value === "string" ? value : JSON.stringify(value) ?? String(value), 200)

/**
 * Where a person decides what a suspended run waits for: any server on the project's store picks
 * the run up (`foundry dev` here, or one already running), in the inspector or over the API.
 */
const howToDecide = (server: string, approvalId: string) =>
  `  decide it with a server on this project running (\`foundry dev\`; one already running picks the run up):\n` +
  `    in the inspector: ${server}/approvals\n` +
  `    or: foundry approvals approve ${approvalId} (or deny ${approvalId} --reason "...")\n` +
  `    or: curl -X POST ${server}/api/approvals/${approvalId} -H 'content-type: application/json' -d '{"decision":"approve"}'\n` +
  `  the run then goes on there.\n`

/** Text to standard output, when there is any. */
const say = (text: string) => text === "" ? Effect.void : write(process.stdout, text)

/** Prints one event of the run; `turns` is what was printed of each turn's text; `server` is the project's address. */
const show = (event: FoundryEvent, turns: ReturnType<typeof turnTextReading>, server: string) => {
  switch (event.type) {
    case "model.delta":
      return say(turns.delta(event.data.turn, event.data.at, event.data.text))
    case "model.turn.completed":
      return say(turns.completed(event.data.turn, event.data.text))
    case "model.turn.started":
    case "model.retry":
    case "model.fallback":
      turns.restart(event.data.turn)
      return Effect.void
    case "tool.call.started":
      return write(process.stderr, style.dim(`\n-> ${event.data.tool} ${short(event.data.input)}\n`))
    case "tool.call.completed":
      return write(process.stderr, style.dim(`<- ${event.data.tool} ${short(event.data.output)}\n`))
    case "tool.call.failed":
      // The error names the tool and says how it failed (`lookup-order failed: ...`, `invalid arguments for ...`).
      return write(process.stderr, style.yellow(`<- ${short(event.data.error)}\n`))
    case "approval.requested":
      return write(process.stderr, style.dim(`\n-> ${event.data.tool} ${short(event.data.input)} (asks a person first)\n`))
    case "run.completed":
      return write(process.stdout, "\n")
    case "run.failed":
      return write(process.stderr, style.red(`\nrun failed: ${inCommandTerms(event.data.error)}\n`))
    case "run.suspended":
      return write(
        process.stderr,
        style.yellow(
          event.data.reason === "child"
            ? `\n${event.data.tool}: waiting for its run ${event.data.childRunId}\n`
            : event.data.reason === "build"
            ? `\nrun ${event.runId} waits: ${event.data.file} does not build (${short(event.data.problem)}); it goes on once a build of the project has its agent\n`
            : event.data.reason === "budget"
            ? `\nrun ${event.runId} waits: it went over ${event.data.budget}; a person decides whether it goes on (${event.data.approvalId})\n` +
              howToDecide(server, event.data.approvalId)
            : `\nrun ${event.runId} waits: ${event.data.tool} needs a person's approval (${event.data.approvalId})\n` +
              howToDecide(server, event.data.approvalId)
        )
      )
    default:
      return Effect.void
  }
}

/** `foundry run`: one message to `agent` of the project at `dir`. */
export const run = ({ agent, dir, instance, message }: {
  readonly agent: string
  readonly message: string
  readonly dir: string
  readonly instance: string | undefined
}) =>
  Effect.gen(function*() {
      // As the API answers an empty message: there is nothing to run.
      if (message.trim() === "") return yield* new CliError({ message: `the message is empty: foundry run ${agent} "<what to ask>"` })
      const app = yield* loadProject(dir, 1)
      const { outcome, runId } = yield* Effect.gen(function*() {
        const dispatcher = yield* Dispatcher
        const events = yield* EventLog
        const submitted = yield* dispatcher.submit({ agent, message, instance })
        const turns = turnTextReading()
        const { host, port } = app.table.config.server
        const server = Option.getOrElse(servingUrl(dir), () => addressOf(host, port))
        let outcome = "completed"
        // A subagent's run that stops for a person stops this command as the run's own approval does.
        const below = Effect.flatMap(firstApprovalBelow(submitted.id, { events, approvals: yield* ApprovalStorage }), (approval) => {
          outcome = "suspended"
          return write(process.stderr, style.yellow(`\nrun suspended: its subagent's call to ${approval.tool} waits for approval ${approval.id}\n${howToDecide(server, approval.id)}\n`))
        })
        const own = events.runEvents(submitted.id).pipe(
          // A run waiting on its subagent's run goes on by itself, in this process: only a wait on a person stops here.
          Stream.takeUntil((event) => event.type === "run.suspended" && event.data.reason !== "child"),
          Stream.runForEach((event) => {
            if (event.type === "run.failed") outcome = "failed"
            if (event.type === "run.cancelled") outcome = "cancelled"
            if (event.type === "run.suspended" && event.data.reason !== "child") outcome = "suspended"
            return show(event, turns, server)
          })
        )
        // A cancel from another process on the store (a server's `POST /api/runs/<id>/cancel`)
        // ends the execution here (its lease is revoked) but its event is that process's: the
        // run's status says so, read whenever the execution here ends, and every second.
        const store = yield* Store
        const cancelledElsewhere = Effect.gen(function*() {
          for (;;) {
            yield* Effect.raceFirst(dispatcher.await(submitted.id), Effect.sleep("1 second"))
            // Not executing here (waiting for its subagent's run): `await` is at once, this is not.
            yield* Effect.sleep("100 millis")
            const stored = yield* store.getRun(submitted.id)
            if (Option.isSome(stored) && stored.value.status === "cancelled") {
              outcome = "cancelled"
              return
            }
          }
        })
        yield* Effect.raceFirst(Effect.raceFirst(own, below), cancelledElsewhere).pipe(
          // Ctrl-C stops the run this command started: left running, no process would go on with it.
          // The process then exits 128 + the signal's number (main.ts), as a command a signal stopped.
          Effect.onInterrupt(() =>
            dispatcher.cancel(submitted.id).pipe(
              Effect.zipRight(warn(style.yellow(`\nrun ${submitted.id} was cancelled: the command was interrupted`))),
              Effect.catchAll((error) => warn(`\nrun ${submitted.id} was not cancelled: ${error.message}`))
            ))
        )
        return { outcome, runId: submitted.id }
      }).pipe(Effect.provide(OtlpExportLive.pipe(Layer.provideMerge(runtimeLayer(app, { oneShot: true })))))
      if (outcome === "failed") return yield* new CliError({ message: `the run of ${agent} failed` })
      if (outcome === "cancelled") {
        return yield* new CliError({
          message: `run ${runId} was cancelled from outside this command (through a server on this project's store): it did not finish`
        })
      }
      if (outcome === "suspended") {
        return yield* new CliError({ message: `the run of ${agent} has not finished: it waits (above), and goes on once that is done` })
      }
  }).pipe(Effect.scoped)
