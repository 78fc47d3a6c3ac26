/**
 * How any page shows a run or an instance: its status as a colored tag, whether a run can still
 * be stopped, and where an instance's page is.
 */
import { h } from "./dom.js"

/** A status as a colored tag. */
const statusTag = (status: string) => h("span", { class: `status ${status}`, "data-status": status }, status)

/** A run's status as a colored tag. */
export const runStatus = statusTag

/** An instance's status as a colored tag. */
export const instanceStatus = statusTag

/** Whether a run in `status` can still be cancelled or steered. */
export const isLive = (status: string): boolean => status === "queued" || status === "running" || status === "suspended"

/** The page of an instance. */
export const instanceHref = (agent: string, id: string): string => `/instances/${agent}/${encodeURIComponent(id)}`
