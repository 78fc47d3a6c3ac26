import { describe, expect, it } from "@effect/vitest"
import { Either } from "effect"
import { PastTheEnd, readRange } from "../../../src/environments/vfs/readRange.js"

const lines = (count: number) => Array.from({ length: count }, (_, i) => `line ${i + 1}`).join("\n") + "\n"

describe("readRange", () => {
  it("numbers the lines from..to, inclusive", () => {
    expect(readRange("a\nb\nc\nd\n", { from: 2, to: 3 })).toEqual(Either.right("2| b\n3| c\n[lines 2-3 of 4]"))
    expect(readRange("a\nb\n")).toEqual(Either.right("1| a\n2| b"))
    expect(readRange("a\nb\n", { to: 9 })).toEqual(Either.right("1| a\n2| b"))
  })

  it("caps at 400 lines by default and says how to read on", () => {
    const shown = Either.getOrThrow(readRange(lines(1000))).split("\n")
    expect(shown).toHaveLength(401)
    expect(shown[399]).toBe("400| line 400")
    expect(shown[400]).toBe("[lines 1-400 of 1000, at most 400 at a time: read on with from 401]")
    expect(Either.getOrThrow(readRange(lines(1000), { from: 990 })).split("\n")[0]).toBe(" 990| line 990")
  })

  it("clips very long lines, and says how many lines there are when from is past the end", () => {
    expect(readRange("x".repeat(5000), { maxLineChars: 10 })).toEqual(Either.right("1| xxxxxxxxxx… (4990 more characters on this line)"))
    expect(readRange("a\nb\n", { from: 3 })).toEqual(Either.left(new PastTheEnd({ lines: 2 })))
  })

  it("shows as many lines as fit in maxChars, notes included, and says where to read on; at least one, clipped", () => {
    const shown = Either.getOrThrow(readRange(lines(100), { maxChars: 500 }))
    expect(shown.length).toBeLessThanOrEqual(500)
    const last = shown.split("\n").at(-1)
    expect(last).toMatch(/^\[lines 1-(\d+) of 100, as many as the model is shown of a result: read on with from (\d+)\]$/)
    const [, to, next] = /lines 1-(\d+) of 100.*from (\d+)/.exec(last ?? "") ?? []
    expect(Number(next)).toBe(Number(to) + 1)
    expect(shown.split("\n")).toHaveLength(Number(to) + 1)
    const one = Either.getOrThrow(readRange("x".repeat(5000), { maxChars: 300 }))
    expect(one.length).toBeLessThanOrEqual(300)
    expect(one).toMatch(/^1\| x+… \(\d+ more characters on this line\)$/)
  })
})
