/**
 * Conversations: the stored transcript as a chat, tool calls inline and expandable, what waits on
 * a person's approval, and a box to send a message and watch the reply stream in (or stop it).
 */
import { usageLine } from "../usage.js"
import { api, type MessageView, onEvent, redrawOn } from "../api.js"
import { approvalCards } from "../approvalCard.js"
import { clock, counted, errorText, h, link, replace } from "../dom.js"
import { navigate } from "../navigate.js"
import { instanceHref, isLive } from "../records.js"

/** The conversations page: recent conversations, and a new one with any agent. */
export const conversationsPage = (root: HTMLElement) => {
  const agent = h("select", { name: "agent" })
  const message = h("input", { name: "message", placeholder: "Say something to start a conversation", autocomplete: "off" })
  const list = h("ul", { class: "list" })
  const problem = h("p", { class: "error-line", "data-testid": "send-problem" })
  replace(root,
    h("h1", {}, "Conversations"),
    h("form", {
      class: "composer",
      onsubmit: (event) => {
        event.preventDefault()
        if (message.value.trim() === "") return
        problem.textContent = ""
        void api.send({ agent: agent.value, message: message.value }).then(
          (r) => navigate(`/conversations/${r.conversationId}`),
          (error) => {
            problem.textContent = errorText(error)
          }
        )
      }
    }, agent, message, h("button", { type: "submit" }, "Start")),
    problem,
    list)
  void api.routes().then((r) => agent.replaceChildren(...r.routes.filter((x) => x.kind === "agent").map((x) => h("option", { value: x.id }, x.id))))
  // Each conversation once, by its latest run; a new run brings its conversation to the top.
  const draw = () =>
    void api.runs("?limit=200").then((runs) => {
      const seen = new Map<string, (typeof runs)[number]>()
      for (const run of runs) if (!seen.has(run.conversationId)) seen.set(run.conversationId, run)
      list.replaceChildren(...[...seen.values()].map((run) =>
        // The conversation is opened from what was said last; its agent is linked on its own.
        h("li", { "data-conversation": run.conversationId },
          h("div", { class: "clip" }, link(`/conversations/${run.conversationId}`, run.input)),
          h("span", { class: "muted" }, link(`/agents/${run.agent}`, run.agent), ` · ${run.instanceId} · ${clock(run.createdAt)}`))))
    })
  draw()
  return redrawOn((event) => event.type === "run.queued", draw)
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
  const card = approvalCards({ decided: () => void draw() })
  const stop = h("button", { type: "button", class: "cancel hidden", "data-testid": "stop" }, "Stop")
  const problem = h("p", { class: "error-line", "data-testid": "send-problem" })
  const draw = async () => {
    let messages: Awaited<ReturnType<typeof api.messages>>
    try {
      messages = await api.messages(conversationId)
    } catch (error) {
      // As an unknown run's page says so: no composer that could send into nothing.
      replace(root, h("h1", {}, "Conversation not found"), h("p", { class: "error-line" }, errorText(error)))
      return
    }
    const [usage, cluster, runs, pending] = await Promise.all([
      api.usage(`?conversation=${encodeURIComponent(conversationId)}&groupBy=conversation`),
      api.cluster(),
      api.runs(`?conversation=${encodeURIComponent(conversationId)}&limit=50`),
      api.approvals("pending")
    ])
    // After a run that did not complete, a line that says so: its last words are not an answer.
    const ended = new Map(runs.filter((r) => r.status === "cancelled" || r.status === "failed").map((r) => [r.id, r]))
    transcript.replaceChildren(...messages.flatMap((m, index) => {
      const run = ended.get(m.runId)
      const last = run !== undefined && messages[index + 1]?.runId !== m.runId
      return last
        ? [bubble(m, expanded), h("div", { class: "bubble system", "data-role": "system" },
          link(`/runs/${run.id}`, `run ${run.status}`), run.error === undefined ? "" : `: ${run.error}`)]
        : [bubble(m, expanded)]
    }))
    const ids = new Set(runs.map((r) => r.id))
    replace(waiting, pending.filter((a) => ids.has(a.runId)).map(card))
    // Every run of the conversation that has not ended: one waiting on a person while a later one answers, too.
    const live = runs.filter((r) => isLive(r.status))
    stop.classList.toggle("hidden", live.length === 0)
    stop.textContent = live.length > 1 ? `Stop ${live.length} runs` : "Stop"
    stop.onclick = () =>
      void Promise.allSettled(live.map((r) => api.cancel(r.id))).then((results) => {
        const refused = results.find((result) => result.status === "rejected")
        problem.textContent = refused === undefined ? "" : errorText(refused.reason)
        return draw()
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
  replace(root, title, about, totals, transcript, streaming, waiting,
    h("form", {
      class: "composer",
      onsubmit: (event) => {
        event.preventDefault()
        const text = message.value.trim()
        if (text === "" || agent === "") return
        message.value = ""
        problem.textContent = ""
        const pending = h("div", { class: "bubble user pending" }, text)
        transcript.append(pending)
        void api.send({ agent, instance, message: text, conversation: conversationId }).catch((error: unknown) => {
          // Not sent: the message goes back where it was typed, with why.
          pending.remove()
          if (message.value === "") message.value = text
          problem.textContent = errorText(error)
        })
      }
    }, message, h("button", { type: "submit" }, "Send"), stop),
    problem)
  void draw()
  return onEvent((event) => {
    if (event.conversationId !== conversationId) return
    if (event.type === "model.delta") {
      streaming.classList.remove("hidden")
      streaming.textContent = (streaming.textContent ?? "") + event.data.text
    } else if (
      event.type === "model.turn.completed" || event.type === "tool.call.completed" || event.type.startsWith("run.") ||
      event.type.startsWith("approval.")
    ) {
      // A turn's answer is in the transcript now; a run that ended mid-answer streams no more.
      if (event.type === "model.turn.completed" || event.type === "run.cancelled" || event.type === "run.failed") {
        streaming.textContent = ""
        streaming.classList.add("hidden")
      }
      void draw()
    }
  })
}

