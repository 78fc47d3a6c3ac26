/**
 * Permission rules: the config's `permissions`, matched against a tool call by agent id and the
 * tool's model-facing name before the call runs. The first matching rule decides; with none, the
 * tool's own `approval` policy does.
 */
import type { PermissionRule } from "../definitions/configFields.js"

/** What the gate does with a call: run it, ask a person first, or refuse it. */
export type PermissionAction = PermissionRule["action"]

const escapeRegExp = (text: string): string => text.replace(/[.+?^${}()|[\]\\]/g, "\\$&")

/** Whether `name` matches the glob `pattern`: `*` matches any run of characters (`/` included); all else is literal. */
export const globMatches = (pattern: string, name: string): boolean =>
  new RegExp(`^${pattern.split("*").map(escapeRegExp).join(".*")}$`, "s").test(name)

/** The first rule that matches the agent and the tool, if any (a rule without `agent` matches every agent). */
export const matchingRule = (
  rules: ReadonlyArray<PermissionRule>,
  agent: string,
  tool: string
): PermissionRule | undefined =>
  rules.find((rule) => (rule.agent === undefined || globMatches(rule.agent, agent)) && globMatches(rule.tool, tool))

/** What the model is told when a `deny` rule refuses its call. */
export const deniedByRule = (rule: PermissionRule): string =>
  `denied by the project's permission rules: ${rule.reason ?? `the rule for tool "${rule.tool}" denies this call`}`
