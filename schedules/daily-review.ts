import { defineSchedule } from "foundry"
import support from "../agents/support/agent.js"

export default defineSchedule({
  cron: "0 9 * * 1-5",
  timezone: "Europe/Berlin",
  agent: support,
  instance: "default",
  message: "Review unresolved tickets and check the status of order 1001.",
  overlap: "skip",
  misfire: "run-once"
})
