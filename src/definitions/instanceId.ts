/**
 * Instance ids as they may be chosen, by clients or by a playbook's `instance(event)`: they appear
 * in URLs and event streams, and never hold `@`, which separates agent and instance in `/v1`'s
 * model names (`support@acme`).
 */

/** An instance id's form. */
export const instanceIdPattern = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/

/** The form, said to whoever gave another. */
export const instanceIdForm = "1-128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit"

/** Whether `id` has the form of an instance id. */
export const isInstanceId = (id: string): boolean => instanceIdPattern.test(id)
