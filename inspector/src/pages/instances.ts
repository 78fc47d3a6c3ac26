/**
 * Instances: a searchable, paged list of every agent's instances, and an instance's page with its
 * context, installations (secrets shown only as redacted), status with pause, resume and archive,
 * conversations, schedules, environment and usage.
 */
import { ApiError, api, type InstallationView, type InstanceRef, type InstanceSummary, type InstanceView } from "../api.js"
import { onEvent } from "../liveEvents.js"
import { type Child, clock, counted, errorText, h, json, link, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"
import { barChart, dollars, usageLine } from "../usage.js"
import { instanceHref, instanceStatus, runStatus } from "../records.js"
import { startConversationForm } from "../startConversation.js"
import { environmentBrowser } from "./environment.js"

/** Where the API puts a secret field's value (src/instances/installationConfig.ts), never the value itself. */
const redactedMark = "<redacted>"

const row = (instance: InstanceSummary) =>
  h("tr", { "data-agent": instance.agent, "data-instance": instance.id },
    h("td", {}, link(`/agents/${instance.agent}`, instance.agent)),
    h("td", {}, link(instanceHref(instance.agent, instance.id), instance.id)),
    h("td", { class: "muted" }, instance.provisioningKey ?? "—"),
    h("td", {}, instanceStatus(instance.status)),
    h("td", {}, instance.installations),
    h("td", {}, clock(instance.updatedAt, "—")))

const summaryOf = (view: InstanceView): InstanceSummary => ({ ...view, installations: view.installations.length })

/** The instances page: filters live in the URL; "Load more" follows the API's cursor. */
export const instancesPage = (root: HTMLElement) => {
  const params = new URLSearchParams(location.search)
  const search = h("input", { name: "search", type: "search", placeholder: "search id or provisioning key", autocomplete: "off", value: params.get("search") ?? "" })
  const agent = h("select", { name: "agent" })
  const status = h("select", { name: "status" },
    ["", "active", "paused", "archived"].map((s) =>
      h("option", { value: s, ...(params.get("status") === s ? { selected: true } : {}) }, s === "" ? "any status" : s)))
  const tbody = h("tbody")
  const count = h("p", { class: "muted", "data-testid": "instances-count" })
  // Why the list could not be read, until it can.
  const unread = h("p", { class: "error-line", "data-testid": "page-problem" })
  // Why "Load more" loaded nothing, until it does.
  const problem = h("p", { class: "error-line", "data-testid": "load-problem" })
  const more = h("button", { class: "hidden", "data-testid": "load-more", onclick: () => void loadMore() }, "Load more")
  let next: string | null = null
  // What the list shows is read again from its first page: at first, and after the filters change.
  let fresh = true
  let agentsListed = false
  // Listed instances that changed since the last draw, by `agent/id`: redrawn in place, so the
  // list (and the reader's place in it) stays.
  const changed = new Map<string, InstanceRef>()
  // "Load more" after a change of filters would add a page of the old filters: each load is of one generation.
  let generation = 0

  const filters = () => {
    const query = new URLSearchParams()
    if (search.value.trim() !== "") query.set("search", search.value.trim())
    if (agent.value !== "") query.set("agent", agent.value)
    if (status.value !== "") query.set("status", status.value)
    return query
  }
  const showCount = () => {
    const shown = tbody.childElementCount
    count.textContent = next === null ? counted(shown, "instance") : `showing ${shown}; more to load`
    more.classList.toggle("hidden", next === null)
  }
  const listed = (ref: InstanceRef) =>
    [...tbody.querySelectorAll<HTMLTableRowElement>("tr[data-instance]")].find((tr) => tr.dataset.agent === ref.agent && tr.dataset.instance === ref.id)

  const draw = async (): Promise<void> => {
    // The agent filter lists the project's agents; the first page waits for it, so a filter from the URL applies.
    if (!agentsListed) {
      const { routes } = await api.routes()
      const wanted = params.get("agent") ?? ""
      const agents = routes.filter((r) => r.kind === "agent").map((r) => r.id)
      replace(agent, h("option", { value: "" }, "any agent"),
        [...new Set([...agents, ...(wanted === "" ? [] : [wanted])])].map((id) => h("option", { value: id, ...(id === wanted ? { selected: true } : {}) }, id)))
      agentsListed = true
    }
    if (fresh) {
      const mine = generation
      fresh = false
      changed.clear()
      try {
        const page = await api.instances(filters())
        // The filters changed while this page was on its way: the next draw reads theirs.
        if (mine !== generation) return
        tbody.replaceChildren(...page.instances.map(row))
        next = page.next
        problem.textContent = ""
        showCount()
      } catch (error) {
        fresh = true
        throw error
      }
      return
    }
    const refs = [...changed.values()]
    changed.clear()
    try {
      // One gone since (a 404) stays as it was listed: there is nothing newer to show of it.
      const views = await Promise.all(refs.map((ref) =>
        api.instance(ref).catch((error: unknown) => {
          if (error instanceof ApiError && error.status === 404) return undefined
          throw error
        })))
      for (const view of views) if (view !== undefined) listed({ agent: view.agent, id: view.id })?.replaceWith(row(summaryOf(view)))
    } catch (error) {
      for (const ref of refs) changed.set(`${ref.agent}/${ref.id}`, ref)
      throw error
    }
  }
  const loadMore = async () => {
    if (next === null) return
    const mine = generation
    const query = filters()
    query.set("after", next)
    more.setAttribute("disabled", "")
    try {
      const page = await api.instances(query)
      if (mine !== generation) return
      tbody.append(...page.instances.map(row))
      next = page.next
      problem.textContent = ""
      showCount()
    } catch (error) {
      if (mine === generation) problem.textContent = errorText(error)
    } finally {
      more.removeAttribute("disabled")
    }
  }
  const apply = () => {
    const query = filters()
    history.replaceState(null, "", `/instances${query.size > 0 ? `?${query}` : ""}`)
    fresh = true
    generation++
    live.redraw()
  }
  let typing: ReturnType<typeof setTimeout> | undefined
  search.addEventListener("input", () => {
    clearTimeout(typing)
    typing = setTimeout(apply, 250)
  })
  agent.addEventListener("change", apply)
  status.addEventListener("change", apply)

  replace(root,
    h("h1", {}, "Instances"),
    h("div", { class: "filters" }, search, agent, status),
    count,
    unread,
    problem,
    h("table", { class: "table", "data-testid": "instances" },
      h("thead", {}, h("tr", {}, ["agent", "id", "provisioning key", "status", "installations", "updated"].map((c) => h("th", {}, c)))),
      tbody),
    h("p", {}, more))

  const live = liveDraw(draw, { problem: unread })
  const unsubscribe = onEvent((event) => {
    if (!event.type.startsWith("instance.") || event.type === "instance.created") return
    const ref = { agent: event.agent, id: event.instanceId }
    if (listed(ref) === undefined) return
    changed.set(`${ref.agent}/${ref.id}`, ref)
    live.redraw()
  })
  return () => {
    clearTimeout(typing)
    live.stop()
    unsubscribe()
  }
}

/** A config value: objects as nested fields, a secret as a pill (the API never sends its value). */
const configValue = (value: unknown): Child => {
  if (value === redactedMark) return h("span", { class: "redacted", title: "a secret: stored encrypted, never shown" }, "redacted")
  if (Array.isArray(value)) return h("ol", { class: "config" }, value.map((item) => h("li", {}, configValue(item))))
  if (typeof value === "object" && value !== null) {
    return h("dl", { class: "config" }, Object.entries(value).flatMap(([field, item]) => [h("dt", {}, field), h("dd", {}, configValue(item))]))
  }
  return h("code", {}, JSON.stringify(value) ?? String(value))
}

const installationCard = (installation: InstallationView) =>
  h("div", { class: "card", "data-installation": `${installation.kind}:${installation.id}` },
    h("div", {}, h("span", { class: "status" }, installation.kind), " ", h("b", {}, installation.id),
      h("span", { class: "muted" }, ` · installed ${clock(installation.createdAt, "—")}`,
        installation.updatedAt === installation.createdAt ? "" : ` · changed ${clock(installation.updatedAt, "—")}`)),
    configValue(installation.config))

/** One instance's page; `agent` is empty when the link names the instance by id alone. */
export const instancePage = (root: HTMLElement, [agent = "", id = ""]: ReadonlyArray<string>) => {
  let ref: InstanceRef = { agent, id }
  const title = h("h1", {}, `Instance ${id}`)
  const about = h("p", { class: "muted" })
  const state = h("section", { class: "card", "data-testid": "instance-status" })
  const context = h("pre", { "data-testid": "instance-context" })
  const installations = h("div", { "data-testid": "installations" })
  const conversations = h("div", { "data-testid": "instance-conversations" })
  const schedules = h("div", { "data-testid": "instance-schedules" })
  const environment = h("p", { "data-testid": "instance-environment" })
  const files = environmentBrowser()
  // Shown once the instance is known to have an environment: until then there are no files to load.
  files.element.classList.add("hidden")
  // The files load once, then on the browser's "Refresh": a redraw for every run event would lose the reader's place.
  let filesOpened = false
  const usage = h("div", { "data-testid": "instance-usage" })
  // What a button could not do, or which instance an id shared by several agents' means.
  const problem = h("p", { class: "error-line", "data-testid": "instance-problem" })
  // Why the page could not be read, until it can.
  const unread = h("p", { class: "error-line", "data-testid": "page-problem" })
  const owners = h("ul", { class: "list", "data-testid": "instance-owners" })
  const talk = startConversationForm({
    fields: [],
    to: () => ({ agent: ref.agent, instance: ref.id }),
    problem,
    placeholder: "Say something to start a conversation with this instance",
    testId: "instance-composer"
  })
  replace(root, title, about, state, unread, problem, owners,
    h("h2", {}, "Context"), context,
    h("h2", {}, "Installations"), installations,
    h("h2", {}, "Conversations"), talk, conversations,
    h("h2", {}, "Schedules"), schedules,
    h("h2", {}, "Environment"), environment, files.element,
    h("h2", {}, "Usage (30 days)"), usage)

  const act = (change: Promise<InstanceView>) => {
    problem.textContent = ""
    void change.then(() => live.redraw(), (error: unknown) => {
      problem.textContent = errorText(error)
    })
  }
  const drawState = (view: InstanceView) =>
    replace(state,
      h("p", {}, instanceStatus(view.status), view.statusReason === null ? null : h("span", { class: "muted" }, ` ${view.statusReason}`)),
      view.status === "archived"
        ? h("p", { class: "muted" }, "Archived: it takes no new runs and keeps its history.")
        : h("p", {},
          view.status === "paused"
            ? h("button", { "data-testid": "resume", onclick: () => act(api.pauseInstance(ref, false)) }, "Resume")
            : h("button", { "data-testid": "pause", onclick: () => act(api.pauseInstance(ref, true, "paused in the inspector")) }, "Pause"),
          " ",
          h("button", {
            class: "deny",
            "data-testid": "archive",
            onclick: () => {
              if (confirm(`Archive ${view.id}? It will refuse new runs and keep its history.`)) act(api.archiveInstance(ref))
            }
          }, "Archive")))

  const draw = async (): Promise<void> => {
    let view: InstanceView
    try {
      view = await api.instance(ref)
    } catch (error) {
      if (!(error instanceof ApiError) || (error.status !== 404 && !(error.status === 400 && agent === ""))) throw error
      if (error.status === 404) {
        replace(root, h("h1", {}, "No such instance"), h("p", {}, agent === "" ? id : `${agent} / ${id}`))
        return
      }
      // An id that several agents' instances have: a link to each of them.
      problem.textContent = errorText(error)
      const { instances } = await api.instances(new URLSearchParams({ search: id, limit: "100" }))
      replace(owners, instances.filter((instance) => instance.id === id).map((instance) =>
        h("li", {}, link(instanceHref(instance.agent, instance.id), `${instance.agent} / ${instance.id}`))))
      return
    }
    ref = { agent: view.agent, id: view.id }
    const since = Date.now() - 30 * 24 * 60 * 60 * 1000
    const [{ routes }, talks, allSchedules, report] = await Promise.all([
      api.routes(),
      api.instanceConversations(ref),
      api.schedules(),
      api.usage(`?agent=${encodeURIComponent(view.agent)}&instance=${encodeURIComponent(view.id)}&groupBy=day&since=${since}`)
    ])
    title.textContent = `Instance ${view.id}`
    replace(about, "of ", link(`/agents/${view.agent}`, view.agent),
      view.provisioningKey === null ? null : [" · provisioning key ", h("code", {}, view.provisioningKey)],
      ` · created ${clock(view.createdAt, "—")} · updated ${clock(view.updatedAt, "—")}`)
    drawState(view)
    // An archived instance takes no runs: nothing to offer a message to.
    talk.classList.toggle("hidden", view.status === "archived")
    context.textContent = json(view.context)
    replace(installations, view.installations.length === 0 ? h("p", { class: "muted" }, "Nothing installed.") : view.installations.map(installationCard))
    replace(conversations, talks.length === 0 ? h("p", { class: "muted" }, "No conversations yet.") :
      h("ul", { class: "list" }, talks.map((talk) =>
        h("li", { "data-conversation": talk.id }, link(`/conversations/${talk.id}`, talk.id), " ",
          h("span", { class: "muted" }, `${counted(talk.runs, "run")} · updated ${clock(talk.updatedAt, "—")}`),
          talk.lastRun === null ? null : [" · last ", runStatus(talk.lastRun.status), " ", link(`/runs/${talk.lastRun.id}`, "run")]))))
    const mine = allSchedules.filter((s) => s.agent === view.agent && s.instance === view.id)
    replace(schedules, mine.length === 0 ? h("p", { class: "muted" }, "No schedules.") :
      h("ul", { class: "list" }, mine.map((s) =>
        h("li", { "data-schedule": s.id }, link("/schedules", s.id), " ", h("code", {}, Object.entries(s.timing).map(([k, v]) => `${k} ${v}`).join(", ")),
          h("span", { class: "muted" }, ` · ${s.status}${s.nextFire === null ? "" : ` · next ${clock(s.nextFire, "—")}`}`),
          // A done timer (or schedule) says why it fires no more, as the API gives it.
          s.reason === null ? null : h("span", { class: "muted", "data-testid": "schedule-reason" }, `: ${s.reason}`)))))
    const route = routes.find((r) => r.kind === "agent" && r.id === view.agent)
    environment.textContent = route?.environment ?? "none"
    files.element.classList.toggle("hidden", route?.environment === undefined)
    if (route?.environment !== undefined && !filesOpened) {
      filesOpened = true
      void files.open(ref)
    }
    replace(usage,
      h("p", { class: "muted" }, `${counted(report.total.runs, "run")} · ${usageLine(report.total)}`),
      h("div", { class: "charts" },
        barChart("tokens per day", report.rows.map((r) => ({ label: r.day ?? "", value: r.inputTokens + r.outputTokens })), (n) => n.toLocaleString()),
        barChart("cost per day", report.rows.map((r) => ({ label: r.day ?? "", value: r.costUsd })), dollars)))
  }
  const live = liveDraw(draw, {
    problem: unread,
    shows: (event) =>
      event.instanceId === ref.id && (ref.agent === "" || event.agent === ref.agent) &&
      (event.type.startsWith("instance.") || event.type.startsWith("run.")),
    delay: 200
  })
  return live.stop
}
