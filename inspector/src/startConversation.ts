/**
 * A form that starts a conversation: its first message sent to an agent's instance, then the
 * conversation opened, where its reply streams in. What the server refused (an archived or paused
 * instance, a context the agent requires) is said in `problem`.
 */
import { api } from "./api.js"
import { type Child, errorText, h } from "./dom.js"
import { navigate } from "./navigate.js"

/** Who the first message goes to; `instance` absent or empty is the agent's default instance. */
export interface Addressee {
  readonly agent: string
  readonly instance?: string
}

/** The form, with `fields` before its message box (an agent picker, an instance's id). */
export const startConversationForm = (options: {
  readonly fields: ReadonlyArray<Child>
  readonly to: () => Addressee
  readonly problem: HTMLElement
  readonly placeholder: string
  readonly testId?: string
}) => {
  const message = h("input", { name: "message", placeholder: options.placeholder, autocomplete: "off" })
  return h("form", {
    class: "composer",
    ...(options.testId === undefined ? {} : { "data-testid": options.testId }),
    onsubmit: (event) => {
      event.preventDefault()
      if (message.value.trim() === "") return
      options.problem.textContent = ""
      const { agent, instance } = options.to()
      const to = instance === undefined || instance.trim() === "" ? { agent } : { agent, instance: instance.trim() }
      void api.send({ ...to, message: message.value }).then(
        (r) => navigate(`/conversations/${r.conversationId}`),
        (error: unknown) => {
          options.problem.textContent = errorText(error)
        }
      )
    }
  }, ...options.fields, message, h("button", { type: "submit" }, "Start"))
}
