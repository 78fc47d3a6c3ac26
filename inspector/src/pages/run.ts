/**
 * A run: errors first, then its agent, instance and the release it ran on; while it has not ended,
 * what stops it (cancel, or steer: cancel and go on in its conversation with another message);
 * the files it presented
 * (with previews), the waterfall of its trace (model turns, tool calls with their input and
 * output and, for a timer tool, the timer it armed and when it fires, approvals, child runs as
 * nested rows; a model turn says how its context was compacted, what the summary calls took, and
 * which of its calls failed and were asked again or handed to the next model),
 * tokens and durations per span, links to the
 * parent and child runs, and the raw events.
 */
import { ApiError, api, type FoundryEvent, type RunView } from "../api.js"
import { approvalCards } from "../approvalCard.js"
import { artifactsSection, type PreviewCache } from "../artifacts.js"
import { clock, duration, errorText, h, json, link, replace } from "../dom.js"
import { liveDraw } from "../liveDraw.js"
import { navigate } from "../navigate.js"
import { usageLine } from "../usage.js"
import { instanceHref, isLive, runStatus } from "../records.js"
import { buildWaitOf, type Span, spansOf, thousands } from "../runSpans.js"

/** A titled list of a span's notes (its compaction steps, its failed calls); nothing when there are none. */
const notes = (title: string, testId: string, lines: ReadonlyArray<string>) =>
  lines.length === 0 ? null : h("div", {}, h("b", {}, title), h("ul", { class: "span-notes", "data-testid": testId }, lines.map((line) => h("li", {}, line))))

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === "object" && value !== null

/** Token usage of a model turn, when the span has it. */
const tokens = (usage: unknown): { readonly input: number; readonly output: number } | undefined =>
  isRecord(usage) && typeof usage.inputTokens === "number" && typeof usage.outputTokens === "number"
    ? { input: usage.inputTokens, output: usage.outputTokens }
    : undefined

/**
 * Cancel and steer, for a run that has not ended; what went wrong shows beside them. Made once per
 * page, so that a steer half typed outlives the redraws the run's events bring.
 */
const controls = (runId: string, redraw: () => void) => {
  const problem = h("span", { class: "error-line", "data-testid": "run-control-error" })
  const failed = (error: unknown) => {
    problem.textContent = errorText(error)
  }
  const message = h("input", { name: "steer", placeholder: "Steer: cancel and go on with this message", autocomplete: "off" })
  return h("div", { class: "actions run-controls" },
    h("button", { class: "cancel", onclick: () => void api.cancel(runId).then(redraw, failed) }, "Cancel run"),
    h("form", {
      class: "composer",
      onsubmit: (event) => {
        event.preventDefault()
        const text = message.value.trim()
        if (text === "") {
          problem.textContent = "type the message the run should go on with, then Steer"
          return
        }
        problem.textContent = ""
        void api.steer(runId, text).then((steered) => navigate(`/runs/${steered.runId}`), failed)
      }
    }, message, h("button", { type: "submit" }, "Steer")),
    problem)
}

/**
 * Whether `event` is of a run the page of run `runId` shows besides its own: a child run it lists
 * (its status), or one that starts as its child or in its place (a steer: "steered to").
 */
const showsRunOf = (runId: string, childIds: ReadonlySet<string>, event: FoundryEvent): boolean =>
  event.type.startsWith("run.") &&
  (childIds.has(event.runId) || (event.type === "run.queued" && (event.data.parentRunId === runId || event.data.steeredFrom === runId)))

/** The run page. */
export const runPage = (root: HTMLElement, [runId = ""]: ReadonlyArray<string>) => {
  // Spans a reader has folded or unfolded: tools start unfolded, every other span folded.
  const toggled = new Set<string>()
  const previews: PreviewCache = new Map()
  const live = controls(runId, () => page.redraw())
  const card = approvalCards({ decided: () => page.redraw(), showRun: false })
  const problem = h("p", { class: "error-line", "data-testid": "page-problem" })
  // Whether the reader opened the raw events: kept across the redraws the run's events bring.
  let rawOpen = false
  // A run still going is drawn up to now: its open spans grow every second between redraws.
  let ticking: ReturnType<typeof setInterval> | undefined
  // The run's events read so far, in order: a redraw reads only those after the last of them. Read
  // whole on every event of the run, a long run's history (up to 100,000 events) spent the token's
  // rate limit, and every page on it was refused.
  const events: Array<FoundryEvent> = []
  const readEvents = async (): Promise<void> => {
    const last = events[events.length - 1]
    if (last === undefined) {
      events.push(...await api.runEvents(runId))
      return
    }
    for (let after = last.seq; ;) {
      const page = await api.events(new URLSearchParams({ runId, after: String(after), limit: "1000" }))
      events.push(...page.events)
      if (page.nextAfter === undefined) return
      after = page.nextAfter
    }
  }
  // The child runs listed, whose status the page shows: their own events redraw it too.
  let childIds = new Set<string>()
  const draw = async (stopped: AbortSignal) => {
    clearInterval(ticking)
    let run: RunView
    try {
      run = await api.run(runId)
    } catch (error) {
      if (error instanceof ApiError && error.status !== 404) throw error
      replace(root, h("h1", {}, "Run not found"), h("p", { class: "error-line" }, errorText(error)))
      return
    }
    const [, children, approvals, artifacts, successor] = await Promise.all([
      readEvents(),
      api.runs(`?parent=${encodeURIComponent(runId)}&limit=1000`),
      api.approvals({ status: "pending", run: runId }),
      api.artifacts(runId).then(({ artifacts }) => artifacts, () => []),
      // A cancelled run may have been steered: the run that went on in its place is in its conversation.
      run.status === "cancelled"
        ? api.runs(`?conversation=${encodeURIComponent(run.conversationId)}&limit=50`).then((runs) => runs.find((r) => r.steeredFrom === runId))
        : undefined
    ])
    // Left while it read: what it draws would go nowhere, and its clock would tick for ever.
    if (stopped.aborted) return
    childIds = new Set(children.map((child) => child.id))
    const spans = spansOf(events)
    const waitsForBuild = run.status === "suspended" ? buildWaitOf(events) : undefined
    const start = events[0]?.time ?? run.createdAt
    const lastEvent = Math.max(...events.map((e) => e.time), start + 1)
    const going = isLive(run.status)
    const placed: Array<{ readonly span: Span; readonly bar: HTMLElement; readonly took: HTMLElement }> = []
    /** The bars as of `now` (the last event's time once the run has ended), and how long each open span has taken so far. */
    const place = (now: number) => {
      const end = going ? Math.max(lastEvent, now) : lastEvent
      const width = end - start
      for (const { bar, span, took } of placed) {
        const left = ((span.start - start) / width) * 100
        const size = Math.max((((span.end ?? end) - span.start) / width) * 100, 0.5)
        bar.style.left = `${left}%`
        bar.style.width = `${size}%`
        if (span.end === undefined && going) took.textContent = `${duration(end - span.start)} so far`
      }
    }
    const depth = (span: Span): number => span.parent !== null && spans.has(span.parent) ? 1 + depth(spans.get(span.parent)!) : 0
    const waterfall = [...spans.values()].filter((s) => s.kind !== "").map((span) => {
      const bar = h("span", { class: "bar" })
      const took = h("span", { "data-testid": "span-took" }, duration(span.end === undefined ? undefined : span.end - span.start))
      placed.push({ span, bar, took })
      const usage = tokens(span.detail.usage)
      const open = span.kind === "tool" ? !toggled.has(span.id) : toggled.has(span.id)
      const childRun = typeof span.detail.childRunId === "string" ? span.detail.childRunId : undefined
      return h("div", { class: `span ${span.kind} ${span.status}`, "data-span": span.id, "data-kind": span.kind },
        // A button, so that a keyboard reaches and opens it as a pointer does.
        h("button", {
          type: "button",
          class: "span-row",
          "aria-expanded": String(open),
          style: `padding-left: ${depth(span) * 16}px`,
          onclick: () => {
            if (toggled.has(span.id)) toggled.delete(span.id)
            else toggled.add(span.id)
            page.redraw()
          }
        },
          h("span", { class: "span-label" }, open ? "▾ " : "▸ ", span.label,
            span.compaction.length === 0 ? null : h("span", { class: "tag", "data-testid": "span-compacted" }, "compacted"),
            span.retries.length === 0 ? null : h("span", { class: "tag", "data-testid": "span-retried" }, span.fellBack ? "fell back" : "retried"),
            span.skipped.length === 0 ? null : h("span", { class: "tag", "data-testid": "span-skipped" }, "installations left out"),
            span.cutResults.length === 0 ? null : h("span", { class: "tag", "data-testid": "span-client-results-cut" }, "client results cut")),
          h("span", { class: "span-track" }, bar),
          h("span", { class: "span-meta" }, took,
            usage === undefined ? "" : ` · ${usage.input}/${usage.output} tok`,
            span.summaryTokens === undefined ? "" : ` + ${span.summaryTokens.input}/${span.summaryTokens.output} summary`)),
        open ? h("div", { class: "span-detail" },
          notes("failed calls", "span-retries", span.retries),
          notes("installations of the instance left out of this run", "span-skipped-installations", span.skipped),
          notes("context compacted before this turn", "span-compaction", span.compaction),
          // What the client sent whole, where the model was sent it cut to the agent's result limit.
          span.cutResults.length === 0 ? null : h("div", { "data-testid": "span-cut-results" },
            h("b", {}, "tool results the client sent, cut for the model (whole here)"),
            span.cutResults.map((result) => h("div", {},
              h("div", {}, result.tool, " · call ", h("code", {}, result.toolCallId), ` · ${thousands(result.output.length)} characters`),
              h("pre", {}, result.output)))),
          span.detail.input === undefined ? null : h("div", {}, h("b", {}, "input"), h("pre", { "data-testid": "span-input" }, json(span.detail.input))),
          span.detail.output === undefined ? null : h("div", {}, h("b", {}, "output"), h("pre", { "data-testid": "span-output" }, json(span.detail.output))),
          span.detail.error === undefined ? null : h("div", { class: "error-line" }, String(span.detail.error)),
          typeof span.detail.timerId !== "string" || typeof span.detail.firesAt !== "string" ? null : h("div", { "data-testid": "span-timer" },
            "armed timer ", link("/schedules", h("code", {}, span.detail.timerId)), ", fires ",
            h("time", { datetime: span.detail.firesAt }, clock(Date.parse(span.detail.firesAt)))),
          // What became of an approval, and why: "expired" alone reads as a timeout when the run's cancel closed it.
          typeof span.detail.decision !== "string" ? null : h("div", { "data-testid": "span-decision" },
            h("span", { class: `status ${span.detail.decision}` }, span.detail.decision),
            typeof span.detail.reason === "string" ? ` · ${span.detail.reason}` : ""),
          childRun === undefined ? null : h("div", {}, "child run ", link(`/runs/${childRun}`, childRun)),
          open && typeof span.detail.text === "string" && span.detail.text !== "" ? h("pre", {}, span.detail.text) : null,
          open && Array.isArray(span.detail.toolCalls) && span.detail.toolCalls.length > 0
            ? h("div", {}, h("b", {}, "tool calls"), h("pre", {}, json(span.detail.toolCalls)))
            : null) : null)
    })
    const scroll = window.scrollY
    // The row that had the focus has it again once redrawn (it is made anew).
    const focusedSpan = document.activeElement?.closest("[data-span]")?.getAttribute("data-span") ?? undefined
    replace(root,
      h("h1", {}, "Run ", h("code", {}, run.id)),
      run.error === undefined ? null : h("div", { class: "error-box", "data-testid": "run-error" }, run.error),
      waitsForBuild === undefined ? null : h("div", { class: "error-box", "data-testid": "run-waits-for-build" },
        "Waits for a build with its agent: ", h("code", {}, waitsForBuild.file), " does not build (", waitsForBuild.problem,
        "). It goes on once the file builds again."),
      h("p", {}, runStatus(run.status), " ", link(`/agents/${run.agent}`, run.agent), " · instance ", link(instanceHref(run.agent, run.instanceId), run.instanceId), " · ",
        link(`/conversations/${run.conversationId}`, "conversation"),
        run.parentRunId === undefined ? null : [" · parent ", link(`/runs/${run.parentRunId}`, run.parentRunId)],
        run.steeredFrom === undefined ? null : [" · steered from ", link(`/runs/${run.steeredFrom}`, run.steeredFrom)],
        successor === undefined ? null : h("span", { "data-testid": "steered-to" }, " · steered to ", link(`/runs/${successor.id}`, successor.id)),
        // A deployed release is on the releases page; a dev build of the sources (`dev-<hash>`) is not.
        run.release === undefined ? null : h("span", { "data-testid": "run-release" }, " · release ",
          run.release.startsWith("rel_") ? link("/releases", h("code", {}, run.release)) : h("code", {}, run.release))),
      h("p", { class: "muted", "data-testid": "run-usage" }, usageLine(run.usage)),
      problem,
      isLive(run.status) ? live : null,
      approvals.map(card),
      h("section", {}, h("h2", {}, "Input"), h("pre", {}, run.input)),
      run.output === undefined ? null : h("section", {}, h("h2", {}, "Output"), h("pre", { "data-testid": "run-output" }, run.output)),
      artifactsSection(artifacts, previews),
      h("section", {}, h("h2", {}, "Timeline"), h("div", { class: "waterfall", "data-testid": "waterfall" }, waterfall)),
      children.length === 0 ? null : h("section", {}, h("h2", {}, "Child runs"),
        h("ul", { class: "list" }, children.map((c) => h("li", {}, runStatus(c.status), " ", link(`/runs/${c.id}`, `${c.agent} ${c.id}`))))),
      h("details", {
        open: rawOpen,
        ontoggle: (event) => {
          if (event.currentTarget instanceof HTMLDetailsElement) rawOpen = event.currentTarget.open
        }
      }, h("summary", {}, `Raw events (${events.length})`),
        h("pre", { class: "raw" }, events.map((e) => `${e.seq} ${e.type} ${JSON.stringify(e.data)}`).join("\n"))))
    place(Date.now())
    if (going && placed.some(({ span }) => span.end === undefined)) ticking = setInterval(() => place(Date.now()), 1000)
    if (focusedSpan !== undefined) {
      for (const span of root.querySelectorAll<HTMLElement>("[data-span]")) {
        if (span.dataset.span === focusedSpan) span.querySelector<HTMLElement>(".span-row")?.focus({ preventScroll: true })
      }
    }
    window.scrollTo(0, scroll)
  }
  const page = liveDraw(draw, {
    problem,
    shows: (event) => event.type !== "model.delta" && (event.runId === runId || showsRunOf(runId, childIds, event)),
    // As the overview: a busy run's events make a draw every two seconds at most.
    delay: 2000
  })
  return () => {
    clearInterval(ticking)
    page.stop()
  }
}
