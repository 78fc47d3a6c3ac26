/**
 * What the instances API refuses, and why: each error says what to send instead.
 */
import { Schema } from "effect"
import { ReadableIssue } from "../definitions/readableIssues.js"

/** No instance of that agent has that id. */
export class InstanceNotFound extends Schema.TaggedError<InstanceNotFound>()("InstanceNotFound", {
  agent: Schema.String,
  instance: Schema.String,
  message: Schema.String
}) {}

/** What was sent for an instance does not hold: one issue per field (context, config, capability). */
export class InvalidInstance extends Schema.TaggedError<InvalidInstance>()("InvalidInstance", {
  message: Schema.String,
  issues: Schema.Array(ReadableIssue)
}) {}

/** The change cannot be made to the instance as it is (it exists already, or it is archived). */
export class InstanceConflict extends Schema.TaggedError<InstanceConflict>()("InstanceConflict", {
  agent: Schema.String,
  instance: Schema.String,
  message: Schema.String
}) {}

/** The instance has no such capability installed: nothing was uninstalled. */
export class NotInstalled extends Schema.TaggedError<NotInstalled>()("NotInstalled", {
  agent: Schema.String,
  instance: Schema.String,
  message: Schema.String
}) {}

/** `InvalidInstance` with `issues`, each on a line of its message after `message`. */
export const invalid = (message: string, issues: ReadonlyArray<ReadableIssue>) =>
  new InvalidInstance({ message: `${message}:\n${issues.map((issue) => `${issue.path}: ${issue.message}`).join("\n")}`, issues })
