/**
 * A run's artifacts: each file it presented with its caption, path, size, a download link and a
 * preview. Artifacts never change, so each preview is asked for once per page and kept.
 */
import { api, type ArtifactPreview, type ArtifactView } from "./api.js"
import { errorText, h } from "./dom.js"
import { fileSize, previewElement } from "./preview.js"

/** Previews by artifact id, kept across a page's redraws. */
export type PreviewCache = Map<string, Promise<ArtifactPreview>>

const nameOf = (path: string): string => path.slice(path.lastIndexOf("/") + 1)

const artifactCard = (artifact: ArtifactView, previews: PreviewCache) => {
  const name = nameOf(artifact.path)
  const slot = h("div", { class: "artifact-preview" }, h("p", { class: "muted" }, "Loading the preview…"))
  let preview = previews.get(artifact.id)
  if (preview === undefined) {
    preview = api.artifactPreview(artifact.id)
    previews.set(artifact.id, preview)
    // A failed preview is asked for again on the next redraw.
    preview.catch(() => previews.delete(artifact.id))
  }
  void preview.then(
    (shown) => slot.replaceChildren(previewElement(shown, artifact.url, artifact.caption ?? name)),
    (error: unknown) => slot.replaceChildren(h("p", { class: "error-line" }, errorText(error)))
  )
  return h("div", { class: "card artifact", "data-artifact": artifact.id },
    h("div", {},
      h("b", { "data-testid": "artifact-caption" }, artifact.caption ?? name), " ",
      h("code", {}, artifact.path),
      h("span", { class: "muted" }, ` · ${fileSize(artifact.size)} · ${artifact.mediaType} · `),
      h("a", { href: artifact.url, download: name, "data-testid": "artifact-download" }, "download")),
    slot)
}

/** The "Artifacts" section of a run's page, or nothing when the run presented no file. */
export const artifactsSection = (artifacts: ReadonlyArray<ArtifactView>, previews: PreviewCache) =>
  artifacts.length === 0 ? null : h("section", { "data-testid": "artifacts" },
    h("h2", {}, `Artifacts (${artifacts.length})`),
    artifacts.map((artifact) => artifactCard(artifact, previews)))
