/**
 * The answer to an instance id asked for without its agent when several agents have an instance
 * with that id. The issue says what is wrong with the `agent` parameter in words any client can
 * show beside its own name for it (the CLI's `--agent`); the message adds how HTTP sends it.
 */
import { BadRequest } from "../api/BadRequest.js"

/** `id` alone names an instance of each of `owners`: the request must say which agent's. */
export const ambiguousInstance = (id: string, owners: ReadonlyArray<string>): BadRequest => {
  const problem = `agents ${owners.map((name) => `"${name}"`).join(", ")} each have an instance "${id}": say which`
  return new BadRequest({ message: `agent: ${problem} with ?agent=`, issues: [{ path: "agent", message: problem }] })
}
