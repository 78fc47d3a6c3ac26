/**
 * What a request's `Accept` header prefers: a route that answers either JSON or something else
 * (an event stream, the inspector's page) answers what the client weighs more.
 */

/** A weight parameter (`q=0.5`, spaces around `=` too) and its value. */
const weightParameter = /^q\s*=\s*(.*)$/

/**
 * The weights (`q`) an `Accept` header gives the media ranges it names, by range (lower case); a
 * weight that is no number counts as 1, as if none were given.
 */
const weightsIn = (accept: string): ReadonlyMap<string, number> => {
  const weights = new Map<string, number>()
  for (const entry of accept.split(",")) {
    const [range = "", ...parameters] = entry.split(";").map((part) => part.trim().toLowerCase())
    const given = parameters.map((parameter) => weightParameter.exec(parameter)?.[1]).find((value) => value !== undefined)
    const weight = given === undefined || given === "" || Number.isNaN(Number(given)) ? 1 : Number(given)
    weights.set(range, Math.max(weights.get(range) ?? 0, weight))
  }
  return weights
}

/**
 * Whether `accept` names `mediaType` with a weight above 0, and gives JSON no higher weight, by its
 * most specific range (`application/json`, else `application/*`, else `*\/*`): a client that lists
 * both prefers the one it weighs more; at equal weights, the type it named.
 */
export const prefersOverJson = (accept: string | undefined, mediaType: string): boolean => {
  if (accept === undefined || !accept.toLowerCase().includes(mediaType)) return false
  const weights = weightsIn(accept)
  const named = weights.get(mediaType) ?? 0
  const json = weights.get("application/json") ?? weights.get("application/*") ?? weights.get("*/*") ?? 0
  return named > 0 && named >= json
}
