import { describe, expect, it } from "@effect/vitest"
import type { PermissionRule } from "../../src/definitions/configFields.js"
import { deniedByRule, globMatches, matchingRule } from "../../src/engine/permissions.js"

describe("permission rules", () => {
  it("a glob's * matches any run of characters, / included; everything else is literal", () => {
    expect(globMatches("transfer", "transfer")).toBe(true)
    expect(globMatches("transfer", "transfers")).toBe(false)
    expect(globMatches("github_*", "github_create_issue")).toBe(true)
    expect(globMatches("*", "")).toBe(true)
    expect(globMatches("support/*", "support/billing/refunds")).toBe(true)
    expect(globMatches("a.b", "axb")).toBe(false)
    expect(globMatches("(x)+", "(x)+")).toBe(true)
  })

  it("the first matching rule wins; a rule without agent matches every agent", () => {
    const rules: ReadonlyArray<PermissionRule> = [
      { agent: "support/*", tool: "refund", action: "allow" },
      { tool: "refund", action: "deny", reason: "refunds go through support" },
      { tool: "*", action: "ask" }
    ]
    expect(matchingRule(rules, "support/billing", "refund")?.action).toBe("allow")
    expect(matchingRule(rules, "sales", "refund")?.action).toBe("deny")
    expect(matchingRule(rules, "sales", "lookup")?.action).toBe("ask")
    expect(matchingRule([], "sales", "lookup")).toBeUndefined()
  })

  it("a deny rule's message carries its reason, or names the rule without one", () => {
    expect(deniedByRule({ tool: "rm_*", action: "deny", reason: "no deleting" })).toBe(
      "denied by the project's permission rules: no deleting"
    )
    expect(deniedByRule({ tool: "rm_*", action: "deny" })).toContain(`the rule for tool "rm_*"`)
  })
})
