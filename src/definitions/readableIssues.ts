/**
 * Decode errors as a person reads them: one line per failing field, `items[0].id: expected a
 * string, got 3`, never a Schema tree. HTTP 400s, webhook 400s and the tool-argument errors the
 * model is shown all come from here, so a mistake reads the same wherever it surfaces.
 *
 * `ParseResult.ArrayFormatter` does the walking (paths, `message` annotations, missing keys); the
 * issue tree is only rewritten first, so that a type mismatch says what was expected in a few
 * words where the formatter would print the whole expected schema, and a union says one thing
 * rather than one line per member.
 */
import { Array as Arr, Option, ParseResult, Schema, SchemaAST as AST } from "effect"
import { didYouMean, meantField } from "../text/closest.js"

/** One failing field: where it is (`items[0].id`, or a label for the whole value) and what is wrong. */
export const ReadableIssue = Schema.Struct({
  path: Schema.String,
  message: Schema.String
}).annotations({ identifier: "ReadableIssue", description: "One field that did not match: its path and what was expected" })

/** One failing field. */
export type ReadableIssue = typeof ReadableIssue.Type

/**
 * The failing fields of `error`, one per field. `root` names the whole value when it is the value
 * itself that fails (e.g. `(body)` for a request body that is not an object); `under` names a field
 * the value is in, which every path then starts with (`context` gives `context` and `context.company`).
 */
export const readableIssues = (
  error: ParseResult.ParseError,
  options: { readonly root?: string; readonly under?: string } = {}
): ReadonlyArray<ReadableIssue> =>
  Arr.dedupeWith(
    ParseResult.ArrayFormatter.formatIssueSync(readable(error.issue)).map((issue) => ({
      path: options.under === undefined
        ? pathText(issue.path, options.root ?? "(root)")
        : issue.path.length === 0
        ? options.under
        : `${options.under}.${pathText(issue.path, "")}`,
      message: issue.message
    })),
    (a, b) => a.path === b.path && a.message === b.message
  )

/** The issues as text, one `path: message` line each. */
export const formatIssues = (issues: ReadonlyArray<ReadableIssue>): string =>
  issues.map(({ message, path }) => `${path}: ${message}`).join("\n")

/**
 * A key an object does not have, said with the one it likely meant and those it has
 * (`conversationId: is not allowed; did you mean "conversation"? (the fields here: agent, message,
 * conversation)`): the field names a reply carries are not always those a request takes.
 */
const notAField = (issue: ParseResult.ParseIssue, fields: ReadonlyArray<string>): ParseResult.ParseIssue => {
  if (issue._tag !== "Pointer" || issue.issue._tag !== "Unexpected" || Array.isArray(issue.path)) return issue
  const message = `is not allowed${didYouMean(meantField(String(issue.path), fields))} (the fields here: ${fields.join(", ") || "none"})`
  return new ParseResult.Pointer(issue.path, issue.actual, new ParseResult.Unexpected(issue.issue.actual, message))
}

const readable = (issue: ParseResult.ParseIssue): ParseResult.ParseIssue => {
  switch (issue._tag) {
    case "Type":
      // A message already there came from a schema or a transformation and says more than ours.
      return issue.message === undefined
        ? new ParseResult.Type(issue.ast, issue.actual, `expected ${expected(issue.ast)}, got ${got(issue.actual)}`)
        : issue
    case "Unexpected":
      return new ParseResult.Unexpected(issue.actual, "is not allowed")
    case "Missing":
    case "Forbidden":
      return issue
    case "Pointer":
      return new ParseResult.Pointer(issue.path, issue.actual, readable(issue.issue))
    case "Refinement":
      return new ParseResult.Refinement(issue.ast, issue.actual, issue.kind, readable(issue.issue))
    case "Transformation":
      return new ParseResult.Transformation(issue.ast, issue.actual, issue.kind, readable(issue.issue))
    case "Composite": {
      if (AST.isTypeLiteral(issue.ast)) {
        const fields = issue.ast.propertySignatures.map((signature) => String(signature.name))
        const inside = (member: ParseResult.ParseIssue) => {
          const named = notAField(member, fields)
          return named === member ? readable(member) : named
        }
        return new ParseResult.Composite(issue.ast, issue.actual, isMany(issue.issues) ? Arr.map(issue.issues, inside) : inside(issue.issues), issue.output)
      }
      if (!AST.isUnion(issue.ast) || !isMany(issue.issues)) {
        return new ParseResult.Composite(
          issue.ast,
          issue.actual,
          isMany(issue.issues) ? Arr.map(issue.issues, readable) : readable(issue.issues),
          issue.output
        )
      }
      // A union member the value got into says what is wrong inside it; the members whose type it
      // does not have are noise then (the `undefined` of an optional field, above all). When it
      // has none of their types, one line says so.
      const inside = issue.issues.filter((member) => !isTypeMismatch(member))
      return Arr.isNonEmptyReadonlyArray(inside)
        ? new ParseResult.Composite(issue.ast, issue.actual, Arr.map(inside, readable), issue.output)
        : readable(new ParseResult.Type(issue.ast, issue.actual))
    }
  }
}

/** Whether the value failed on its type alone (for a union: on every member's type). */
const isTypeMismatch = (issue: ParseResult.ParseIssue): boolean =>
  issue._tag === "Type"
    ? issue.message === undefined && Option.isNone(AST.getMessageAnnotation(issue.ast))
    : issue._tag === "Composite" && AST.isUnion(issue.ast) && isMany(issue.issues) && issue.issues.every(isTypeMismatch)

const isMany = (
  issues: ParseResult.SingleOrNonEmpty<ParseResult.ParseIssue>
): issues is Arr.NonEmptyReadonlyArray<ParseResult.ParseIssue> => Array.isArray(issues)

/** What a schema accepts, in a few words: "a string", "one of \"a\", \"b\"", "an object". */
const expected = (ast: AST.AST): string => {
  switch (ast._tag) {
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "a boolean"
    case "BigIntKeyword":
      return "a bigint"
    case "SymbolKeyword":
      return "a symbol"
    case "ObjectKeyword":
    case "TypeLiteral":
      return "an object"
    case "TupleType":
      return "an array"
    case "UndefinedKeyword":
      return "undefined"
    case "VoidKeyword":
    case "NeverKeyword":
      return "no value"
    case "UnknownKeyword":
    case "AnyKeyword":
      return "any value"
    case "Literal":
      return literalText(ast.literal)
    case "UniqueSymbol":
      return String(ast.symbol)
    case "Enums":
      return `one of ${ast.enums.map(([, value]) => literalText(value)).join(", ")}`
    case "TemplateLiteral":
      return `a string like ${String(ast)}`
    case "Union": {
      // `undefined` is how an optional field is typed, not a value anyone sends.
      const defined = ast.types.filter((member) => !AST.isUndefinedKeyword(member))
      const members = defined.length > 0 ? defined : ast.types
      const literals = members.flatMap((member) => AST.isLiteral(member) ? [literalText(member.literal)] : [])
      const others = Arr.dedupe(members.filter((member) => !AST.isLiteral(member)).map(expected))
      return [...others, ...(literals.length > 1 ? [`one of ${literals.join(", ")}`] : literals)].join(" or ")
    }
    case "Suspend":
      return expected(ast.f())
    case "Transformation":
      return expected(ast.to)
    case "Refinement":
      // Effect's own refinements describe what they accept ("a non empty string", "an integer").
      return Option.getOrElse(
        Option.orElse(AST.getDescriptionAnnotation(ast), () => AST.getTitleAnnotation(ast)),
        () => `${expected(ast.from)} that passes its check`
      )
    case "Declaration":
      return Option.getOrElse(
        Option.firstSomeOf([
          AST.getDescriptionAnnotation(ast),
          AST.getTitleAnnotation(ast),
          AST.getIdentifierAnnotation(ast)
        ]),
        () => "a valid value"
      )
  }
}

const literalText = (literal: AST.LiteralValue): string =>
  typeof literal === "string" ? JSON.stringify(literal) : typeof literal === "bigint" ? `${literal}n` : String(literal)

const longestQuoted = 40

/** What was sent instead, short enough for one line. */
const got = (value: unknown): string => {
  if (typeof value === "string") {
    return JSON.stringify(value.length > longestQuoted ? `${value.slice(0, longestQuoted - 1)}…` : value)
  }
  if (typeof value === "bigint") return `${value}n`
  if (Array.isArray(value)) return value.length === 0 ? "an empty array" : "an array"
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? "an invalid date" : value.toISOString()
  if (typeof value === "function") return "a function"
  if (typeof value === "object" && value !== null) return "an object"
  return String(value)
}

const identifier = /^[A-Za-z_$][\w$]*$/

/** `items[0].id`; a first key is written as is, so that `idempotency-key` reads as a header name. */
const pathText = (path: ReadonlyArray<PropertyKey>, root: string): string =>
  path.length === 0 ? root : path.map((key, index) => {
    if (typeof key === "number") return `[${key}]`
    if (typeof key === "symbol") return `[${String(key)}]`
    if (index === 0 && key !== "") return key
    return identifier.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
  }).join("")
