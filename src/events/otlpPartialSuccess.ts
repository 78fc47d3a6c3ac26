/**
 * The `partial_success` of a collector's 200 answer (OTLP/HTTP): the request was taken, but
 * `rejectedSpans` of its spans were not, or the collector has a warning for the sender in
 * `errorMessage`. The specification says not to send such a request again; the exporter says so in
 * the log instead, or rejected spans would be lost without a word. Read in the JSON encoding's
 * lowerCamelCase and, as protobuf's JSON readers also take it, the proto field names.
 */
import { Option, Schema } from "effect"

/** What a collector did not take of a request it answered 200. */
export interface PartialSuccess {
  /** How many of the request's spans were rejected (0: all taken, with a warning). */
  readonly rejectedSpans: number
  /** Why, in the collector's words; "" when it gave none. */
  readonly errorMessage: string
}

/** An int64 in OTLP JSON: a string of digits, or a number. */
const Count = Schema.Union(Schema.Number, Schema.NumberFromString)

const Answer = Schema.Struct({
  partialSuccess: Schema.optional(Schema.Struct({ rejectedSpans: Schema.optional(Count), errorMessage: Schema.optional(Schema.String) })),
  partial_success: Schema.optional(Schema.Struct({ rejected_spans: Schema.optional(Count), error_message: Schema.optional(Schema.String) }))
})

const decode = Schema.decodeUnknownOption(Schema.parseJson(Answer))

/** The partial success in the body of a 2xx answer; `None` when all was taken (an empty body, `{}`, or an empty `partialSuccess`). */
export const partialSuccessOf = (body: string): Option.Option<PartialSuccess> =>
  decode(body).pipe(
    Option.map(({ partialSuccess, partial_success }) => ({
      rejectedSpans: partialSuccess?.rejectedSpans ?? partial_success?.rejected_spans ?? 0,
      errorMessage: (partialSuccess?.errorMessage ?? partial_success?.error_message ?? "").trim()
    })),
    Option.filter(({ errorMessage, rejectedSpans }) => rejectedSpans > 0 || errorMessage !== "")
  )
