/**
 * A broken route file: one error per file, naming the file, what is wrong and how to fix it.
 */
import { Schema } from "effect"

/** One broken route file. */
export class RouteError extends Schema.TaggedError<RouteError>()("RouteError", {
  /** The file, relative to the project folder. */
  file: Schema.String,
  problem: Schema.String,
  fix: Schema.String,
  /** The place (`lib/util.ts:2:1`) in a file this one imports where the problem is, when it is not in this file. */
  origin: Schema.optional(Schema.String)
}) {
  override get message(): string {
    return `${this.file}: ${this.problem}\n  fix: ${this.fix}`
  }
}

/**
 * A route file whose import threw: `problem` is the thrown message, `place` where it names one
 * (`lib/util.ts:2:1`), often in a file this one imports.
 */
export const importFailed = (file: string, problem: string, place: string | undefined): RouteError => {
  const imported = place !== undefined && !place.startsWith(`${file}:`)
  return new RouteError({
    file,
    problem: `${importFailedPrefix}${problem}`,
    fix: place === undefined ? "make the file load without throwing" : `fix ${place}${imported ? `, which ${file} imports` : ""}`,
    ...(imported ? { origin: place } : {})
  })
}

const importFailedPrefix = "importing the file failed: "

/** Every broken route file of one discovery; the build is refused while there is any. */
export class RouteErrors extends Schema.TaggedError<RouteErrors>()("RouteErrors", {
  errors: Schema.Array(RouteError)
}) {
  override get message(): string {
    const count = this.errors.length
    return `${count} broken route file${count === 1 ? "" : "s"}:\n${grouped(this.errors).join("\n")}`
  }
}

// One problem in a helper breaks every route file that imports it: said once, at the helper,
// with the files it breaks, rather than once per file.
const grouped = (errors: ReadonlyArray<RouteError>): ReadonlyArray<string> => {
  const byOrigin = new Map<string, Array<RouteError>>()
  for (const error of errors) {
    if (error.origin === undefined) continue
    const key = `${error.origin}\n${error.problem}`
    byOrigin.set(key, [...(byOrigin.get(key) ?? []), error])
  }
  const said = new Set<string>()
  return errors.flatMap((error) => {
    const key = error.origin === undefined ? undefined : `${error.origin}\n${error.problem}`
    const sharing = key === undefined ? [] : byOrigin.get(key) ?? []
    if (key === undefined || sharing.length < 2) return [error.message]
    if (said.has(key)) return []
    said.add(key)
    const problem = error.problem.replace(importFailedPrefix, "").replace(` (${error.origin})`, "")
    return [`${error.origin}: ${problem}\n  breaks ${sharing.map((e) => e.file).join(", ")}, which import it\n  fix: fix ${error.origin}`]
  })
}
