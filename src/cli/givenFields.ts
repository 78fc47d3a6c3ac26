/**
 * A command's optional flags as the fields of a request: those given, by the name the API takes.
 */
import { Option } from "effect"

/** The fields of `fields` whose flag was given, unwrapped; the others left out. */
export const givenFields = <V>(fields: Readonly<Record<string, Option.Option<V>>>): Record<string, V> => {
  const given: Record<string, V> = {}
  for (const [name, value] of Object.entries(fields)) if (Option.isSome(value)) given[name] = value.value
  return given
}
