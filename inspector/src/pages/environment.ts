/**
 * An instance's working environment on its page, read-only: the files as a tree of folders that
 * fold, a file's content on click (text as text, an image as an image, anything else by its size
 * and type), and the history of versions; choosing a version (or v0, the files the environment
 * starts with) browses the tree as it was then. It loads when the page opens and on "Refresh".
 */
import { api, ApiError, type EnvironmentAt, type EnvironmentFile, type EnvironmentView, type ConversationView, type InstanceRef } from "../api.js"
import { clock, errorText, h, link, replace } from "../dom.js"
import { fileSize } from "../preview.js"

/** A folder of the tree, built from the files' paths (the store keeps files only). */
interface Folder {
  readonly path: string
  readonly name: string
  readonly folders: Map<string, Folder>
  readonly files: Array<EnvironmentFile>
}

const folderTree = (files: ReadonlyArray<EnvironmentFile>): Folder => {
  const root: Folder = { path: "/", name: "/", folders: new Map(), files: [] }
  for (const file of files) {
    const parts = file.path.split("/").filter((part) => part !== "")
    let folder = root
    for (const part of parts.slice(0, -1)) {
      let next = folder.folders.get(part)
      if (next === undefined) {
        next = { path: `${folder.path === "/" ? "" : folder.path}/${part}`, name: part, folders: new Map(), files: [] }
        folder.folders.set(part, next)
      }
      folder = next
    }
    folder.files.push(file)
  }
  return root
}

const nameOf = (path: string): string => path.slice(path.lastIndexOf("/") + 1)

/** The environment browser of an instance's page: its element, and `open` to load it for an instance. */
export const environmentBrowser = () => {
  const element = h("div", { class: "environment", "data-testid": "environment" }, h("p", { class: "muted" }, "Loading the files…"))
  let ref: InstanceRef = { agent: "", id: "" }
  /** `undefined`: the latest version (or the starting files while there is none). */
  let version: number | undefined
  let conversation: string | undefined
  let selected: string | undefined
  const collapsed = new Set<string>()
  // Each load and each file shown starts a generation; an answer to an older one arrives too late to show.
  let loading = 0
  let showing = 0

  const at = (view: EnvironmentView): EnvironmentAt => ({
    version: view.version,
    ...(view.conversation === null ? {} : { conversation: view.conversation })
  })

  const fileElement = (view: EnvironmentView, slot: HTMLElement) => {
    const mine = ++showing
    const file = view.files.find((f) => f.path === selected)
    if (selected === undefined) return replace(slot, h("p", { class: "muted" }, "Choose a file to see its content."))
    if (file === undefined) return replace(slot, h("p", { class: "muted", "data-testid": "environment-file-missing" }, `${selected} is not in version ${view.version}.`))
    const url = api.environmentFileUrl(ref, file.path, at(view))
    const header = h("p", {}, h("code", {}, file.path), h("span", { class: "muted" }, ` · ${fileSize(file.size)} · ${file.mediaType} · `),
      h("a", { href: url, download: nameOf(file.path) }, "download"))
    if (file.mediaType.startsWith("image/") && !file.text) {
      return replace(slot, header, h("img", { class: "preview-image", src: url, alt: file.path, "data-testid": "environment-file-image" }))
    }
    if (!file.text) {
      return replace(slot, header, h("p", { class: "muted", "data-testid": "environment-file-binary" }, `A binary file of ${fileSize(file.size)} (${file.mediaType}).`))
    }
    replace(slot, header, h("p", { class: "muted" }, "Loading…"))
    void api.environmentText(ref, file.path, at(view)).then(
      (text) => {
        if (mine === showing) replace(slot, header, h("pre", { class: "env-text", "data-testid": "environment-file-text" }, text))
      },
      (error: unknown) => {
        if (mine === showing) replace(slot, header, h("p", { class: "error-line" }, errorText(error)))
      }
    )
  }

  const folderElement = (folder: Folder, onFile: (path: string) => void): HTMLElement =>
    h("ul", { class: "env-folder" },
      [...folder.folders.values()].sort((a, b) => a.name.localeCompare(b.name)).map((sub) =>
        h("li", {},
          h("details", {
            open: !collapsed.has(sub.path),
            "data-folder": sub.path,
            ontoggle: (event: Event) => {
              if (!(event.currentTarget instanceof HTMLDetailsElement)) return
              if (event.currentTarget.open) collapsed.delete(sub.path)
              else collapsed.add(sub.path)
            }
          }, h("summary", {}, `${sub.name}/`), folderElement(sub, onFile)))),
      folder.files.map((file) =>
        h("li", {},
          h("button", {
            class: `linkish env-file${file.path === selected ? " selected" : ""}`,
            "data-path": file.path,
            onclick: () => onFile(file.path)
          }, nameOf(file.path)),
          h("span", { class: "muted" }, ` ${fileSize(file.size)}`))))

  const versionPicker = (view: EnvironmentView) =>
    h("select", {
      "data-testid": "environment-version",
      onchange: (event: Event) => {
        if (!(event.currentTarget instanceof HTMLSelectElement)) return
        version = event.currentTarget.value === "" ? undefined : Number(event.currentTarget.value)
        void load()
      }
    },
      h("option", { value: "", ...(version === undefined ? { selected: true } : {}) }, view.head === 0 ? "latest (the starting files)" : `latest (v${view.head})`),
      view.history.map((entry) =>
        h("option", { value: String(entry.version), ...(version === entry.version ? { selected: true } : {}) }, `v${entry.version} · ${entry.kind} · ${entry.label}`)),
      h("option", { value: "0", ...(version === 0 ? { selected: true } : {}) }, "v0 · the starting files"))

  const conversationPicker = (view: EnvironmentView, talks: ReadonlyArray<ConversationView>) =>
    h("select", {
      "data-testid": "environment-conversation",
      onchange: (event: Event) => {
        if (!(event.currentTarget instanceof HTMLSelectElement)) return
        conversation = event.currentTarget.value
        version = undefined
        selected = undefined
        void load()
      }
    }, talks.map((talk) => h("option", { value: talk.id, ...(talk.id === view.conversation ? { selected: true } : {}) }, `conversation ${talk.id}`)))

  const historyTable = (view: EnvironmentView) =>
    view.history.length === 0
      ? h("p", { class: "muted" }, "No versions yet: the files are as the environment starts them.")
      : h("table", { class: "table", "data-testid": "environment-history" },
        h("thead", {}, h("tr", {}, ["version", "kind", "what", "run", "when", ""].map((c) => h("th", {}, c)))),
        h("tbody", {}, view.history.map((entry) =>
          h("tr", { "data-version": entry.version, class: entry.version === view.version ? "current" : "" },
            h("td", {}, `v${entry.version}`),
            h("td", {}, h("span", { class: "status" }, entry.kind)),
            h("td", {}, entry.label),
            h("td", {}, entry.runId === null ? "—" : link(`/runs/${entry.runId}`, entry.runId)),
            h("td", {}, clock(entry.createdAt)),
            h("td", {}, entry.version === view.version ? h("span", { class: "muted" }, "shown") : h("button", {
              class: "linkish",
              "data-testid": "browse-version",
              onclick: () => {
                version = entry.version
                void load()
              }
            }, "browse"))))))

  const render = (view: EnvironmentView, talks: ReadonlyArray<ConversationView>) => {
    const slot = h("div", { class: "env-content", "data-testid": "environment-file" })
    const tree = h("div", { class: "env-tree", "data-testid": "environment-tree" })
    const drawTree = () =>
      replace(tree, view.files.length === 0 ? h("p", { class: "muted" }, "No files.") : folderElement(folderTree(view.files), (path) => {
        selected = path
        drawTree()
        fileElement(view, slot)
      }))
    drawTree()
    fileElement(view, slot)
    const bytes = view.files.reduce((total, file) => total + file.size, 0)
    replace(element,
      h("div", { class: "filters" },
        view.persistence === "conversation" ? conversationPicker(view, talks) : null,
        versionPicker(view),
        h("button", { "data-testid": "environment-refresh", onclick: () => void load() }, "Refresh")),
      h("p", { class: "muted", "data-testid": "environment-summary" },
        `${view.environment} · `,
        view.version === 0 ? "the starting files (v0)" : `version ${view.version}${view.version === view.head ? " (latest)" : ` of ${view.head}`}`,
        ` · ${view.files.length} ${view.files.length === 1 ? "file" : "files"}, ${fileSize(bytes)}`),
      h("div", { class: "env-browser" }, tree, slot),
      h("h3", {}, "History"),
      historyTable(view))
  }

  const load = async (): Promise<void> => {
    const mine = ++loading
    try {
      const view = await api.environment(ref, { version, conversation })
      const talks = view.persistence === "conversation" ? await api.instanceConversations(ref) : []
      if (mine === loading) render(view, talks)
    } catch (error) {
      if (mine !== loading) return
      // Files kept per conversation, and no conversation yet: nothing is wrong, there are no files to show.
      if (conversation === undefined && error instanceof ApiError && error.tag === "ConversationNotFound") {
        replace(element, h("p", { class: "muted", "data-testid": "environment-no-conversation" },
          "Each conversation of this agent has its own files, and this instance has no conversation yet: start one above, then Refresh."),
          h("button", { "data-testid": "environment-refresh", onclick: () => void load() }, "Refresh"))
        return
      }
      replace(element, h("p", { class: "error-line", "data-testid": "environment-problem" }, errorText(error)),
        h("button", { "data-testid": "environment-refresh", onclick: () => void load() }, "Refresh"))
    }
  }

  /** Loads the environment of `instance` (its latest version). */
  const open = (instance: InstanceRef): Promise<void> => {
    ref = instance
    return load()
  }
  return { element, open }
}
