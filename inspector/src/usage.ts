/**
 * Tokens and cost as the inspector shows them: a one-line total, and an SVG bar chart of values by
 * day (no chart library, nothing from a CDN).
 */
import { h } from "./dom.js"

/** Usage totals as the API returns them. */
export interface Usage {
  readonly inputTokens: number
  readonly outputTokens: number
  readonly costUsd: number
  readonly unpricedTurns: number
}

/** `$0.0123`, with more digits for small amounts. */
export const dollars = (usd: number): string => `$${usd.toFixed(usd !== 0 && usd < 0.01 ? 4 : 2)}`

/** `1,234 in / 567 out tokens · $0.01`, and how many turns had no price. */
export const usageLine = (usage: Usage): string =>
  `${usage.inputTokens.toLocaleString()} in / ${usage.outputTokens.toLocaleString()} out tokens · ${dollars(usage.costUsd)}` +
  (usage.unpricedTurns > 0 ? ` (${usage.unpricedTurns} turns on unpriced models)` : "")

const svgNs = "http://www.w3.org/2000/svg"

const svg = (tag: string, attributes: Record<string, string | number>, text?: string): SVGElement => {
  const element = document.createElementNS(svgNs, tag)
  for (const [name, value] of Object.entries(attributes)) element.setAttribute(name, String(value))
  if (text !== undefined) element.textContent = text
  return element
}

/** A bar chart of `values` by label (e.g. days), with the largest value marked. */
export const barChart = (title: string, points: ReadonlyArray<{ readonly label: string; readonly value: number }>, format: (n: number) => string) => {
  const width = 320
  const height = 90
  const max = Math.max(...points.map((p) => p.value), 0)
  const bar = points.length === 0 ? 0 : width / points.length
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height + 14}`, width, height: height + 14, role: "img", "aria-label": title })
  points.forEach((point, index) => {
    const size = max === 0 ? 0 : (point.value / max) * height
    const rect = svg("rect", { x: index * bar + 1, y: height - size, width: Math.max(bar - 2, 1), height: size, class: "chart-bar" })
    rect.append(svg("title", {}, `${point.label}: ${format(point.value)}`))
    chart.append(rect)
  })
  const first = points[0]
  const last = points[points.length - 1]
  if (first !== undefined) chart.append(svg("text", { x: 0, y: height + 12, class: "chart-label" }, first.label))
  if (last !== undefined && last !== first) chart.append(svg("text", { x: width, y: height + 12, "text-anchor": "end", class: "chart-label" }, last.label))
  return h("figure", { class: "chart", "data-chart": title }, h("figcaption", {}, `${title} (max ${format(max)})`), chart)
}

/** The `p`-th percentile (0-100) of `values`, nearest rank; undefined for none. */
export const percentile = (values: ReadonlyArray<number>, p: number): number | undefined => {
  if (values.length === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]
}
