/**
 * The benchmark scenarios, in the order `npm run bench` runs them. `machine` runs first whichever
 * are named: the figures of the others are read against it.
 */
import type { Effect } from "effect"
import { cluster } from "./cluster.js"
import { floor } from "./floor.js"
import { idleEnvironments } from "./idleEnvironments.js"
import { idleInstances } from "./idleInstances.js"
import { machine } from "./machine.js"
import { orderLookup, orderLookupPg } from "./orderLookup.js"
import { orderLookupHttp } from "./orderLookupHttp.js"
import { recovery } from "./recovery.js"
import { startup } from "./startup.js"

/** A named scenario whose result is one JSON object. */
export interface Scenario {
  readonly name: string
  readonly run: Effect.Effect<Record<string, unknown>, unknown>
}

export const scenarios: ReadonlyArray<Scenario> = [
  { name: "machine", run: machine },
  { name: "order-lookup", run: orderLookup },
  { name: "floor", run: floor },
  { name: "order-lookup-http", run: orderLookupHttp },
  { name: "idle-instances", run: idleInstances },
  { name: "idle-environments", run: idleEnvironments },
  { name: "recovery", run: recovery },
  { name: "startup", run: startup },
  { name: "order-lookup-pg", run: orderLookupPg },
  { name: "cluster", run: cluster }
]
