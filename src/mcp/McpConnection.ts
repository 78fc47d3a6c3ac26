/**
 * One MCP server as the runtime keeps it: connected on first use, its tool list cached and marked
 * stale by `notifications/tools/list_changed`, and restarted with backoff when it goes away (its
 * process exits, its endpoint stops answering, or a call times out and a ping after it too). Over
 * HTTP a `list_changed` travels apart from a call's answer and may come after the next turn, or
 * never (a server without a GET stream): a server that announces changes is listed again after
 * each turn that called it. An HTTP server that no longer knows the session (it restarted) gets a
 * new one at once, and the call it refused is made again. While it is down, its last known tools
 * stay on offer and every call is answered with `McpServerNotRunning`, so the model learns why.
 * Until it first connects, one attempt at a time serves every caller, and one that failed refuses
 * them at once with `McpServerUnavailable` until a backoff has passed.
 */
import { Duration, Effect, Either, Fiber, Option, Runtime, Schedule, Scope } from "effect"
import { durationText } from "../definitions/configFields.js"
import { hideUrlSecrets } from "./installedUrl.js"
import { loadMcpClientSdk, sdkTimeoutMargin } from "./mcpClientSdk.js"
import { closeSession, openSession, type Session } from "./mcpSession.js"
import { McpCallTimedOut, McpServerNotRunning, type McpServerUnavailable, McpToolFailed } from "./McpErrors.js"
import type { McpMount } from "./McpMount.js"
import { defaultMcpTimeout } from "./McpServerSpec.js"
import type { ListedTool } from "./offerable.js"
import { httpErrorChars, issuesText, messageOf, schemaRejection } from "./sdkErrors.js"
import { toolLister } from "./toolListing.js"
import { toolResult, type ToolResultContent } from "./toolResult.js"

type State =
  | { readonly _tag: "Idle" }
  /** Connecting for the first time: every caller waits for this one attempt. */
  | { readonly _tag: "Connecting"; readonly attempt: Fiber.RuntimeFiber<Session, McpServerUnavailable> }
  /** Never connected, and the last attempt failed: callers are refused with its error until the backoff has passed. */
  | { readonly _tag: "Unreached"; readonly error: McpServerUnavailable }
  | { readonly _tag: "Live"; readonly session: Session }
  | { readonly _tag: "Down"; readonly reason: string; readonly tools: ReadonlyArray<ListedTool> }

/** One server's connection. */
export interface McpConnection {
  /** The server's tools, connecting first if need be; while it restarts, the last ones it listed. */
  readonly tools: Effect.Effect<ReadonlyArray<ListedTool>, McpServerUnavailable>
  /** Calls a tool; the result as a model reads it, or why there is none. */
  readonly call: (
    tool: string,
    args: Readonly<Record<string, unknown>>
  ) => Effect.Effect<ToolResultContent, McpServerUnavailable | McpServerNotRunning | McpCallTimedOut | McpToolFailed>
}

/** How long a server whose call timed out may take to answer a ping before it counts as stopped. */
const pingMillis = 5_000

/** How a connection starts and restarts. */
export interface ConnectionPolicy {
  /**
   * Spaces the attempts to bring a server back; it starts over once a call succeeds, so a server
   * that dies on every call is restarted ever more slowly.
   */
  readonly restart: Schedule.Schedule<unknown>
  /** How long starting a server and its first `tools/list` may take (a process may start slowly). */
  readonly connectTimeout: Duration.DurationInput
}

/** The connection to `mount`'s server, closed with the scope. */
export const make = (mount: McpMount, policy: ConnectionPolicy) =>
  Effect.gen(function*() {
    const scope = yield* Effect.scope
    // Made in the pool's uninterruptible acquisition, whose flags it keeps: what runs on it, and
    // what that forks, is made interruptible, or a restart loop would hold up closing the pool.
    const runtime = yield* Effect.runtime<never>()
    const lock = yield* Effect.makeSemaphore(1)
    const backoff = yield* Schedule.driver(policy.restart)
    // Spaces the attempts to reach a server that has never answered; starts over once one does.
    const firstBackoff = yield* Schedule.driver(policy.restart)
    const connectMillis = Duration.toMillis(Duration.decode(policy.connectTimeout))
    const timeout = mount.spec.timeout ?? defaultMcpTimeout
    const timeoutMillis = Duration.toMillis(Duration.decode(timeout))
    let state: State = { _tag: "Idle" }
    // Read through here: the state changes under the lock while a caller waits, which narrowing cannot see.
    const current = (): State => state

    // What the transport or the server says may quote an installed server's URL, credentials and all.
    const hide = hideUrlSecrets(mount)
    const allTools = toolLister(mount, hide, connectMillis)
    const connect = openSession(mount, policy.connectTimeout, hide, allTools, {
      // Forked on the runtime the connection was made with: the SDK calls these outside any fiber.
      gone: (session) => Runtime.runFork(runtime)(Effect.interruptible(wentAway(session))),
      failedDuringCall: (session, why) => Runtime.runFork(runtime)(Effect.interruptible(stillAnswering(session, why)))
    })

    /** The server went away: its tools stay known, calls are refused, and it is restarted. */
    const wentAway = (session: Session) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const now = current()
        if (now._tag !== "Live" || now.session !== session) return
        const reason = session.gone ?? "it went away"
        state = { _tag: "Down", reason, tools: session.tools }
        const stderr = session.stderr().trimEnd().split("\n").pop() ?? ""
        yield* Effect.logWarning(
          `MCP server ${mount.name} is not running: ${reason}; restarting${stderr === "" ? "" : ` (its last stderr line: ${stderr})`}`
        )
        yield* Effect.forkIn(Effect.interruptible(restartLoop(session.tools)), scope)
      }))

    const restartLoop = (tools: ReadonlyArray<ListedTool>): Effect.Effect<void> =>
      Effect.gen(function*() {
        yield* Effect.orDie(backoff.next(undefined))
        const attempt = yield* Effect.either(connect)
        yield* lock.withPermits(1)(Effect.sync(() => {
          state = Either.isRight(attempt)
            ? { _tag: "Live", session: attempt.right }
            : { _tag: "Down", reason: attempt.left.reason, tools }
        }))
        if (Either.isLeft(attempt)) {
          yield* Effect.logWarning(`MCP server ${mount.name} could not be restarted: ${attempt.left.reason}; trying again`)
          return yield* restartLoop(tools)
        }
        yield* Effect.logInfo(`MCP server ${mount.name} restarted`)
      })

    yield* Scope.addFinalizer(scope, Effect.suspend(() => {
      const last = current()
      return last._tag === "Live" ? closeSession(last.session) : Effect.void
    }))

    /**
     * The first connection, made once for every caller waiting for it. When it fails, callers are
     * refused at once with its error until the backoff has passed; then the next caller tries again.
     */
    const firstConnect = Effect.uninterruptibleMask((restore) =>
      Effect.gen(function*() {
        const attempt = yield* Effect.either(restore(connect))
        return yield* lock.withPermits(1)(Effect.gen(function*() {
          if (Either.isRight(attempt)) {
            state = { _tag: "Live", session: attempt.right }
            yield* firstBackoff.reset
            return attempt.right
          }
          const unreached: State = { _tag: "Unreached", error: attempt.left }
          state = unreached
          yield* Effect.logWarning(`MCP server ${mount.name} could not be reached: ${attempt.left.reason}; trying again when next used, after a backoff`)
          const retryLater = Effect.zipRight(
            Effect.orDie(firstBackoff.next(undefined)),
            lock.withPermits(1)(Effect.sync(() => {
              if (current() === unreached) state = { _tag: "Idle" }
            }))
          )
          yield* Effect.forkIn(Effect.interruptible(retryLater), scope)
          return yield* attempt.left
        }))
      })
    )

    /** The live session, connecting on first use; refused while the server is down or was never reached. */
    const live = Effect.flatten<Session, McpServerUnavailable | McpServerNotRunning, never, never, never>(lock.withPermits(1)(Effect.gen(function*() {
      const now = current()
      switch (now._tag) {
        case "Down":
          return Effect.fail(new McpServerNotRunning({ server: mount.name, reason: now.reason }))
        case "Live":
          return Effect.succeed(now.session)
        case "Unreached":
          return Effect.fail(now.error)
        case "Connecting":
          // Joined, not awaited under the lock: a caller that gives up leaves the attempt to the others.
          return Fiber.join(now.attempt)
        case "Idle": {
          const attempt = yield* Effect.forkIn(Effect.interruptible(firstConnect), scope)
          state = { _tag: "Connecting", attempt }
          return Fiber.join(attempt)
        }
      }
    })))

    const tools = Effect.gen(function*() {
      const session = yield* live.pipe(Effect.catchTag("McpServerNotRunning", () => Effect.succeed(undefined)))
      if (session === undefined) {
        const down = current()
        return down._tag === "Down" ? down.tools : []
      }
      if (!session.stale) return session.tools
      session.stale = false
      const listed = yield* Effect.either(allTools(session.client))
      if (Either.isRight(listed)) {
        session.tools = listed.right
      } else {
        // Offered as they were; the next turn lists again.
        session.stale = true
        yield* Effect.logWarning(`MCP server ${mount.name}: tools/list failed: ${hide(listed.left)}`)
      }
      return session.tools
    })

    /**
     * After a call timed out (`why`): a slow tool, or a server that stopped answering anything (a
     * process stuck in a loop)? After the connection failed during a call: a hiccup, or a server
     * that died? A ping tells them apart, and a server that does not answer it is restarted.
     */
    const stillAnswering = (session: Session, why: string) =>
      Effect.gen(function*() {
        if (session.checking || session.closing || session.gone !== undefined) return
        session.checking = true
        const answers = yield* Effect.tryPromise((signal) => session.client.ping({ signal, timeout: Math.min(timeoutMillis, pingMillis) })).pipe(
          Effect.as(true),
          Effect.orElseSucceed(() => false),
          Effect.ensuring(Effect.sync(() => {
            session.checking = false
          }))
        )
        if (answers || session.gone !== undefined) return
        session.gone = `it stopped answering (${why}, and a ping after it)`
        yield* closeSession(session)
        yield* wentAway(session)
      })

    /**
     * A new session in place of `stale`, which the server no longer knows; the one another call
     * already made when it got there first. When the server cannot be reached it is down, and
     * restarted as when it goes away.
     */
    const renewed = (stale: Session) =>
      lock.withPermits(1)(Effect.gen(function*() {
        const now = current()
        if (now._tag === "Down") return yield* new McpServerNotRunning({ server: mount.name, reason: now.reason })
        if (now._tag === "Live" && now.session !== stale) return now.session
        // Gone, so that closing it sends no DELETE for a session the server has forgotten.
        stale.gone = "the server no longer knew its session (HTTP 404)"
        yield* closeSession(stale)
        const attempt = yield* Effect.either(connect)
        if (Either.isLeft(attempt)) {
          state = { _tag: "Down", reason: attempt.left.reason, tools: stale.tools }
          yield* Effect.logWarning(`MCP server ${mount.name} is not running: ${attempt.left.reason}; restarting`)
          yield* Effect.forkIn(Effect.interruptible(restartLoop(stale.tools)), scope)
          return yield* new McpServerNotRunning({ server: mount.name, reason: attempt.left.reason })
        }
        state = { _tag: "Live", session: attempt.right }
        yield* Effect.logInfo(`MCP server ${mount.name}: a new session, the server no longer knew the one before (HTTP 404)`)
        return attempt.right
      }))

    /**
     * A failed call: the server gone, the call timed out, or this call failed (the server refused
     * it, or answered what is no result). Only a failure of the connection itself ends the session:
     * other runs' calls share it.
     */
    const failedCall = (session: Session, tool: string, error: unknown) =>
      Effect.gen(function*() {
        if (session.gone !== undefined) return yield* new McpServerNotRunning({ server: mount.name, reason: session.gone })
        if (error instanceof McpCallTimedOut) {
          yield* Effect.forkIn(stillAnswering(session, `a call to ${tool} timed out after ${durationText(timeout)}`), scope)
          return yield* error
        }
        const { ErrorCode, McpError, StreamableHTTPError } = yield* loadMcpClientSdk
        const failed = (reason: string) => new McpToolFailed({ server: mount.name, tool, reason: hide(reason) })
        // The SDK fails calls in flight with ConnectionClosed when the transport closes, after
        // `onclose` set `gone`, or when Foundry closes it; any other is the server's own error code.
        if (error instanceof McpError && !(error.code === ErrorCode.ConnectionClosed && session.closing)) return yield* failed(error.message)
        // A gateway's (or the server's) error status answers this call only: the session is intact.
        if (error instanceof StreamableHTTPError) {
          const said = messageOf(error)
          const status = error.code === -1 ? "" : `HTTP ${error.code}: `
          return yield* failed(`the server answered ${status}${said.length > httpErrorChars ? `${said.slice(0, httpErrorChars)}...` : said}`)
        }
        const rejected = schemaRejection(error)
        if (Option.isSome(rejected)) return yield* failed(`its result is not one MCP allows, so none of it is shown (${issuesText(rejected.value)})`)
        // Anything else is the transport failing (a refused connection, a broken pipe): start afresh.
        session.gone = hide(messageOf(error))
        yield* closeSession(session)
        yield* wentAway(session)
        return yield* new McpServerNotRunning({ server: mount.name, reason: session.gone })
      })

    const callOn = (session: Session, tool: string, args: Readonly<Record<string, unknown>>) =>
      Effect.acquireUseRelease(
        Effect.sync(() => session.calls++),
        () =>
          Effect.tryPromise(async (signal) => {
            const result = await session.client.callTool({ name: tool, arguments: { ...args } }, undefined, { signal, timeout: timeoutMillis + sdkTimeoutMargin })
            // Checked against the output schema the session's latest listing gave; the SDK's own
            // check knows no tool, as Foundry lists without its cache (outputCheck.ts).
            session.tools.find((listed) => listed.tool.name === tool)?.checkOutput?.(result)
            return result
          }).pipe(
            Effect.mapError((error): unknown => error.error),
            // Interrupting the call aborts its signal: the SDK tells the server it is cancelled.
            Effect.timeoutFail({
              duration: timeout,
              onTimeout: () => new McpCallTimedOut({ server: mount.name, tool, timeout: durationText(timeout) })
            }),
            Effect.tap(() => Effect.sync(() => {
              if (session.relistAfterCalls()) session.stale = true
            }))
          ),
        () => Effect.sync(() => session.calls--)
      )

    const call = (tool: string, args: Readonly<Record<string, unknown>>) =>
      Effect.gen(function*() {
        const { StreamableHTTPError } = yield* loadMcpClientSdk
        const session = yield* live
        const result = yield* callOn(session, tool, args).pipe(
          Effect.catchAll((error) =>
            // A 404 to the session: the server restarted (or ended it) and ran nothing of the
            // call, which is made again, once, in a new session.
            error instanceof StreamableHTTPError && error.code === 404 && session.gone === undefined
              ? Effect.flatMap(renewed(session), (fresh) => callOn(fresh, tool, args).pipe(Effect.catchAll((again) => failedCall(fresh, tool, again))))
              : failedCall(session, tool, error)
          )
        )
        const { images, isError, text, textWithImages } = toolResult(result)
        if (isError) return yield* new McpToolFailed({ server: mount.name, tool, reason: text === "" ? "the server reported an error" : hide(text) })
        yield* backoff.reset
        const answer: ToolResultContent = { text: hide(text), images, textWithImages: hide(textWithImages) }
        return answer
      })

    const connection: McpConnection = { tools, call }
    return connection
  })
