/**
 * When a create finds an instance where it asked for one, whether that is the one it asked for: a
 * repeated provisioning key answers its instance, anything else (an id taken by another instance,
 * an archived one, a key and an id naming two) is a conflict that says what to send instead.
 */
import type { InstanceRef } from "../durable/records.js"
import type { InstanceRecord } from "../durable/records.js"
import { InstanceConflict } from "./instanceErrors.js"

/**
 * The conflict a create of `ref` (with `request`'s id and provisioning key) answers, given what the
 * store made or found (`made`); `undefined` when `made` is the instance to answer.
 */
export const createConflict = (
  ref: InstanceRef,
  request: { readonly id?: string | undefined; readonly provisioningKey?: string | undefined },
  made: { readonly instance: InstanceRecord; readonly created: boolean }
): InstanceConflict | undefined => {
  // A repeated provisioning key answers its instance; an id taken by another instance is a conflict.
  const taken = !made.created && (request.provisioningKey === undefined || made.instance.provisioningKey !== request.provisioningKey)
  // An archived instance keeps its id: PATCH would be refused too, so only another id goes on.
  if (taken && made.instance.status === "archived") {
    return new InstanceConflict({
      agent: ref.agent,
      instance: ref.id,
      message: `agent "${ref.agent}" has an archived instance "${ref.id}"` +
        (made.instance.statusReason === null ? "" : ` (${made.instance.statusReason})`) +
        ": archiving is final (there is no unarchive) and the instance keeps its id with its history; " +
        "create the new instance with another id"
    })
  }
  if (taken) {
    return new InstanceConflict({
      agent: ref.agent,
      instance: ref.id,
      message: `agent "${ref.agent}" has an instance "${ref.id}" already` +
        (made.instance.provisioningKey === null ? "" : ` (provisioning key "${made.instance.provisioningKey}")`) +
        `; change it with PATCH /api/instances/${ref.id}?agent=${ref.agent}, or create another with another id`
    })
  }
  // The key names one instance and the id another: neither answer would be the one asked for.
  if (!made.created && request.id !== undefined && made.instance.id !== request.id) {
    return new InstanceConflict({
      agent: ref.agent,
      instance: request.id,
      message: `provisioning key "${request.provisioningKey}" belongs to instance "${made.instance.id}" of agent "${ref.agent}", not "${request.id}": ` +
        `send id "${made.instance.id}" (or no id) to get that instance, or another key to create "${request.id}"`
    })
  }
  // A retried provisioning must not be handed an instance that takes nothing any more.
  if (!made.created && made.instance.status === "archived") {
    return new InstanceConflict({
      agent: ref.agent,
      instance: made.instance.id,
      message: `provisioning key "${request.provisioningKey}" belongs to instance "${made.instance.id}" of agent "${ref.agent}", ` +
        "which is archived: it takes no runs and changes no more; provision with another key"
    })
  }
  return undefined
}
