/**
 * A session with one MCP server, as its connection (McpConnection.ts) holds it: the server started
 * (or reached) and its tools listed (toolListing.ts), within the connect timeout in all; watched
 * for going away on its own (its process exits, its connection closes) and for a connection
 * failing during a call, which it tells the connection of; and closed, ended on the server's side
 * first when still alive.
 */
import type { Client } from "@modelcontextprotocol/sdk/client/index.js"
import { Duration, Effect } from "effect"
import { durationText } from "../definitions/configFields.js"
import { loadMcpClientSdk, sdkTimeoutMargin } from "./mcpClientSdk.js"
import { unavailable as unavailableFor } from "./McpErrors.js"
import type { McpMount } from "./McpMount.js"
import { isStdio } from "./McpServerSpec.js"
import type { ListedTool } from "./offerable.js"
import { openTransport } from "./openTransport.js"
import { connectFailure, messageOf } from "./sdkErrors.js"
import type { ToolLister } from "./toolListing.js"

/** A connected server. */
export interface Session {
  readonly client: Client
  /** Why it went away, set the moment its transport closed (or failed) on its own. */
  gone: string | undefined
  /** Set before Foundry closes it: that close is no crash. */
  closing: boolean
  tools: ReadonlyArray<ListedTool>
  /** A `list_changed` arrived: list again before the tools are next offered. */
  stale: boolean
  /** Its tools are listed again after a call: an HTTP server that announces changes to them. */
  readonly relistAfterCalls: () => boolean
  /** Calls under way. */
  calls: number
  /** A ping is checking whether the server still answers. */
  checking: boolean
  /** The end of the server's stderr, for the log when it goes away. */
  readonly stderr: () => string
  /** Ends the session on the server's side (see `OpenedTransport.end`). */
  readonly end: () => Promise<void>
}

/** What a session tells its connection, from the SDK's callbacks (outside any fiber). */
export interface SessionWatch {
  /** It went away on its own; `session.gone` says why. */
  readonly gone: (session: Session) => void
  /** Its connection failed during a call (`why`): the server may have died, or only hiccuped. */
  readonly failedDuringCall: (session: Session, why: string) => void
}

/** The client's name and version as servers see them in `initialize`. */
const clientInfo = { name: "foundry", version: "1" }

/** How long a server may take to acknowledge the end of a session before the transport is closed anyway. */
const endTimeout = "2 seconds"

/** Closes the session; one still alive is ended on the server's side first. */
export const closeSession = (session: Session) =>
  Effect.gen(function*() {
    const alive = session.gone === undefined
    session.closing = true
    if (alive) yield* Effect.ignore(Effect.timeout(Effect.tryPromise(() => session.end()), endTimeout))
    yield* Effect.promise(() => session.client.close().catch(() => undefined))
  })

/**
 * Starts `mount`'s server and lists its tools with `allTools`, within `connectTimeout` in all; `hide`
 * takes what may quote an installed server's credentials out of what it says, `watch` hears how it ends.
 */
export const openSession = (
  mount: McpMount,
  connectTimeout: Duration.DurationInput,
  hide: (text: string) => string,
  allTools: ToolLister,
  watch: SessionWatch
) => {
  const connectMillis = Duration.toMillis(Duration.decode(connectTimeout))
  const unavailable = (reason: string) => unavailableFor(mount, hide(reason))
  return Effect.gen(function*() {
    const sdk = yield* loadMcpClientSdk
    const opened = yield* openTransport(mount, sdk)
    const client = new sdk.Client(clientInfo, { capabilities: {} })
    const session: Session = {
      client,
      gone: undefined,
      closing: false,
      tools: [],
      stale: false,
      relistAfterCalls: () => !isStdio(mount.spec) && client.getServerCapabilities()?.tools?.listChanged === true,
      calls: 0,
      checking: false,
      stderr: opened.stderr,
      end: opened.end
    }
    client.setNotificationHandler(sdk.ToolListChangedNotificationSchema, () => {
      session.stale = true
    })
    let closedReason = isStdio(mount.spec) ? "its process exited" : `the connection to ${hide(mount.spec.url)} closed`
    client.onclose = () => {
      if (session.closing || session.gone !== undefined) return
      // Set before the SDK fails the calls in flight, so that they report why.
      session.gone = closedReason
      watch.gone(session)
    }
    // Over HTTP, a server that dies closes nothing: the response stream of a call under way
    // breaks, and the transport only reports an error, which a healthy server's hiccup or
    // an unexpected message also causes. A ping tells a dead server apart at once, rather
    // than the call waiting out its timeout.
    client.onerror = (error) => {
      // The SDK's stdio transport closes on a message over its buffer (10 MB) after reporting it
      // here: the close says that, not that the process exited.
      const tooLarge = isStdio(mount.spec) ? /ReadBuffer exceeded maximum size of (\d+) bytes/.exec(messageOf(error)) : null
      if (tooLarge !== null) {
        closedReason = `it sent a message over ${tooLarge[1]} bytes, the most an MCP message over stdio may be (a tool result that large: ` +
          "have the tool return less, or write it to a file and return its path), so its process was stopped"
      }
      if (isStdio(mount.spec) || session.calls === 0 || session.checking) return
      watch.failedDuringCall(session, `the connection failed during a call: ${hide(messageOf(error))}`)
    }
    yield* Effect.tryPromise({
      try: (signal) => client.connect(opened.transport, { signal, timeout: connectMillis + sdkTimeoutMargin }),
      catch: (error) => unavailable(connectFailure(sdk, error))
    }).pipe(Effect.onError(() => closeSession(session)))
    const pid = opened.pid()
    if (pid !== null) closedReason = `its process ${pid} exited`
    session.tools = yield* allTools(client).pipe(
      Effect.mapError((reason) => unavailable(`tools/list failed: ${reason}`)),
      Effect.onError(() => closeSession(session))
    )
    return session
  }).pipe(
    // Interrupted, it closes what it opened (`onError` above). A server stuck between the steps
    // would otherwise hold every run that waits for it for as long as each step may take.
    Effect.timeoutFail({
      duration: connectTimeout,
      onTimeout: () => unavailable(`it did not start and list its tools within ${durationText(connectTimeout)} (the connect timeout)`)
    })
  )
}
