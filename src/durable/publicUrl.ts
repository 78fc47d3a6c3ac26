/**
 * A database URL fit to print: scheme, user, host, port and database, without the password or
 * query parameters. Text that is not a URL gives just `postgres`.
 */
export const publicUrl = (url: string): string => {
  if (!URL.canParse(url)) return "postgres"
  const parsed = new URL(url)
  const user = parsed.username === "" ? "" : `${parsed.username}@`
  return `${parsed.protocol}//${user}${parsed.host}${parsed.pathname}`
}
