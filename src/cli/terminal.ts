/**
 * Terminal output for the CLI: short, readable lines, colored when the terminal is a TTY.
 */
import { Console, Effect } from "effect"

const color = (code: number) => (text: string): string =>
  process.stdout.isTTY === true && process.env.NO_COLOR === undefined ? `\u001b[${code}m${text}\u001b[0m` : text

/** Text styles. */
export const style = { bold: color(1), dim: color(2), red: color(31), green: color(32), yellow: color(33), cyan: color(36) }

/** A line on standard output. */
export const say = (line: string) => Console.log(line)

/** A line on standard error. */
export const warn = (line: string) => Console.error(line)

/** A block of errors on standard error, one indented line per line of text. */
export const reportError = (title: string, error: { readonly message: string }) =>
  Effect.zipRight(
    warn(style.red(style.bold(title))),
    warn(error.message.split("\n").map((line) => `  ${line}`).join("\n"))
  )

/** Rows under a bold header, each column as wide as its widest cell. */
export const table = (header: ReadonlyArray<string>, rows: ReadonlyArray<ReadonlyArray<string>>) =>
  Effect.gen(function*() {
    const widths = header.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column]?.length ?? 0)))
    const line = (cells: ReadonlyArray<string>) => cells.map((cell, column) => cell.padEnd(widths[column] ?? 0)).join("  ").trimEnd()
    yield* say(style.bold(line(header)))
    for (const row of rows) yield* say(line(row))
  })

/** A time as a table shows it, to the minute (UTC); `-` for none. */
export const when = (millis: number | null): string => millis === null ? "-" : new Date(millis).toISOString().slice(0, 16).replace("T", " ")

/** `text` as one word of a command line pasted into a shell: quoted when it has spaces, quotes or other characters a shell reads. */
export const shellWord = (text: string): string => /^[\w./@%+=:,-]+$/.test(text) ? text : `'${text.replaceAll("'", `'\\''`)}'`

/** `text` cut to `width` characters, its end marked `...` when cut. */
export const clip = (text: string, width: number): string => text.length > width ? `${text.slice(0, width - 3)}...` : text
