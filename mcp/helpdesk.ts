import { Redacted, Schema } from "effect"
import { defineMcpServer } from "foundry"

/**
 * A customer's help desk, reached over MCP (Streamable HTTP). Installable: each instance installs
 * it with its own desk's URL and token, so every customer's runs reach their own desk.
 */
export default defineMcpServer({
  description: "The customer's help desk: tickets and their history",
  installable: {
    config: Schema.Struct({
      url: Schema.String,
      token: Schema.Redacted(Schema.String)
    })
  },
  connect: ({ token, url }) => ({ url, headers: { authorization: `Bearer ${Redacted.value(token)}` } })
})
