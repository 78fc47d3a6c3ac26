/**
 * Page cursors: where a page ended, as opaque text to clients (base64url of its JSON) and as a
 * value to the server. A client sends back the `next` of a page as it was given.
 */
import { ParseResult, Schema } from "effect"

/** The cursor of pages that end at an `end`: text that is not a `next` the server gave is refused saying so. */
export const opaqueCursor = <A, I>(end: Schema.Schema<A, I>) => {
  const text = Schema.compose(Schema.StringFromBase64Url, Schema.parseJson(end))
  return Schema.transformOrFail(Schema.String, Schema.typeSchema(end), {
    strict: true,
    decode: (value, _, ast) =>
      ParseResult.mapError(Schema.decode(text)(value), () => new ParseResult.Type(ast, value, "expected the `next` of a previous page")),
    encode: (value) => ParseResult.mapError(Schema.encode(text)(value), (error) => error.issue)
  }).annotations({ description: "The `next` of the previous page, as it was given" })
}
