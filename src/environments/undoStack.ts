/**
 * Undo and redo over a scope's versions. The versions are an append-only log (nothing stored is
 * ever rewritten, so history shows what happened, undos included); which state is current, and
 * what undo and redo would restore, is worked out by replaying the log: a change pushes a state,
 * an undo pops one onto the redo stack, a redo pushes it back, and a new change clears redo.
 * Checkpoints label the current state without making a new one.
 */
import type { EnvironmentVersion } from "../durable/EnvironmentStorage.js"

/** Where a scope stands: the version whose files are current, and the states undo and redo lead to. */
export interface UndoState {
  /** Versions whose files each state holds, oldest first; the last is current (0: the initial tree). */
  readonly states: ReadonlyArray<number>
  /** Versions that redo restores, the next one last. */
  readonly redo: ReadonlyArray<number>
}

/**
 * Replays the log, oldest version first. Restoring a chosen version (`undo({ version })`) is
 * recorded as a change: a new state that can itself be undone.
 */
export const undoState = (versions: ReadonlyArray<Pick<EnvironmentVersion, "version" | "kind">>): UndoState => {
  const states: Array<number> = [0]
  let redo: Array<number> = []
  for (const entry of versions) {
    switch (entry.kind) {
      case "seed":
      case "change":
        states.push(entry.version)
        redo = []
        break
      case "checkpoint":
        break
      case "undo": {
        const undone = states.length > 1 ? states.pop() : undefined
        if (undone !== undefined) redo.push(undone)
        break
      }
      case "redo": {
        const redone = redo.pop()
        if (redone !== undefined) states.push(entry.version)
        break
      }
    }
  }
  return { states, redo }
}

/** The version undo restores from this state, or `undefined` when there is nothing to undo. */
export const undoTarget = (state: UndoState): number | undefined =>
  state.states.length > 1 ? state.states[state.states.length - 2] : undefined

/** The version redo restores, or `undefined` when nothing was undone since the last change. */
export const redoTarget = (state: UndoState): number | undefined => state.redo[state.redo.length - 1]
