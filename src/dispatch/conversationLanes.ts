/**
 * Conversation lanes: this process executes the runs of one conversation one after the other, in
 * the order they took their places. A place is done when its run is; the run in it starts once the
 * place before it is done.
 */
import { Deferred, Effect, type FiberId } from "effect"

/** A run's place in its conversation's lane: `mine` is done when the run is, `previous` when the runs before it are. */
export interface Place {
  readonly previous: Deferred.Deferred<void> | undefined
  readonly mine: Deferred.Deferred<void>
}

/** The lanes of this process's conversations. */
export const makeConversationLanes = () => {
  const lanes = new Map<string, Deferred.Deferred<void>>()
  return {
    /** Whether the conversation has a run here, executing or waiting. */
    busy: (conversationId: string): boolean => lanes.has(conversationId),

    /** The back of the conversation's lane, taken at once (no other fiber can come between). */
    enter: (conversationId: string, fiberId: FiberId.FiberId): Place => {
      const previous = lanes.get(conversationId)
      const mine = Deferred.unsafeMake<void>(fiberId)
      lanes.set(conversationId, mine)
      return { previous, mine }
    },

    /**
     * Gives a place up (its run ended, was cancelled, or its submission failed): the runs behind it
     * go on once the runs before it are done too, so that a run cancelled while it waited does not
     * let the next one start beside the one still executing.
     */
    leave: (conversationId: string, { mine, previous }: Place): Effect.Effect<void> => {
      const leave = Effect.zipRight(
        Effect.sync(() => {
          if (lanes.get(conversationId) === mine) lanes.delete(conversationId)
        }),
        Deferred.succeed(mine, undefined)
      )
      return previous === undefined
        ? leave
        : Effect.flatMap(Deferred.isDone(previous), (before) =>
          before ? leave : Effect.asVoid(Effect.forkDaemon(Effect.zipRight(Deferred.await(previous), leave))))
    }
  }
}
