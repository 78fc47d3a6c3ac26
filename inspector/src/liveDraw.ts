/**
 * A page kept up to date within the server's rate limit: drawn once, then again when an event it
 * shows arrives (a burst of events makes one draw) or, for what no event announces, now and then.
 * One draw at a time; none while the tab is hidden (one when it shows again). A draw that fails
 * says why on the page and the next waits, twice as long after each failure in a row (and at
 * least as long as a 429's Retry-After asks), so a page over the limit neither freezes silently
 * nor keeps the limit exceeded. Once the page is stopped, a draw still on its way ends unheard:
 * it neither says why it failed nor brings another (what it draws goes nowhere: main.ts takes a
 * page's element out of the document when it is left), and `draw`'s signal says it was stopped.
 */
import { ApiError, type FoundryEvent } from "./api.js"
import { onEvent } from "./liveEvents.js"
import { errorText } from "./dom.js"

/** When a page draws again. */
export interface LiveOptions {
  /** The events that change what the page shows (none: only `every` and `redraw`). */
  readonly shows?: (event: FoundryEvent) => boolean
  /** How long a burst of events is gathered into one draw, in ms. */
  readonly delay?: number
  /** A draw every this many ms, for what events do not announce (builds, uptime). */
  readonly every?: number
  /** Where a failed draw says why, and when it tries again. */
  readonly problem: HTMLElement
}

/** A live page: `redraw` after the reader changed something, `stop` when the page goes. */
export interface LiveDraw {
  readonly redraw: () => void
  readonly stop: () => void
}

const firstRetry = 2000
const lastRetry = 60_000

/**
 * Draws with `draw` now and whenever `options` say, until stopped. `draw` is given the signal
 * that aborts when the page stops: what a draw starts besides drawing (a timer, a scroll) it
 * starts only while that signal has not aborted.
 */
export const liveDraw = (draw: (stopped: AbortSignal) => Promise<void>, options: LiveOptions): LiveDraw => {
  const stopping = new AbortController()
  const stopped = stopping.signal
  let drawing = false
  let again = false
  let failures = 0
  let gathering: ReturnType<typeof setTimeout> | undefined
  let retrying: ReturnType<typeof setTimeout> | undefined

  const redraw = (): void => {
    if (stopped.aborted || retrying !== undefined) return
    if (drawing || document.hidden) {
      again = true
      return
    }
    drawing = true
    void draw(stopped).then(
      () => {
        if (stopped.aborted) return
        failures = 0
        options.problem.textContent = ""
      },
      (error: unknown) => {
        if (stopped.aborted) return
        failures += 1
        // At least what Retry-After asks: it says when one request may go, and a draw sends several.
        const backOff = Math.min(firstRetry * 2 ** (failures - 1), lastRetry)
        const wait = error instanceof ApiError && error.retryAfterMs !== undefined ? Math.max(error.retryAfterMs, backOff) : backOff
        options.problem.textContent = `${errorText(error)} (trying again in ${Math.ceil(wait / 1000)} s)`
        retrying = setTimeout(() => {
          retrying = undefined
          redraw()
        }, wait)
      }
    ).finally(() => {
      drawing = false
      if (again && retrying === undefined && !document.hidden) {
        again = false
        redraw()
      }
    })
  }

  const { shows } = options
  const unsubscribe = shows === undefined ? () => {} : onEvent((event) => {
    if (gathering !== undefined || !shows(event)) return
    gathering = setTimeout(() => {
      gathering = undefined
      redraw()
    }, options.delay ?? 150)
  })
  const polling = options.every === undefined ? undefined : setInterval(redraw, options.every)
  const shown = (): void => {
    if (!document.hidden && again) {
      again = false
      redraw()
    }
  }
  document.addEventListener("visibilitychange", shown)
  redraw()
  return {
    redraw,
    stop: () => {
      stopping.abort()
      clearTimeout(gathering)
      clearTimeout(retrying)
      clearInterval(polling)
      document.removeEventListener("visibilitychange", shown)
      unsubscribe()
    }
  }
}
