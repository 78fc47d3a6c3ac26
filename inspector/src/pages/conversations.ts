/**
 * Conversations: the stored transcript as a chat, tool calls inline and expandable, what waits on
 * a person's approval, and a box to send a message and watch the reply stream in (or stop it).
 */
import { usageLine } from "../usage.js"
import { ApiError, api, type ConversationView, type FoundryEvent, type MessageView, type RunView } from "../api.js"
import { onEvent, streamDeltasOf } from "../liveEvents.js"
import { approvalCards } from "../approvalCard.js"
import { clock, counted, errorText, h, link, replace, visible } from "../dom.js"
import { instanceHref, isLive } from "../records.js"
import { runPageSize } from "../runPages.js"
import { liveDraw } from "../liveDraw.js"
import { startConversationForm } from "../startConversation.js"

/**
 * The conversations page: every conversation, most recently active first, a page at a time from
 * `/api/conversations` ("Load more" for older ones), and a new one with any agent and instance.
 */
export const conversationsPage = (root: HTMLElement) => {
  const agent = h("select", { name: "agent" })
  // Any instance by id (the default one when empty); the server says when it has none such, or it takes no runs.
  const instance = h("input", { name: "instance", placeholder: "instance (default)", autocomplete: "off" })
  const list = h("ul", { class: "list", "data-testid": "conversations" })
  const problem = h("p", { class: "error-line", "data-testid": "send-problem" })
  const unread = h("p", { class: "error-line", "data-testid": "page-problem" })
  const count = h("p", { class: "muted", "data-testid": "conversations-count" })
  const more = h("button", { class: "hidden", "data-testid": "load-more", onclick: () => void loadMore() }, "Load more")
  replace(root,
    h("h1", {}, "Conversations"),
    startConversationForm({
      fields: [agent, instance],
      to: () => ({ agent: agent.value, instance: instance.value }),
      problem,
      placeholder: "Say something to start a conversation"
    }),
    problem,
    unread,
    count,
    list,
    h("p", {}, more))
  void api.routes().then(
    (r) => agent.replaceChildren(...r.routes.filter((x) => x.kind === "agent").map((x) => h("option", { value: x.id }, x.id))),
    (error: unknown) => {
      problem.textContent = errorText(error)
    })
  /** The conversations read so far, most recently active first, and where the next older page starts. */
  let conversations: ReadonlyArray<ConversationView> = []
  let next: string | null = null
  /** Each conversation once, where it is now: a conversation with a new run moves up from the pages below. */
  const merged = (newer: ReadonlyArray<ConversationView>, older: ReadonlyArray<ConversationView>) => {
    const seen = new Set(newer.map((c) => c.id))
    return [...newer, ...older.filter((c) => !seen.has(c.id))]
  }
  const show = () => {
    // Opened from what was said last; its agent is linked on its own.
    list.replaceChildren(...conversations.map((c) =>
      h("li", { "data-conversation": c.id },
        h("div", { class: "clip" }, link(`/conversations/${c.id}`, c.lastRun?.input ?? c.id)),
        h("span", { class: "muted" }, link(`/agents/${c.agent}`, c.agent), ` · ${c.instanceId} · ${counted(c.runs, "run")} · ${clock(c.updatedAt)}`))))
    count.textContent = next === null ? counted(conversations.length, "conversation") : `the latest ${counted(conversations.length, "conversation")}; older ones to load`
    more.classList.toggle("hidden", next === null)
  }
  // Once older pages are loaded, the last of them says where to go on; until then, the newest.
  let olderLoaded = false
  const draw = async () => {
    const newest = await api.conversations(`?limit=${runPageSize}`)
    conversations = merged(newest.conversations, conversations)
    if (!olderLoaded) next = newest.next
    show()
  }
  const loadMore = async () => {
    if (next === null) return
    more.setAttribute("disabled", "")
    try {
      const older = await api.conversations(`?limit=${runPageSize}&before=${encodeURIComponent(next)}`)
      conversations = merged(conversations, older.conversations)
      next = older.next
      olderLoaded = true
      show()
      unread.textContent = ""
    } catch (error) {
      unread.textContent = errorText(error)
    } finally {
      more.removeAttribute("disabled")
    }
  }
  return liveDraw(draw, { problem: unread, shows: (event) => event.type === "run.queued", delay: 300 }).stop
}

const bubble = (message: MessageView, expanded: Set<number>) => {
  if (message.role === "summary") {
    // A compaction: models see this summary instead of the messages before it, which stay here.
    return h("div", { class: "bubble compaction", "data-role": "summary" },
      h("div", { class: "meta" }, `Compacted: from here on, models see this summary instead of the ${message.keepFrom === undefined ? "" : `${message.keepFrom - 1} `}messages above`),
      h("div", { class: "text" }, message.content))
  }
  if (message.role === "tool") {
    const open = expanded.has(message.seq)
    return h("div", { class: "bubble tool", "data-role": "tool" },
      h("button", { class: "linkish", onclick: (e) => {
        const target = e.currentTarget
        if (target instanceof HTMLElement) target.parentElement?.querySelector("pre")?.classList.toggle("hidden")
        if (open) expanded.delete(message.seq)
        else expanded.add(message.seq)
      } }, `↳ ${message.name ?? "tool"} result`),
      h("pre", { class: open ? "" : "hidden" }, message.content))
  }
  return h("div", { class: `bubble ${message.role}`, "data-role": message.role },
    message.content === "" ? null : h("div", { class: "text" }, message.content),
    (message.toolCalls ?? []).map((call) => h("div", { class: "call" }, h("code", {}, `${call.name}(${call.arguments})`))),
    h("div", { class: "meta" }, link(`/runs/${message.runId}`, "run"), " · ", clock(message.createdAt)))
}

/** A message sent from this page whose run has not stored it yet; `runId` once the API has answered. */
interface Sent {
  readonly text: string
  readonly at: number
  runId?: string
}

/** A message that waits for its run: sent, or queued behind the conversation's run in progress. */
const waitingBubble = (text: string, state: string, at: number, runId?: string) =>
  h("div", { class: "bubble user pending", "data-role": "user", "data-waiting": state },
    h("div", { class: "text" }, text),
    h("div", { class: "meta" }, runId === undefined ? state : link(`/runs/${runId}`, state), " · ", clock(at)))

/** A message whose run ended before it started (cancelled while queued): never part of the transcript, shown where it was sent. */
const unsentBubble = (run: RunView) =>
  h("div", { class: "bubble user unsent", "data-role": "user", "data-unsent": run.status },
    h("div", { class: "text" }, run.input),
    h("div", { class: "meta" }, link(`/runs/${run.id}`, `${run.status} before it started`), run.error === undefined ? "" : `: ${run.error}`, " · ", clock(run.createdAt)))

/** Whether `event` changes what a conversation's page shows: its transcript, its runs, what waits on a person. */
const changesTranscript = (event: FoundryEvent): boolean =>
  event.type === "model.turn.completed" || event.type === "tool.call.completed" || event.type.startsWith("run.") ||
  event.type.startsWith("approval.")

/** A conversation's chat view. */
export const conversationPage = (root: HTMLElement, [conversationId = ""]: ReadonlyArray<string>) => {
  const expanded = new Set<number>()
  const transcript = h("div", { class: "chat", "data-testid": "chat" })
  const streaming = h("div", { class: "bubble assistant streaming hidden", "data-testid": "streaming" })
  const message = h("input", { name: "message", placeholder: "Message", autocomplete: "off" })
  let agent = ""
  let instance = "default"
  const totals = h("p", { class: "muted", "data-testid": "conversation-usage" })
  const waiting = h("div", { "data-testid": "conversation-approvals" })
  const card = approvalCards({ decided: () => live.redraw() })
  const stop = h("button", { type: "button", class: "cancel hidden", "data-testid": "stop" }, "Stop")
  const problem = h("p", { class: "error-line", "data-testid": "send-problem" })
  const unread = h("p", { class: "error-line", "data-testid": "page-problem" })
  // What the transcript was last drawn from, so that a message sent redraws it at once.
  let messages: ReadonlyArray<MessageView> = []
  let runs: ReadonlyArray<RunView> = []
  const sent: Array<Sent> = []
  // Set when the turn being streamed ended (a new object each time): the streamed text goes once a
  // draw that began after it has the turn in the transcript.
  let streamEnded: object | undefined
  const drawTranscript = () => {
    // After a run that did not complete, a line that says so: its last words are not an answer.
    const ended = new Map(runs.filter((r) => r.status === "cancelled" || r.status === "failed").map((r) => [r.id, r]))
    const stored = new Set(messages.map((m) => m.runId))
    // A run's message is stored when the run starts: until then it shows from the run, marked as waiting.
    const unstarted = runs.filter((r) => isLive(r.status) && !stored.has(r.id)).reverse()
    const known = new Set([...stored, ...unstarted.map((r) => r.id)])
    for (let i = sent.length - 1; i >= 0; i--) {
      const runId = sent[i]?.runId
      if (runId !== undefined && known.has(runId)) sent.splice(i, 1)
    }
    // Each in its turn: after the messages of the runs accepted before it.
    const unsent = runs.filter((r) => ended.has(r.id) && !stored.has(r.id)).reverse()
    const accepted = new Map(runs.map((r) => [r.id, r.createdAt]))
    let nextUnsent = 0
    const unsentUpTo = (at: number) => {
      const due: Array<HTMLElement> = []
      for (let run = unsent[nextUnsent]; run !== undefined && run.createdAt < at; run = unsent[++nextUnsent]) due.push(unsentBubble(run))
      return due
    }
    transcript.replaceChildren(...messages.flatMap((m, index) => {
      const run = ended.get(m.runId)
      const last = run !== undefined && messages[index + 1]?.runId !== m.runId
      const before = unsentUpTo(accepted.get(m.runId) ?? m.createdAt)
      return last
        ? [...before, bubble(m, expanded), h("div", { class: "bubble system", "data-role": "system" },
          link(`/runs/${run.id}`, `run ${run.status}`), run.error === undefined ? "" : `: ${run.error}`)]
        : [...before, bubble(m, expanded)]
    }),
    ...unsentUpTo(Number.POSITIVE_INFINITY),
    ...unstarted.map((r) => waitingBubble(r.input, r.status === "queued" ? "queued" : "starting", r.createdAt, r.id)),
    ...sent.map((m) => waitingBubble(m.text, "sending", m.at)))
  }
  const draw = async () => {
    const ended = streamEnded
    try {
      messages = await api.messages(conversationId)
    } catch (error) {
      if (error instanceof ApiError && error.status !== 404) throw error
      // As an unknown run's page says so: no composer that could send into nothing.
      replace(root, h("h1", {}, "Conversation not found"), h("p", { class: "error-line" }, errorText(error)))
      return
    }
    const [usage, cluster, listed, pending] = await Promise.all([
      api.usage(`?conversation=${encodeURIComponent(conversationId)}&groupBy=conversation`),
      api.cluster(),
      api.runs(`?conversation=${encodeURIComponent(conversationId)}&limit=50`),
      // Every pending approval, as no filter takes a conversation: those of its runs are among them.
      api.approvals({ status: "pending", limit: 1000 })
    ])
    runs = listed
    drawTranscript()
    if (ended !== undefined && ended === streamEnded) stopStreaming()
    const ids = new Set(runs.map((r) => r.id))
    replace(waiting, pending.filter((a) => ids.has(a.runId)).map(card))
    // Every run of the conversation that has not ended: one waiting on a person while a later one answers, too.
    const liveRuns = runs.filter((r) => isLive(r.status))
    stop.classList.toggle("hidden", liveRuns.length === 0)
    stop.textContent = liveRuns.length > 1 ? `Stop ${liveRuns.length} runs` : "Stop"
    stop.onclick = () =>
      void Promise.allSettled(liveRuns.map((r) => api.cancel(r.id))).then((results) => {
        const refused = results.find((result) => result.status === "rejected")
        problem.textContent = refused === undefined ? "" : errorText(refused.reason)
        live.redraw()
      })
    // In a cluster, where the conversation's runs execute.
    const placement = cluster.mode === "cluster" ? await api.placement(conversationId) : undefined
    const where = placement === undefined ? "" : ` · runner ${placement.runner ?? "(moving)"}, shard ${placement.shard}`
    totals.textContent = `${counted(usage.total.runs, "run")} · ${usageLine(usage.total)}${where}`
    // A conversation has one agent and one instance: any of its runs names them.
    const any = runs[0]
    if (any !== undefined && agent === "") {
      agent = any.agent
      instance = any.instanceId
      title.textContent = `Conversation with ${agent}`
      replace(about, "instance ", link(instanceHref(agent, instance), instance))
    }
  }
  const title = h("h1", {}, "Conversation")
  const about = h("p", { class: "muted", "data-testid": "conversation-instance" })
  replace(root, title, about, unread, totals, transcript, streaming, waiting,
    h("form", {
      class: "composer",
      onsubmit: (event) => {
        event.preventDefault()
        const text = message.value.trim()
        if (text === "" || agent === "") return
        message.value = ""
        problem.textContent = ""
        const entry: Sent = { text, at: Date.now() }
        sent.push(entry)
        drawTranscript()
        void api.send({ agent, instance, message: text, conversation: conversationId }).then((created) => {
          entry.runId = created.runId
        }, (error: unknown) => {
          // Not sent: the message goes back where it was typed, with why.
          sent.splice(sent.indexOf(entry), 1)
          drawTranscript()
          if (message.value === "") message.value = text
          problem.textContent = errorText(error)
        })
      }
    }, message, h("button", { type: "submit" }, "Send"), stop),
    problem)
  // Redrawn on the conversation's events as the overview is: a busy run's make a draw every two
  // seconds at most (each draw is five reads; one per event spent the token's rate limit).
  const live = liveDraw(draw, { problem: unread, shows: (event) => event.conversationId === conversationId && changesTranscript(event), delay: 2000 })
  // Where the next delta of the turn being streamed goes on in its text; undefined while none is.
  let streamedTo: number | undefined
  const stopStreaming = () => {
    streamedTo = undefined
    streamEnded = undefined
    streaming.textContent = ""
    streaming.classList.add("hidden")
  }
  // Drawn again as the stream opens: what happened before it (and after the first draw read) is in no event it brings.
  const streamed = streamDeltasOf(conversationId, live.redraw)
  const unsubscribe = onEvent((event) => {
    if (event.conversationId !== conversationId) return
    if (event.type === "model.delta") {
      // Text missed (the page opened in the middle of the turn, or a delta lost between servers) shows as "…".
      const missed = streamedTo === undefined ? event.data.at > 0 : event.data.at !== streamedTo
      streaming.classList.remove("hidden")
      streaming.textContent = (streamedTo === undefined ? "" : streaming.textContent ?? "") + (missed ? "… " : "") + visible(event.data.text)
      streamedTo = event.data.at + event.data.text.length
    } else if (event.type === "model.turn.started" || event.type === "model.retry" || event.type === "model.fallback") {
      // The turn starts (again) from its first word.
      stopStreaming()
    } else if (event.type === "model.turn.completed" || event.type === "run.cancelled" || event.type === "run.failed") {
      // The streamed text ends: it stays until a draw that read after this shows the turn's answer
      // in the transcript (or that the run ended mid-answer).
      streamEnded = {}
    }
  })
  return () => {
    live.stop()
    unsubscribe()
    streamed()
  }
}
