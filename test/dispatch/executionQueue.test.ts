/**
 * The executor's queue on its own: a conversation's runs one after the other in lane order, at
 * most `concurrency` at once, slots passed on to the longest-waiting ready run, places that leave
 * while they wait, and a closed queue that starts nothing.
 */
import { describe, expect, it } from "@effect/vitest"
import { makeExecutionQueue, type Place } from "../../src/dispatch/executionQueue.js"

/** A queue whose started runs are listed by name, in the order they started. */
const queueOf = (concurrency: number) => {
  const queue = makeExecutionQueue(concurrency)
  const started: Array<string> = []
  const places = new Map<string, Place>()
  const submit = (name: string, conversation: string) => {
    const place = queue.enter(conversation)
    places.set(name, place)
    return queue.schedule(place, () => started.push(name))
  }
  const end = (name: string) => {
    const place = places.get(name)
    if (place !== undefined) queue.leave(place)
  }
  return { queue, started, submit, end }
}

describe("the executor's queue", () => {
  it("runs a conversation's runs one after the other, in the order they took their places", () => {
    const { end, started, submit } = queueOf(10)
    submit("a1", "a")
    submit("a2", "a")
    submit("a3", "a")
    expect(started).toEqual(["a1"])
    end("a1")
    expect(started).toEqual(["a1", "a2"])
    end("a2")
    expect(started).toEqual(["a1", "a2", "a3"])
  })

  it("starts at most `concurrency` runs at once and hands a freed slot to the longest-waiting ready run", () => {
    const { end, started, submit } = queueOf(2)
    for (const conversation of ["a", "b", "c", "d"]) submit(conversation, conversation)
    expect(started).toEqual(["a", "b"])
    end("b")
    expect(started).toEqual(["a", "b", "c"])
    end("a")
    expect(started).toEqual(["a", "b", "c", "d"])
  })

  it("a run that leaves while it waits in the middle of its lane lets the one behind it start only after the one ahead", () => {
    const { end, started, submit } = queueOf(10)
    submit("a1", "a")
    submit("a2", "a")
    submit("a3", "a")
    end("a2")
    expect(started).toEqual(["a1"])
    end("a1")
    expect(started).toEqual(["a1", "a3"])
  })

  it("a ready run that leaves before it has a slot gives the slot up to the next one, and no slot is counted twice", () => {
    const { end, started, submit } = queueOf(1)
    submit("a", "a")
    submit("b", "b")
    submit("c", "c")
    end("b")
    end("b")
    end("a")
    expect(started).toEqual(["a", "c"])
    submit("d", "d")
    expect(started).toEqual(["a", "c"])
    end("c")
    expect(started).toEqual(["a", "c", "d"])
  })

  it("a place taken before its run is scheduled holds its lane: the run behind it waits", () => {
    const { queue, started, submit } = queueOf(10)
    const first = queue.enter("a")
    submit("a2", "a")
    expect(started).toEqual([])
    expect(queue.busy("a")).toBe(true)
    queue.leave(first)
    expect(started).toEqual(["a2"])
  })

  it("once closed, starts nothing, and refuses new places", () => {
    const { end, queue, started, submit } = queueOf(1)
    submit("a", "a")
    submit("b", "b")
    queue.close()
    end("a")
    expect(started).toEqual(["a"])
    expect(submit("c", "c")).toBe(false)
    expect(queue.busy("c")).toBe(false)
  })
})
