/**
 * Watches a project folder for changes to route files and the config, debounced so that an
 * editor's save (several events) causes one rebuild.
 */
import { watch } from "node:fs"
import { Duration, Effect, Stream } from "effect"
import { configFiles, routeFolders } from "./RoutePath.js"

const watched = (file: string): boolean => {
  const normalized = file.split("\\").join("/")
  const top = normalized.split("/")[0] ?? ""
  return (routeFolders.includes(top) || configFiles.includes(normalized)) && !normalized.includes("node_modules/")
}

/** One element per settled burst of changes under `root`. */
export const watchProject = (root: string, debounce: Duration.DurationInput = Duration.millis(150)): Stream.Stream<void> =>
  Stream.async<void>((emit) => {
    const watcher = watch(root, { recursive: true }, (_event, file) => {
      if (file !== null && watched(file)) void emit.single(undefined)
    })
    // What `register` returns runs when the stream ends.
    return Effect.sync(() => watcher.close())
  }).pipe(Stream.debounce(debounce))
