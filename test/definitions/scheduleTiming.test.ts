/**
 * When a cron in a time zone fires around the daylight-saving changes: as Vixie cron and cronie,
 * a cron that fires every hour fires through the hour the autumn change repeats, one at fixed
 * hours fires once; a time the spring change skips is moved on by the gap.
 */
import { describe, expect, it } from "@effect/vitest"
import { nextFireAfter } from "../../src/definitions/scheduleTiming.js"

/** The next `count` firings of `cron` in `timezone` after `from`, as UTC ISO times to the minute. */
const firings = (cron: string, timezone: string, from: string, count: number): ReadonlyArray<string> => {
  const times: Array<string> = []
  let after = Date.parse(from)
  for (let i = 0; i < count; i++) {
    const next = nextFireAfter({ cron, timezone }, after, after)
    if (next === null) break
    times.push(new Date(next).toISOString().slice(0, 16))
    after = next
  }
  return times
}

describe("cron firings across daylight-saving changes", () => {
  it("in autumn a cron that fires every hour fires through the repeated hour (Berlin)", () => {
    // 2026-10-25 03:00 CEST goes back to 02:00 CET: 02:00-02:59 happen twice, 00:00Z-01:59Z.
    expect(firings("*/15 * * * *", "Europe/Berlin", "2026-10-25T00:30:00Z", 7)).toEqual([
      "2026-10-25T00:45",
      "2026-10-25T01:00",
      "2026-10-25T01:15",
      "2026-10-25T01:30",
      "2026-10-25T01:45",
      "2026-10-25T02:00",
      "2026-10-25T02:15"
    ])
    expect(firings("0 * * * *", "Europe/Berlin", "2026-10-24T22:30:00Z", 5)).toEqual([
      "2026-10-24T23:00",
      "2026-10-25T00:00",
      "2026-10-25T01:00",
      "2026-10-25T02:00",
      "2026-10-25T03:00"
    ])
  })

  it("in autumn a cron that fires every hour fires through the repeated hour (New York)", () => {
    // 2026-11-01 02:00 EDT goes back to 01:00 EST: 01:00-01:59 happen twice, 05:00Z-06:59Z.
    expect(firings("0 * * * *", "America/New_York", "2026-11-01T03:30:00Z", 4)).toEqual([
      "2026-11-01T04:00",
      "2026-11-01T05:00",
      "2026-11-01T06:00",
      "2026-11-01T07:00"
    ])
    expect(firings("*/30 * * * *", "America/New_York", "2026-11-01T05:10:00Z", 5)).toEqual([
      "2026-11-01T05:30",
      "2026-11-01T06:00",
      "2026-11-01T06:30",
      "2026-11-01T07:00",
      "2026-11-01T07:30"
    ])
  })

  it("in autumn a cron at a fixed hour fires once in the repeated hour, at its first instant", () => {
    expect(firings("30 2 * * *", "Europe/Berlin", "2026-10-24T12:00:00Z", 2)).toEqual(["2026-10-25T00:30", "2026-10-26T01:30"])
    expect(firings("0 1 * * *", "America/New_York", "2026-11-01T00:00:00Z", 2)).toEqual(["2026-11-01T05:00", "2026-11-02T06:00"])
  })

  it("from inside the repeated hour the next firing is never an earlier time", () => {
    expect(firings("*/15 * * * *", "Europe/Berlin", "2026-10-25T01:10:00Z", 2)).toEqual(["2026-10-25T01:15", "2026-10-25T01:30"])
    expect(firings("30 2 * * *", "Europe/Berlin", "2026-10-25T01:10:00Z", 1)).toEqual(["2026-10-26T01:30"])
  })

  it("a change of half an hour repeats half an hour (Lord Howe Island)", () => {
    // 2027-04-04 02:00 (+11) goes back to 01:30 (+10:30).
    expect(firings("*/30 * * * *", "Australia/Lord_Howe", "2027-04-03T14:00:00Z", 4)).toEqual([
      "2027-04-03T14:30",
      "2027-04-03T15:00",
      "2027-04-03T15:30",
      "2027-04-03T16:00"
    ])
  })

  it("in spring the skipped hour has no firings, and a fixed time in it is moved on by the gap", () => {
    // 2027-03-28 02:00 CET goes on to 03:00 CEST; 2027-03-14 02:00 EST goes on to 03:00 EDT.
    expect(firings("*/15 * * * *", "Europe/Berlin", "2027-03-28T00:30:00Z", 3)).toEqual(["2027-03-28T00:45", "2027-03-28T01:00", "2027-03-28T01:15"])
    expect(firings("30 2 * * *", "Europe/Berlin", "2027-03-27T12:00:00Z", 2)).toEqual(["2027-03-28T01:30", "2027-03-29T00:30"])
    expect(firings("0 * * * *", "America/New_York", "2027-03-14T05:30:00Z", 3)).toEqual(["2027-03-14T06:00", "2027-03-14T07:00", "2027-03-14T08:00"])
    expect(firings("30 2 * * *", "America/New_York", "2027-03-13T12:00:00Z", 2)).toEqual(["2027-03-14T07:30", "2027-03-15T06:30"])
  })
})
