/**
 * The runtime's ways on, said as API calls for HTTP clients, read as commands in the terminal. The
 * CLI's own tests (test/cli/instances.test.ts) show them in refusals; these are the messages a
 * command prints that no CLI test can bring about cheaply (a playbook's refusal, a route problem).
 */
import { describe, expect, it } from "@effect/vitest"
import { inCommandTerms } from "../../src/cli/commandTerms.js"

describe("a message's API calls in the terminal", () => {
  it("says each call the runtime suggests as the command that makes it, quoting what a shell would split", () => {
    expect(inCommandTerms(`instance "vip" is paused (PATCH /api/instances/vip?agent=support {"paused": false})`))
      .toBe(`instance "vip" is paused (foundry instances resume vip --agent support)`)
    expect(inCommandTerms(`set it with PATCH /api/instances/acme%20corp?agent=desk {"context": {...}}`))
      .toBe(`set it with foundry instances context 'acme corp' <context.json> --agent desk`)
    expect(inCommandTerms(`create it first with POST /api/instances {"agent": "desk", "id": "acme", "context": {...}}`))
      .toBe(`create it first with foundry instances create desk --id acme --context <context.json>`)
    expect(inCommandTerms(`create it first (POST /api/instances), or give the playbook instance: { key }`))
      .toBe(`create it first (foundry instances create <agent>), or give the playbook instance: { key }`)
    expect(inCommandTerms(`foundry install <instance> tool:crm (or POST /api/instances/<instance>/installations?agent=desk)`))
      .toBe(`foundry install <instance> tool:crm`)
    expect(inCommandTerms(`install it on an instance (POST /api/instances/<id>/installations {"kind":"tool","id":"crm"})`))
      .toBe(`install it on an instance (foundry install <id> tool:crm)`)
    expect(inCommandTerms(`cancel it first: POST /api/runs/run_1/cancel`)).toBe(`cancel it first: foundry runs cancel run_1`)
    expect(inCommandTerms(`list them with GET /api/instances?agent=support/triage`))
      .toBe(`list them with foundry instances --agent support/triage`)
  })

  it("leaves a message without API calls as it is", () => {
    const plain = `there is no run "run_1"; foundry runs lists them`
    expect(inCommandTerms(plain)).toBe(plain)
  })
})
