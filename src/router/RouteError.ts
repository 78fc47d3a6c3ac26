/**
 * A broken route file: one error per file, naming the file, what is wrong and how to fix it.
 */
import { Schema } from "effect"

/** One broken route file. */
export class RouteError extends Schema.TaggedError<RouteError>()("RouteError", {
  /** The file, relative to the project folder. */
  file: Schema.String,
  problem: Schema.String,
  fix: Schema.String
}) {
  override get message(): string {
    return `${this.file}: ${this.problem}\n  fix: ${this.fix}`
  }
}

/** Every broken route file of one discovery; the build is refused while there is any. */
export class RouteErrors extends Schema.TaggedError<RouteErrors>()("RouteErrors", {
  errors: Schema.Array(RouteError)
}) {
  override get message(): string {
    const count = this.errors.length
    return `${count} broken route file${count === 1 ? "" : "s"}:\n${this.errors.map((e) => e.message).join("\n")}`
  }
}
