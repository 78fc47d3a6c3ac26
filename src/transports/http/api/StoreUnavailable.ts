/**
 * The answer to a request the store could not serve: any endpoint may give it, so the API declares
 * it once. It says only what a client can act on; what failed (SQL, file paths, driver messages)
 * goes to the server's log (see `handlers/storeUnavailable`).
 */
import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"

/** The store could not be reached or used; the same request can be sent again. */
export class StoreUnavailable extends Schema.TaggedError<StoreUnavailable>()(
  "StoreUnavailable",
  {
    message: Schema.String
  },
  HttpApiSchema.annotations({
    status: 503,
    description: "The store could not be reached or used; the request can be retried"
  })
) {}
