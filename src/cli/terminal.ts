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
