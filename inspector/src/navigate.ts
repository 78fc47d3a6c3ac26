/**
 * Moving to another page of the inspector without reloading: the new URL is pushed and announced
 * as the browser announces a move back or forward, so that the router (main.ts), which pages do
 * not import, draws it.
 */
export const navigate = (href: string): void => {
  history.pushState(null, "", href)
  window.dispatchEvent(new PopStateEvent("popstate", { state: null }))
}
