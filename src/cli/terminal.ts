/**
 * Terminal output for the CLI: short, readable lines, colored when the terminal is a TTY.
 */
import { Console, Effect } from "effect"

/** Whether `stream` shows colors: a terminal, and `NO_COLOR` not set. */
const colors = (stream: NodeJS.WriteStream): boolean => stream.isTTY === true && process.env.NO_COLOR === undefined

const color = (code: number) => (text: string): string => colors(process.stdout) ? `\u001b[${code}m${text}\u001b[0m` : text

const colorCodes = /\u001b\[[0-9;]*m/g

/** The strings of `args` without color codes. */
const plain = (args: ReadonlyArray<unknown>): Array<unknown> => args.map((arg) => typeof arg === "string" ? arg.replace(colorCodes, "") : arg)

/**
 * Runs `effect` with a console that writes no color codes where colors are not wanted (output to a
 * pipe or a file, `NO_COLOR`): @effect/cli colors its help and its usage errors whatever the output.
 */
export const withTerminalColors = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  colors(process.stdout) && colors(process.stderr) ? effect : Console.consoleWith((console) =>
    Effect.withConsole(effect, {
      ...console,
      log: (...args) => console.log(...(colors(process.stdout) ? args : plain(args))),
      error: (...args) => console.error(...(colors(process.stderr) ? args : plain(args)))
    }))

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
