import { Schema } from "effect"
import { definePlaybook, webhook } from "foundry"
import triage from "../agents/support/triage/agent.js"

const TicketCreated = Schema.Struct({
  id: Schema.String,
  customerId: Schema.String,
  priority: Schema.Number,
  body: Schema.String
})

export default definePlaybook({
  on: webhook("tickets", TicketCreated),
  when: (ticket) => ticket.priority >= 3,
  agent: triage,
  instance: (ticket) => `customer-${ticket.customerId}`,
  message: (ticket) => `Classify this ticket: ${ticket.body}`
})
