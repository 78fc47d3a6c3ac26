/**
 * A few DOM helpers: elements from tag, attributes and children; text is always text (never
 * parsed as HTML), so event data cannot inject markup, and its bidi controls show as escapes, so it
 * cannot reorder what is shown either.
 */

/** What an element may hold. */
export type Child = Node | string | number | null | undefined | false

/** Attributes and event handlers of an element. */
export type Attributes = Record<string, string | number | boolean | undefined | ((event: Event) => void)>

/** A new element. */
export const h = <K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Attributes = {},
  ...children: ReadonlyArray<Child | ReadonlyArray<Child>>
): HTMLElementTagNameMap[K] => {
  const element = document.createElement(tag)
  for (const [name, value] of Object.entries(attributes)) {
    if (value === undefined || value === false) continue
    if (typeof value === "function") element.addEventListener(name.replace(/^on/, "").toLowerCase(), value)
    else element.setAttribute(name, value === true ? "" : String(value))
  }
  append(element, children)
  return element
}

const append = (element: Element, children: ReadonlyArray<Child | ReadonlyArray<Child>>): void => {
  for (const child of children) {
    if (Array.isArray(child)) append(element, child)
    else if (child instanceof Node) element.append(child)
    else if (child !== null && child !== undefined && child !== false) element.append(visible(String(child)))
  }
}

// Explicit embeddings, overrides and isolates (U+202A-202E, U+2066-2069) and the marks (U+200E,
// U+200F, U+061C): a tool's input holding "\u202E0001" would read as "1000" on an approval card.
const bidiControls = /[\u202A-\u202E\u2066-\u2069\u200E\u200F\u061C]/g

/**
 * Text with its bidi controls written as escapes (`\u202e`), as JSON would write them: untrusted
 * text then reads in the order it is stored. Letters of right-to-left scripts are left as they are.
 */
export const visible = (text: string): string =>
  text.replace(bidiControls, (control) => `\\u${control.charCodeAt(0).toString(16).padStart(4, "0")}`)

/**
 * Replaces an element's children. An element that was focused and is among the new children (a
 * box kept across a page's redraws) keeps the focus, so live updates do not take it from a reader
 * typing into it.
 */
export const replace = (element: Element, ...children: ReadonlyArray<Child | ReadonlyArray<Child>>): void => {
  const focused = document.activeElement
  element.replaceChildren()
  append(element, children)
  if (focused instanceof HTMLElement && focused !== document.activeElement && element.contains(focused)) focused.focus()
}

/** A duration in ms, short. */
export const duration = (ms: number | undefined): string =>
  ms === undefined ? "" : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(ms < 10_000 ? 2 : 1)} s`

/** `n` things, said as a person would: "1 run", "2 runs". */
export const counted = (n: number, noun: string): string => `${n.toLocaleString()} ${noun}${n === 1 ? "" : "s"}`

/** A moment as a person reads it: the time of day for today's, with the date for another day's (and the year for another year's). */
export const clock = (ms: number | null | undefined, missing = ""): string => {
  if (ms === undefined || ms === null) return missing
  const date = new Date(ms)
  const now = new Date()
  if (date.toDateString() === now.toDateString()) return date.toLocaleTimeString()
  return date.toLocaleString(undefined, {
    month: "short",
    day: "numeric",
    ...(date.getFullYear() === now.getFullYear() ? {} : { year: "numeric" }),
    hour: "2-digit",
    minute: "2-digit",
    second: "2-digit"
  })
}

/** What went wrong, as a person reads it: an error's message, not its name. */
export const errorText = (error: unknown): string => error instanceof Error ? error.message : String(error)

/** Pretty JSON for a value, bidi controls escaped (still JSON that reads back as the same value). */
export const json = (value: unknown): string => visible(JSON.stringify(value, null, 2) ?? String(value))

/** A link that the inspector's router follows without reloading the page. */
export const link = (href: string, ...children: ReadonlyArray<Child>): HTMLAnchorElement => h("a", { href }, ...children)
