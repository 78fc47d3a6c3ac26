/** What is logged in a test. */
import { Effect, FiberRef, HashSet, Logger, LogLevel } from "effect"

/**
 * The messages of warnings and infos (and anything above) logged from here on in the test's fiber
 * and the fibers it forks (a server built in it), for as long as the scope is open.
 */
export const logLines = Effect.gen(function*() {
  const lines: Array<string> = []
  const collect = Logger.make(({ logLevel, message }) => {
    if (LogLevel.greaterThanEqual(logLevel, LogLevel.Info)) lines.push(Array.isArray(message) ? message.join(" ") : String(message))
  })
  yield* Effect.locallyScopedWith(FiberRef.currentLoggers, HashSet.add(collect))
  return lines
})
