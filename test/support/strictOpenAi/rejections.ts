/** The strict fake's 400s, worded as OpenAI words them. */
import { Either } from "effect"
import type { OpenAiError } from "./wire.js"

export const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value)

/** A JSON value's type the way OpenAI names it in "expected …, but got … instead". */
const jsonType = (value: unknown): string => {
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  switch (typeof value) {
    case "string":
      return "a string"
    case "boolean":
      return "a boolean"
    case "number":
      return Number.isInteger(value) ? "an integer" : "a decimal"
    default:
      return "an object"
  }
}

export const reject = (
  message: string,
  param: string | null,
  code: string | null = null
): Either.Either<never, OpenAiError> => Either.left({ message, type: "invalid_request_error", param, code })

export const missing = (param: string) => reject(`Missing required parameter: '${param}'.`, param, "missing_required_parameter")

export const invalidType = (param: string, expected: string, got: unknown) =>
  reject(`Invalid type for '${param}': expected ${expected}, but got ${jsonType(got)} instead.`, param, "invalid_type")

export const emptyArray = (param: string) =>
  reject(
    `Invalid '${param}': empty array. Expected an array with minimum length 1, but got an empty array instead.`,
    param,
    "empty_array"
  )

/** OpenAI lists supported values as `'a', 'b', and 'c'`. */
export const invalidValue = (param: string, value: string, supported: ReadonlyArray<string>) => {
  const quoted = supported.map((s) => `'${s}'`)
  const list = quoted.length <= 2
    ? quoted.join(" and ")
    : `${quoted.slice(0, -1).join(", ")}, and ${quoted[quoted.length - 1]}`
  return reject(`Invalid value: '${value}'. Supported values are: ${list}.`, param, "invalid_value")
}
