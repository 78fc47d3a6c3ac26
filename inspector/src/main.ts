/**
 * The inspector: a small client-side router over the pages. Every page has a URL of its own
 * (deep links load directly); links move between pages without reloading.
 */
import { api, type Session } from "./api.js"
import { onEvent, streamFromNow } from "./liveEvents.js"
import { h, replace } from "./dom.js"
import { navigate } from "./navigate.js"
import { agentPage, agentsPage } from "./pages/agents.js"
import { approvalsPage } from "./pages/approvals.js"
import { conversationPage, conversationsPage } from "./pages/conversations.js"
import { instancePage, instancesPage } from "./pages/instances.js"
import { overviewPage } from "./pages/overview.js"
import { releasesPage } from "./pages/releases.js"
import { playbooksPage, schedulesPage } from "./pages/routes.js"
import { runPage } from "./pages/run.js"
import { runsPage } from "./pages/runs.js"

/**
 * A page draws itself into `root` and returns what stops its live updates. `root` is the page's
 * own element, taken out of the document when the page is left: a read of the page's still on its
 * way when the reader moved on (a first draw, a redraw its events brought, a button's answer)
 * draws into that, never over the page opened since.
 */
export type Page = (root: HTMLElement, params: ReadonlyArray<string>) => () => void

const routes: ReadonlyArray<readonly [RegExp, Page]> = [
  [/^\/$/, overviewPage],
  [/^\/agents$/, agentsPage],
  [/^\/agents\/(.+)$/, agentPage],
  [/^\/instances$/, instancesPage],
  // `/instances/<agent>/<id>`: agent ids hold slashes, instance ids never do; `/instances/<id>` when the id alone names it.
  [/^\/instances\/(?:(.+)\/)?([^/]+)$/, instancePage],
  [/^\/conversations$/, conversationsPage],
  [/^\/conversations\/([^/]+)$/, conversationPage],
  [/^\/runs$/, runsPage],
  [/^\/runs\/([^/]+)$/, runPage],
  [/^\/approvals$/, approvalsPage],
  [/^\/schedules$/, schedulesPage],
  [/^\/playbooks$/, playbooksPage],
  [/^\/releases$/, releasesPage]
]

/** The path as its pages name it; one that is not valid percent-encoding stays as it came (and is no page). */
const decodedPath = (raw: string): string => {
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

const app = document.getElementById("app")!
let stop: () => void = () => {}

const render = (): void => {
  stop()
  const path = decodedPath(location.pathname)
  for (const [pattern, page] of routes) {
    const match = pattern.exec(path)
    if (match !== null) {
      const own = h("div", { class: "page" })
      app.replaceChildren(own)
      stop = page(own, match.slice(1))
      for (const a of document.querySelectorAll("header nav a")) {
        const href = a.getAttribute("href") ?? ""
        a.classList.toggle("active", href === "/" ? path === "/" : path.startsWith(href))
      }
      return
    }
  }
  replace(app, h("h1", {}, "Not found"), h("p", {}, `There is no page at ${path}.`))
  stop = () => {}
}

document.addEventListener("click", (event) => {
  const target = event.target instanceof Element ? event.target.closest("a") : null
  if (target === null || target.origin !== location.origin || target.target !== "" || event.metaKey || event.ctrlKey) return
  if (target.pathname.startsWith("/api/")) return
  event.preventDefault()
  navigate(target.pathname + target.search)
})
window.addEventListener("popstate", render)

// The pending-approvals badge in the header follows the live stream on every page (a read that
// fails leaves it as it was: the page says why reads fail).
const badge = document.getElementById("pending-count")
const refreshBadge = (): void => {
  void api.approvals({ status: "pending" }).then((list) => {
    if (badge !== null) badge.textContent = list.length === 0 ? "" : String(list.length)
  }, () => undefined)
}

/** Who is signed in, and the way out, in the header (only when the server needs tokens). */
const showSession = (session: Session): void => {
  if (session.token === null) return
  const out = async (): Promise<void> => {
    await api.signOut()
    location.reload()
  }
  document.querySelector("header.top")?.append(
    h("span", { id: "session", class: "muted" }, `${session.token.name || session.token.id} (${session.token.scope}) `),
    h("button", { class: "linkish", onclick: () => void out() }, "sign out")
  )
}

// Signing in (when the server needs a token) comes before any page asks the API for data, and
// where the live stream starts is read before any page draws; a server that does not answer is
// each page's to report.
void api.session().then(showSession, () => undefined).then(streamFromNow).then(() => {
  onEvent((event) => {
    if (event.type.startsWith("approval.")) refreshBadge()
  })
  refreshBadge()
  render()
})
