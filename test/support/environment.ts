/** Environment variables for a test's scope. */
import { Effect } from "effect"

/** Sets environment variables for the scope, restoring what was there before. */
export const withEnv = (variables: Readonly<Record<string, string>>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const before = Object.fromEntries(Object.keys(variables).map((name) => [name, process.env[name]]))
      Object.assign(process.env, variables)
      return before
    }),
    (before) =>
      Effect.sync(() => {
        for (const [name, value] of Object.entries(before)) {
          if (value === undefined) delete process.env[name]
          else process.env[name] = value
        }
      })
  )
