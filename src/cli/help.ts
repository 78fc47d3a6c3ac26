/**
 * The CLI's help, read off the commands as @effect/cli describes them and laid out for a terminal:
 * one line a command, an option's description beside its name. @effect/cli's own help repeats a
 * parent's options before each of its subcommands, aligns every description past the longest of
 * those lines (200 columns and more), and spends three lines an option on its type and on its
 * being optional.
 */
import { CliConfig, CommandDescriptor, HelpDoc, Usage } from "@effect/cli"
import type { Span } from "@effect/cli/HelpDoc/Span"
import { Option } from "effect"

/** A command as @effect/cli describes it. */
type Descriptor = CommandDescriptor.Command<unknown>

/** An argument, an option or a subcommand: how it is written, and what it says of itself. */
interface Entry {
  readonly name: string
  readonly description: string
}

/** A section of a command's help: its header, its paragraphs and its entries. */
interface Section {
  readonly title: string
  readonly paragraphs: Array<string>
  readonly entries: Array<Entry>
}

/** The program the help is of, and the terminal's width. */
export interface Program {
  readonly name: string
  readonly version: string
  readonly width: number
}

/** A command line's commands: its root, and the commands under it in the order `withSubcommands` was given them. */
export interface Commands {
  readonly root: Descriptor
  readonly commands: ReadonlyArray<Descriptor>
}

/** A command and the commands under it. */
interface Level {
  readonly command: Descriptor
  readonly children: ReadonlyArray<readonly [string, Descriptor]>
}

/**
 * The path of the command whose help `args` ask for: none at all ask for the root's, `--help` or
 * `-h` anywhere (as @effect/cli reads them, after a `--` too) for the deepest subcommand they name.
 * `None` when they ask for none.
 */
export const helpRequest = (line: Commands, args: ReadonlyArray<string>): Option.Option<ReadonlyArray<string>> => {
  if (args.length > 0 && !args.some((arg) => arg === "--help" || arg === "-h")) return Option.none()
  const path: Array<string> = []
  for (const arg of args) {
    if (levelAt(line, path).children.some(([name]) => name === arg)) path.push(arg)
  }
  return Option.some(path)
}

/** The help of the command at `path`. */
export const helpText = (line: Commands, path: ReadonlyArray<string>, program: Program): string => {
  const { children, command } = levelAt(line, path)
  const invocation = [program.name, ...path].join(" ")
  const sections = sectionsOf(command)
  const section = (title: string) => sections.find((section) => section.title === title)
  const description = descriptionOf(command)
  const title = path.length === 0 ? `${program.name} ${program.version}: ${description}` : `${invocation}: ${description}`
  const lines = [...wrap(title, program.width), "", "Usage:"]
  if (path.length === 0) {
    lines.push(`  ${invocation} <command> [options]`)
  } else {
    lines.push(`  ${[invocation, ...optionsMark(command), ...positionals(command)].join(" ")}`)
    for (const [name, child] of children) lines.push(`  ${[invocation, name, ...optionsMark(child), ...positionals(child)].join(" ")}`)
  }
  for (const [title, heading] of [["ARGUMENTS", "Arguments:"], ["OPTIONS", "Options:"]] as const) {
    const entries = section(title)?.entries ?? []
    if (entries.length > 0) lines.push("", heading, ...columns(entries, program.width))
  }
  const under = children.flatMap(([name, child]) => commandLines(name, child))
  if (under.length > 0) lines.push("", "Commands:", ...columns(under, program.width))
  if (path.length === 0) {
    lines.push(
      "",
      `Run \`${program.name} <command> --help\` for a command's options.`,
      "Before the command: --log-level <level> (all, trace, debug, info, warning, error, fatal or none).",
      `Also: ${program.name} --version; ${program.name} --completions <sh | bash | fish | zsh>.`
    )
  } else if (children.length > 0) {
    lines.push("", `Run \`${invocation} <command> --help\` for its options.`)
  }
  return lines.join("\n")
}

/**
 * The command at `path` and the commands under it. Under the root, the commands as given; under
 * them, as @effect/cli finds them: one level deep (its `getSubcommands` gives a subcommand's own
 * command without its subcommands), which is as deep as `foundry`'s go.
 */
const levelAt = (line: Commands, path: ReadonlyArray<string>): Level => {
  let level: Level = { command: line.root, children: line.commands.map((command) => [nameOf(command), command] as const) }
  for (const name of path) {
    const command = level.children.find(([child]) => child === name)?.[1]
    if (command === undefined) break
    level = { command, children: subcommands(command) }
  }
  return level
}

const nameOf = (command: Descriptor): string => [...CommandDescriptor.getNames(command)][0] ?? ""

/** A command's subcommands in the order they were given (`getSubcommands` is a hash map; the help lists them in order). */
const subcommands = (command: Descriptor): Array<readonly [string, Descriptor]> => {
  const byName = new Map(CommandDescriptor.getSubcommands(command))
  const listed = sectionsOf(command).find((section) => section.title === "COMMANDS")?.paragraphs ?? []
  return [...new Set(listed.map((line) => line.split(" ")[0] ?? ""))].flatMap((name) => {
    const child = byName.get(name)
    return child === undefined ? [] : [[name, child] as const]
  })
}

/** What a command says it does. */
const descriptionOf = (command: Descriptor): string =>
  sectionsOf(command).find((section) => section.title === "DESCRIPTION")?.paragraphs.join(" ") ?? ""

/** `[options]` in a usage line, for a command that takes options. */
const optionsMark = (command: Descriptor): Array<string> =>
  sectionsOf(command).some((section) => section.title === "OPTIONS" && section.entries.length > 0) ? ["[options]"] : []

/** One entry for the command `name` and one for each command under it: its path with its arguments, and its description. */
const commandLines = (name: string, command: Descriptor): Array<Entry> => {
  return [
    { name: [name, ...positionals(command)].join(" "), description: descriptionOf(command) },
    ...subcommands(command).flatMap(([child, descriptor]) => commandLines(`${name} ${child}`, descriptor))
  ]
}

/**
 * A command's arguments and required options as its usage writes them (`<agent>`, `[<dir>]`,
 * `--scope <scope>`): its optional options are in its own help.
 */
const positionals = (command: Descriptor): Array<string> => {
  const usage = docText(Usage.getHelp(CommandDescriptor.getUsage(command)))
  // Past the command's name; for a command with subcommands, its usage ends with theirs.
  const words = usage.replace(/\[\(?--[^\]]*\]/g, " ").replace(/<command>|\.\.\./g, " ").trim().split(/\s+/).slice(1)
  const kept: Array<string> = []
  for (let index = 0; index < words.length; index++) {
    const word = words[index] ?? ""
    if (!word.startsWith("--")) {
      if (word !== "") kept.push(word)
      continue
    }
    const kind = words[index + 1] ?? ""
    index++
    // A choice's values are in its help: `--scope read | run | deploy | admin` is `--scope <scope>`.
    while (words[index + 1] === "|") index += 2
    kept.push(`${word} <${valueKinds.has(kind) ? kind : word.slice(2)}>`)
  }
  return kept
}

/** @effect/cli's names for the kind of an option's value, as its usage writes them. */
const valueKinds = new Set(["text", "integer", "float", "date", "file", "directory", "path", "redacted"])

/** The sections of a command's help as @effect/cli describes it, without its built-in options. */
const sectionsOf = (command: Descriptor): Array<Section> => {
  const sections: Array<Section> = []
  const visit = (doc: HelpDoc.HelpDoc): void => {
    switch (doc._tag) {
      case "Empty":
        return
      case "Header":
        sections.push({ title: spanText(doc.value), paragraphs: [], entries: [] })
        return
      case "Paragraph":
        sections.at(-1)?.paragraphs.push(spanText(doc.value))
        return
      case "DescriptionList":
        for (const [name, block] of doc.definitions) sections.at(-1)?.entries.push(entryOf(spanText(name), block))
        return
      case "Enumeration":
        for (const element of doc.elements) visit(element)
        return
      case "Sequence":
        visit(doc.left)
        visit(doc.right)
        return
    }
  }
  visit(CommandDescriptor.getHelp(command, CliConfig.make({ showBuiltIns: false })))
  return sections
}

/**
 * An argument or option: `--limit integer` as `--limit <integer>`, and only what it says of
 * itself. @effect/cli's block is its value's kind (in its name already), its description, and
 * whether it is optional (its description says what it defaults to).
 */
const entryOf = (name: string, block: HelpDoc.HelpDoc): Entry => {
  const paragraphs = blockParagraphs(block).slice(1).filter((paragraph) => !paragraph.startsWith("This setting is optional."))
  const written = name.replace(/^\((.*)\)$/, "$1").replace(/ (\w+)$/, (whole, kind: string) => valueKinds.has(kind) ? ` <${kind === "redacted" ? "text" : kind}>` : whole)
  return { name: written, description: paragraphs.join(" ") }
}

const blockParagraphs = (doc: HelpDoc.HelpDoc): Array<string> => {
  switch (doc._tag) {
    case "Paragraph":
      return [spanText(doc.value)]
    case "Sequence":
      return [...blockParagraphs(doc.left), ...blockParagraphs(doc.right)]
    case "Enumeration":
      return doc.elements.flatMap(blockParagraphs)
    default:
      return []
  }
}

const spanText = (span: Span): string => {
  switch (span._tag) {
    case "Text":
    case "URI":
      return span.value
    case "Sequence":
      return spanText(span.left) + spanText(span.right)
    default:
      return spanText(span.value)
  }
}

const docText = (doc: HelpDoc.HelpDoc): string => blockParagraphs(doc).join(" ")

/** Entries as two columns, the descriptions wrapped to `width`; a name too long for its column has its description below it. */
const columns = (entries: ReadonlyArray<Entry>, width: number): Array<string> => {
  const nameWidth = Math.max(...entries.map((entry) => entry.name.length).filter((length) => length <= widestName), 0)
  const indent = " ".repeat(nameWidth + 4)
  return entries.flatMap(({ description, name }) => {
    const text = wrap(description, width - indent.length)
    if (name.length > nameWidth) return [`  ${name}`, ...text.map((line) => `${indent}${line}`)]
    return text.map((line, index) => index === 0 ? `  ${name.padEnd(nameWidth)}  ${line}` : `${indent}${line}`)
  })
}

/** The widest name a column of names is made as wide as: a wider one has its description below it. */
const widestName = 30

/** `text` in lines of at most `width` characters, broken between words. */
const wrap = (text: string, width: number): Array<string> => {
  const lines: Array<string> = []
  let line = ""
  for (const word of text.split(/\s+/).filter((word) => word !== "")) {
    if (line !== "" && line.length + 1 + word.length > Math.max(width, 20)) {
      lines.push(line)
      line = word
    } else {
      line = line === "" ? word : `${line} ${word}`
    }
  }
  return [...lines, line]
}
