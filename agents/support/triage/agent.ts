import { defineAgent } from "foundry"
import classify from "./classify.tool.js"

export default defineAgent({
  description: "Triages incoming support tickets by priority",
  model: "demo",
  instructions: "Classify each ticket's priority, then say who should handle it.",
  tools: [classify]
})
