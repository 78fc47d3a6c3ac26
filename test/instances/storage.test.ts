/**
 * Instances as stored, once per backend (SQLite and PostgreSQL): created with their installations
 * in one transaction, found by provisioning key, paged by cursor, paused and archived (which the
 * run journal's submission then refuses), and installations found by capability. Changes are
 * written as `Instances` writes them: one `instanceWrite` unit through `apply`.
 */
import { describe, expect, it } from "@effect/vitest"
import { type Context, Effect, Either, Option, TestClock } from "effect"
import type { InstancePageEntry, InstanceStorage } from "../../src/durable/InstanceStorage.js"
import type { InstanceRef } from "../../src/durable/records.js"
import type { InstanceWrite } from "../../src/durable/instanceWrite.js"
import { backends, freshStorage } from "../journal/backends.js"
import { newRun, submit } from "../journal/fixtures.js"

const installation = (capability: string) => ({ kind: "tool" as const, capability, config: { baseUrl: "https://crm.test" }, secrets: null })

const idsOf = (page: ReadonlyArray<InstancePageEntry>) => page.map(({ instance }) => `${instance.agent}/${instance.id}`)

type Instances = Context.Tag.Service<InstanceStorage>

/** `write` in one unit, without events; whether its guards let it be written. */
const apply = (instances: Instances, ref: InstanceRef, write: Partial<InstanceWrite>) =>
  Effect.map(instances.apply(ref, { install: [], uninstall: [], ...write }, []), Option.isSome)

/** The instance's installation of the tool `capability`, as stored now. */
const installed = (instances: Instances, ref: InstanceRef, capability: string) =>
  Effect.flatMap(instances.installations(ref), (all) => {
    const found = all.find((i) => i.kind === "tool" && i.capability === capability)
    return found === undefined ? Effect.dieMessage(`${capability} is not installed`) : Effect.succeed(found)
  })

for (const backend of backends) {
  describe.skipIf(backend.skip)(`instances on ${backend.name}`, () => {
    it.scoped("creates an instance with its installations at once, and returns the same one for its provisioning key", () =>
      Effect.gen(function*() {
        const { instances } = yield* freshStorage(backend)
        yield* TestClock.setTime(1_000)
        const made = yield* instances.create(
          { agent: "shop", id: "acme", provisioningKey: "customer-1", context: { company: "Acme" } },
          [installation("crm-notes"), installation("billing")]
        )
        expect(made.created).toBe(true)
        expect(made.instance).toMatchObject({ id: "acme", provisioningKey: "customer-1", status: "active", context: { company: "Acme" } })
        expect((yield* instances.installations({ agent: "shop", id: "acme" })).map((i) => i.capability)).toEqual(["billing", "crm-notes"])

        // Another id with the same key: nothing is written, the first instance comes back.
        const again = yield* instances.create({ agent: "shop", id: "other", provisioningKey: "customer-1", context: {} }, [installation("x")])
        expect(again.created).toBe(false)
        expect(again.instance.id).toBe("acme")
        expect(Option.isNone(yield* instances.get("shop", "other"))).toBe(true)
        expect((yield* instances.installations({ agent: "shop", id: "other" })).length).toBe(0)
        expect(Option.map(yield* instances.findByKey("shop", "customer-1"), (i) => i.id)).toEqual(Option.some("acme"))
        // Keys are per agent.
        const elsewhere = yield* instances.create({ agent: "support", id: "acme", provisioningKey: "customer-1", context: {} }, [])
        expect(elsewhere.created).toBe(true)
      }))

    it.scoped("pages through instances by cursor, filtered by agent, status and search", () =>
      Effect.gen(function*() {
        const { instances } = yield* freshStorage(backend)
        for (let i = 0; i < 25; i++) {
          const id = `customer-${String(i).padStart(2, "0")}`
          yield* instances.create({ agent: i % 2 === 0 ? "shop" : "support", id, provisioningKey: i === 7 ? "Globex-7" : null, context: {} }, [])
        }
        const seen: Array<string> = []
        let after: { agent: string; id: string } | undefined
        while (true) {
          const page = yield* instances.page({ limit: 10, after })
          seen.push(...idsOf(page))
          const last = page[page.length - 1]?.instance
          if (page.length < 10 || last === undefined) break
          after = { agent: last.agent, id: last.id }
        }
        expect(seen.length).toBe(25)
        expect(new Set(seen).size).toBe(25)
        expect(seen).toEqual([...seen].sort())
        expect((yield* instances.page({ limit: 100, agent: "shop" })).length).toBe(13)
        expect(idsOf(yield* instances.page({ limit: 100, search: "globex" }))).toEqual(["support/customer-07"])
        expect(idsOf(yield* instances.page({ limit: 100, search: "MER-1" })).length).toBe(10)

        yield* apply(instances, { agent: "shop", id: "customer-00" }, { status: { status: "paused", reason: "unpaid", from: "active" } })
        const paused = yield* instances.page({ limit: 100, status: "paused" })
        expect(paused.map(({ instance }) => [instance.id, instance.statusReason])).toEqual([["customer-00", "unpaid"]])
      }))

    it.scoped("a paused or archived instance takes no submission; an active or new one does", () =>
      Effect.gen(function*() {
        const { instances, journal, store } = yield* freshStorage(backend)
        yield* instances.create({ agent: "shop", id: "acme", provisioningKey: null, context: {} }, [])
        yield* apply(instances, { agent: "shop", id: "acme" }, { status: { status: "paused", reason: null, from: "active" } })
        const refused = yield* Effect.either(submit(journal, newRun("run_1")))
        expect(Either.isLeft(refused) && refused.left._tag).toBe("InstanceClosed")
        expect(Option.isNone(yield* store.getRun("run_1"))).toBe(true)

        yield* apply(instances, { agent: "shop", id: "acme" }, { status: { status: "active", reason: null, from: "paused" } })
        yield* submit(journal, newRun("run_2"))
        yield* apply(instances, { agent: "shop", id: "acme" }, { status: { status: "archived", reason: "churned", from: "active" } })
        const archived = yield* Effect.either(submit(journal, newRun("run_3", { conversationId: "c2" })))
        expect(Either.isLeft(archived) && archived.left._tag).toBe("InstanceClosed")
        // Its history stays.
        expect(Option.map(yield* store.getRun("run_2"), (run) => run.status)).toEqual(Option.some("queued"))
        // An instance that does not exist yet is made by the submission, as before.
        yield* submit(journal, newRun("run_4", { instanceId: "new", conversationId: "c3" }))
        expect(Option.map(yield* instances.get("shop", "new"), (i) => i.status)).toEqual(Option.some("active"))
      }))

    it.scoped("installs, replaces and uninstalls, and finds the active instances that have a capability", () =>
      Effect.gen(function*() {
        const { instances } = yield* freshStorage(backend)
        const [a, b, c] = [{ agent: "shop", id: "a" }, { agent: "shop", id: "b" }, { agent: "shop", id: "c" }]
        for (const ref of [a, b, c]) yield* instances.create({ ...ref, provisioningKey: null, context: {} }, [])
        yield* apply(instances, a, { install: [{ installation: installation("crm-notes") }] })
        yield* apply(instances, b, { install: [{ installation: installation("crm-notes") }] })
        yield* apply(instances, b, { install: [{ installation: { ...installation("crm-notes"), config: { baseUrl: "https://b.test" }, secrets: "sealed" } }] })
        expect(yield* installed(instances, b, "crm-notes")).toMatchObject({ config: { baseUrl: "https://b.test" }, secrets: "sealed" })
        yield* apply(instances, a, { status: { status: "paused", reason: null, from: "active" } })
        expect((yield* instances.withInstallation("shop", "tool", "crm-notes")).map((i) => i.id)).toEqual(["b"])
        expect((yield* instances.page({ limit: 10 })).map((entry) => [entry.instance.id, entry.installations])).toEqual([["a", 1], ["b", 1], ["c", 0]])
        const onB = yield* installed(instances, b, "crm-notes")
        expect(yield* apply(instances, b, { uninstall: [onB] })).toBe(true)
        expect(yield* apply(instances, b, { uninstall: [onB] })).toBe(false)
        expect((yield* instances.withInstallation("shop", "tool", "crm-notes")).length).toBe(0)

        // An archived instance changes no more: no install, no uninstall, no status or context change.
        yield* apply(instances, c, { install: [{ installation: installation("billing") }] })
        yield* apply(instances, c, { status: { status: "archived", reason: null, from: "active" } })
        expect(yield* apply(instances, c, { install: [{ installation: installation("crm-notes") }] })).toBe(false)
        expect(yield* apply(instances, c, { uninstall: [yield* installed(instances, c, "billing")] })).toBe(false)
        expect(yield* apply(instances, c, { status: { status: "active", reason: null, from: "archived" } })).toBe(false)
        expect(yield* apply(instances, c, { context: { plan: "pro" } })).toBe(false)
        expect(Option.map(yield* instances.get("shop", "c"), (i) => [i.status, i.context])).toEqual(Option.some(["archived", {}]))
        expect((yield* instances.installations(c)).map((i) => i.capability)).toEqual(["billing"])
        // Installing touches the instance, so lists show when it last changed.
        yield* TestClock.setTime(5_000)
        yield* apply(instances, a, { install: [{ installation: installation("billing") }] })
        expect(Option.map(yield* instances.get("shop", "a"), (i) => i.updatedAt)).toEqual(Option.some(5_000))
      }))

    it.scoped("an installation written over the one read is written only while it is stored as read, within one millisecond too", () =>
      Effect.gen(function*() {
        const { instances } = yield* freshStorage(backend)
        const ref = { agent: "shop", id: "acme" }
        yield* TestClock.setTime(1_000)
        yield* instances.create({ ...ref, provisioningKey: null, context: {} }, [installation("crm-notes")])
        const read = yield* installed(instances, ref, "crm-notes")
        // Another change in the same millisecond (a key rotated), then one made from the read before it.
        expect(yield* apply(instances, ref, { install: [{ installation: { ...installation("crm-notes"), secrets: "sealed-two" }, basis: read }] })).toBe(true)
        expect((yield* installed(instances, ref, "crm-notes")).secrets).toBe("sealed-two")
        const stale = { installation: { ...installation("crm-notes"), config: { baseUrl: "https://crm2.test" } }, basis: read }
        expect(yield* apply(instances, ref, { install: [stale] })).toBe(false)
        expect((yield* instances.installations(ref)).map(({ config, secrets }) => ({ config, secrets }))).toEqual([
          { config: { baseUrl: "https://crm.test" }, secrets: "sealed-two" }
        ])
        // Over a read that was removed since: refused too; over one in an archived instance: refused, as without.
        const now = yield* installed(instances, ref, "crm-notes")
        yield* apply(instances, ref, { uninstall: [now] })
        expect(yield* apply(instances, ref, { install: [{ installation: installation("crm-notes"), basis: now }] })).toBe(false)
        expect(yield* instances.installations(ref)).toEqual([])
        yield* apply(instances, ref, { status: { status: "archived", reason: null, from: "active" } })
        expect(yield* apply(instances, ref, { install: [{ installation: installation("crm-notes"), basis: now }] })).toBe(false)
      }))

    it.scoped("search takes % and _ as themselves", () =>
      Effect.gen(function*() {
        const { instances } = yield* freshStorage(backend)
        for (const id of ["inst_1", "instx1", "a%b"]) yield* instances.create({ agent: "shop", id, provisioningKey: null, context: {} }, [])
        expect(idsOf(yield* instances.page({ limit: 10, search: "t_1" }))).toEqual(["shop/inst_1"])
        expect(idsOf(yield* instances.page({ limit: 10, search: "%" }))).toEqual(["shop/a%b"])
      }))
  })
}
