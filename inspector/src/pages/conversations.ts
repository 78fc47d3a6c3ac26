/**
 * Conversations: the stored transcript as a chat, tool calls inline and expandable, and a box to
 * send a message and watch the reply stream in.
 */
import { usageLine } from "../usage.js"
import { api, type MessageView, onEvent } from "../api.js"
import { clock, errorText, h, link, replace } from "../dom.js"
import { navigate } from "../navigate.js"
import { instanceHref } from "./instances.js"

/** The conversations page: recent conversations, and a new one with any agent. */
export const conversationsPage = (root: HTMLElement) => {
  const agent = h("select", { name: "agent" })
  const message = h("input", { name: "message", placeholder: "Say something to start a conversation", autocomplete: "off" })
  const list = h("ul", { class: "list" })
  replace(root,
    h("h1", {}, "Conversations"),
    h("form", {
      class: "composer",
      onsubmit: (event) => {
        event.preventDefault()
        if (message.value.trim() === "") return
        void api.send({ agent: agent.value, message: message.value }).then((r) => navigate(`/conversations/${r.conversationId}`))
      }
    }, agent, message, h("button", { type: "submit" }, "Start")),
    list)
  void api.routes().then((r) => agent.replaceChildren(...r.routes.filter((x) => x.kind === "agent").map((x) => h("option", { value: x.id }, x.id))))
  void api.runs("?limit=200").then((runs) => {
    const seen = new Map<string, (typeof runs)[number]>()
    for (const run of runs) if (!seen.has(run.conversationId)) seen.set(run.conversationId, run)
    list.replaceChildren(...[...seen.values()].map((run) =>
      h("li", {}, link(`/conversations/${run.conversationId}`, run.agent), " ", h("span", { class: "muted" }, `${run.instanceId} · ${clock(run.createdAt)}`),
        h("div", { class: "clip muted" }, run.input))))
  })
  return () => {}
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
  let activeRun: string | undefined
  const totals = h("p", { class: "muted", "data-testid": "conversation-usage" })
  const draw = async () => {
    let messages: Awaited<ReturnType<typeof api.messages>>
    try {
      messages = await api.messages(conversationId)
    } catch (error) {
      // As an unknown run's page says so: no composer that could send into nothing.
      replace(root, h("h1", {}, "Conversation not found"), h("p", { class: "error-line" }, errorText(error)))
      return
    }
    const [usage, cluster] = await Promise.all([
      api.usage(`?conversation=${encodeURIComponent(conversationId)}&groupBy=conversation`),
      api.cluster()
    ])
    transcript.replaceChildren(...messages.map((m) => bubble(m, expanded)))
    // In a cluster, where the conversation's runs execute.
    const placement = cluster.mode === "cluster" ? await api.placement(conversationId) : undefined
    const where = placement === undefined ? "" : ` · runner ${placement.runner ?? "(moving)"}, shard ${placement.shard}`
    totals.textContent = `${usage.total.runs} runs · ${usageLine(usage.total)}${where}`
    const first = messages[0]
    if (first !== undefined && agent === "") {
      const run = await api.run(first.runId)
      agent = run.agent
      instance = run.instanceId
      title.textContent = `Conversation with ${agent}`
      replace(about, "instance ", link(instanceHref(agent, instance), instance))
    }
  }
  const title = h("h1", {}, "Conversation")
  const about = h("p", { class: "muted", "data-testid": "conversation-instance" })
  replace(root, title, about, totals, transcript, streaming,
    h("form", {
      class: "composer",
      onsubmit: (event) => {
        event.preventDefault()
        const text = message.value.trim()
        if (text === "" || agent === "") return
        message.value = ""
        transcript.append(h("div", { class: "bubble user pending" }, text))
        void api.send({ agent, instance, message: text, conversation: conversationId }).then((r) => {
          activeRun = r.runId
        })
      }
    }, message, h("button", { type: "submit" }, "Send")))
  void draw()
  return onEvent((event) => {
    if (event.conversationId !== conversationId) return
    if (event.type === "model.delta") {
      activeRun = event.runId
      streaming.classList.remove("hidden")
      streaming.textContent = (streaming.textContent ?? "") + event.data.text
    } else if (event.type === "model.turn.completed" || event.type === "tool.call.completed" || event.type.startsWith("run.")) {
      if (event.type === "model.turn.completed") {
        streaming.textContent = ""
        streaming.classList.add("hidden")
      }
      void draw()
    }
    void activeRun
  })
}

