/**
 * Decode errors read as one line per failing field, `path: what was expected, got what`, never as
 * a Schema tree: the text HTTP 400s, webhook 400s and the model's tool errors all show.
 */
import { describe, expect, it } from "@effect/vitest"
import { Either, Schema } from "effect"
import { formatIssues, readableIssues } from "../../src/definitions/readableIssues.js"

/** The issues of decoding `value` with every error collected; fails the test when it decodes. */
const issuesOf = <A, I>(
  schema: Schema.Schema<A, I>,
  value: unknown,
  options: { readonly onExcessProperty?: "ignore" | "error"; readonly root?: string } = {}
) => {
  const result = Schema.decodeUnknownEither(schema)(value, { errors: "all", onExcessProperty: options.onExcessProperty ?? "ignore" })
  if (Either.isRight(result)) return expect.fail("the value decoded")
  return readableIssues(result.left, options.root === undefined ? {} : { root: options.root })
}

/** The lines a person reads. */
const linesOf = <A, I>(...args: Parameters<typeof issuesOf<A, I>>) => formatIssues(issuesOf(...args)).split("\n")

describe("readable issues", () => {
  it("a wrong type in a nested struct names the dotted path, what was expected and what came", () => {
    const Order = Schema.Struct({ customer: Schema.Struct({ name: Schema.String, age: Schema.Number }) })
    expect(linesOf(Order, { customer: { name: 7, age: "old" } })).toEqual([
      "customer.name: expected a string, got 7",
      `customer.age: expected a number, got "old"`
    ])
  })

  it("array elements are bracketed, and every failing element is listed", () => {
    const Cart = Schema.Struct({ items: Schema.Array(Schema.Struct({ id: Schema.String, qty: Schema.Number })) })
    expect(linesOf(Cart, { items: [{ id: "a", qty: 1 }, { id: 2, qty: 1 }, { qty: "x" }] })).toEqual([
      "items[1].id: expected a string, got 2",
      "items[2].id: is missing",
      `items[2].qty: expected a number, got "x"`
    ])
  })

  it("a union of literals lists its options on one line", () => {
    const Decision = Schema.Struct({ decision: Schema.Literal("approve", "deny") })
    expect(linesOf(Decision, { decision: "maybe" })).toEqual([`decision: expected one of "approve", "deny", got "maybe"`])
  })

  it("a value of none of a union's types is one line naming each type", () => {
    expect(linesOf(Schema.Struct({ note: Schema.NullOr(Schema.String) }), { note: 3 })).toEqual([
      "note: expected a string or null, got 3"
    ])
  })

  it("an optional field is not said to expect undefined", () => {
    const Query = Schema.Struct({
      status: Schema.optional(Schema.Literal("queued", "done")),
      limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 1000)))
    })
    expect(linesOf(Query, { status: "lost", limit: "0" })).toEqual([
      `status: expected one of "queued", "done", got "lost"`,
      "limit: expected a number between 1 and 1000, got 0"
    ])
  })

  it("a value that has one union member's type is told what is wrong inside that member", () => {
    const Timing = Schema.Union(Schema.Struct({ every: Schema.String }), Schema.Number)
    expect(linesOf(Timing, { every: 5 })).toEqual(["every: expected a string, got 5"])
  })

  it("a refinement with a message annotation says that message", () => {
    const Run = Schema.Struct({ agent: Schema.String.pipe(Schema.nonEmptyString({ message: () => "expected a non-empty agent id" })) })
    expect(issuesOf(Run, { agent: "" })).toEqual([{ path: "agent", message: "expected a non-empty agent id" }])
  })

  it("a refinement without one says what it accepts", () => {
    const Page = Schema.Struct({ limit: Schema.Number.pipe(Schema.int(), Schema.between(1, 1000)) })
    expect(linesOf(Page, { limit: 0 })).toEqual(["limit: expected a number between 1 and 1000, got 0"])
    expect(linesOf(Schema.Struct({ name: Schema.NonEmptyString }), { name: "" })).toEqual([`name: expected a non empty string, got ""`])
  })

  it("a missing key is missing", () => {
    expect(issuesOf(Schema.Struct({ agent: Schema.String, message: Schema.String }), { message: "hi" })).toEqual([
      { path: "agent", message: "is missing" }
    ])
  })

  it("an extra key is not allowed when the schema forbids excess properties, said with the fields there are, and ignored otherwise", () => {
    const Body = Schema.Struct({ agent: Schema.String, conversation: Schema.optional(Schema.String) })
    expect(linesOf(Body, { agent: 1, foo: true }, { onExcessProperty: "error" })).toEqual([
      "foo: is not allowed (the fields here: agent, conversation)",
      "agent: expected a string, got 1"
    ])
    // The one it likely meant: misspelt, or named as a reply names it (`conversationId`).
    expect(linesOf(Body, { agnet: "a", conversationId: "c" }, { onExcessProperty: "error" })).toEqual([
      `agnet: is not allowed; did you mean "agent"? (the fields here: agent, conversation)`,
      `conversationId: is not allowed; did you mean "conversation"? (the fields here: agent, conversation)`,
      "agent: is missing"
    ])
    expect(linesOf(Body, { agent: 1, foo: true })).toEqual(["agent: expected a string, got 1"])
  })

  it("the whole value failing is named by the root label", () => {
    const Body = Schema.Struct({ agent: Schema.String })
    expect(linesOf(Body, [1, 2])).toEqual(["(root): expected an object, got an array"])
    expect(linesOf(Body, "hello", { root: "(body)" })).toEqual([`(body): expected an object, got "hello"`])
  })

  it("keys that are not identifiers are quoted after the first, and long values are cut short", () => {
    const Headers = Schema.Struct({ "x-trace": Schema.Struct({ "span-id": Schema.Number }) })
    const [line] = linesOf(Headers, { "x-trace": { "span-id": "s".repeat(100) } })
    expect(line).toMatch(/^x-trace\["span-id"\]: expected a number, got "s{39}…"$/)
  })

  it("never prints the Schema tree", () => {
    const Run = Schema.Struct({
      agent: Schema.String,
      message: Schema.String,
      options: Schema.Struct({ stream: Schema.Boolean, tags: Schema.Array(Schema.String) })
    })
    const text = formatIssues(issuesOf(Run, { agent: 1, options: 5 }))
    expect(text.split("\n")).toEqual([
      "agent: expected a string, got 1",
      "message: is missing",
      "options: expected an object, got 5"
    ])
    expect(text).not.toMatch(/readonly|Expected \{|└─|├─/)
  })
})
