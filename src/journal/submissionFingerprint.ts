/**
 * What a run queued with an idempotency key was submitted for, kept with it as a hash: a repeated
 * key with another submission is another request (refused), with the same one a retry (answered
 * with the first run).
 */
import { createHash } from "node:crypto"
import type { ChatMessage } from "../models/Model.js"

/** What a submission asked for, as `submissionFingerprint` and `isSameSubmission` compare it. */
export interface Submission {
  readonly agent: string
  readonly instanceId: string
  readonly input: string
  /**
   * The messages a stateless client sent before `input`, as it sent them: the same key with
   * another history is another request. None, or none given, leaves the hash as it was before
   * histories were covered, so that runs queued then still match their repeats.
   */
  readonly history?: ReadonlyArray<ChatMessage> | undefined
}

/**
 * What a submission asked for, as a hash: a repeated idempotency key with a different submission
 * is a different request, not a retry. `conversation` is the one it continued, `null` for a new one.
 */
export const submissionFingerprint = (submission: Submission & { readonly conversation: string | null }): string =>
  createHash("sha256")
    .update(JSON.stringify([
      submission.agent,
      submission.instanceId,
      submission.input,
      submission.conversation,
      ...(submission.history === undefined || submission.history.length === 0 ? [] : [submission.history])
    ]))
    .digest("hex")

/**
 * Whether a run queued with an idempotency key was queued for `submission`: `first` is its
 * `submissionFingerprint` (`null` for a run queued before fingerprints were kept: taken as this
 * one), `conversations` the ones the submission may have named (`null` for a new one).
 */
export const isSameSubmission = (
  first: string | null,
  submission: Submission,
  conversations: ReadonlyArray<string | null>
): boolean =>
  first === null || conversations.some((conversation) => first === submissionFingerprint({ ...submission, conversation }))
