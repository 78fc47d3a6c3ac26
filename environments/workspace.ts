import { defineEnvironment } from "foundry"

export default defineEnvironment({
  description: "A scratch workspace with the support team's notes",
  files: {
    "notes/refunds.md": "Refunds are issued within 5 business days of the return arriving.\n"
  },
  readOnly: ["notes/"]
})
