/**
 * Signing in, when the server needs API tokens: a small form asks for a token, `POST /api/session`
 * checks it and starts a session, whose secret (never the token) it leaves in an HttpOnly cookie (so
 * no script of the page holds either afterwards), and the calls that were refused are sent again.
 */
import { h } from "./dom.js"

let pending: Promise<void> | undefined

const messageOf = (body: unknown, fallback: string): string =>
  typeof body === "object" && body !== null && "message" in body ? String(body.message) : fallback

/** Shows the sign-in form (once, however many calls were refused meanwhile) until a token is accepted. */
export const signIn = (reason: string): Promise<void> => {
  pending ??= new Promise<void>((resolve) => {
    const error = h("div", { class: "error-box hidden", role: "alert" })
    const input = h("input", {
      type: "password",
      name: "token",
      placeholder: "fdy_...",
      autocomplete: "off",
      required: true,
      "aria-label": "API token"
    })
    const submit = async (event: Event): Promise<void> => {
      event.preventDefault()
      const response = await fetch("/api/session", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ token: input.value.trim() })
      })
      if (response.ok) {
        dialog.close()
        dialog.remove()
        pending = undefined
        resolve()
        return
      }
      error.textContent = messageOf(await response.json().catch(() => undefined), response.statusText)
      error.classList.remove("hidden")
    }
    const dialog = h(
      "dialog",
      { id: "sign-in", class: "card" },
      h("h1", {}, "Sign in"),
      h("p", { class: "muted" }, reason),
      h("p", {}, "Paste an API token (", h("code", {}, "foundry token create --scope read"), " makes one)."),
      h("form", { class: "composer", onsubmit: (event) => void submit(event) }, input, h("button", { type: "submit" }, "Sign in")),
      error
    )
    // Escape would close the dialog and leave the page waiting with nothing to sign in with.
    dialog.addEventListener("cancel", (event) => event.preventDefault())
    document.body.append(dialog)
    dialog.showModal()
    input.focus()
  })
  return pending
}
