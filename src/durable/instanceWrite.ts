/**
 * A change to an instance as one unit of the group commit (`Database.write`): its context, its
 * status and the installations it adds, changes and removes, with whatever else the writer adds
 * (its events), commit together or not at all. A change made from a read is written only while
 * what it read is stored so: guards refuse the unit otherwise, and the writer reads again.
 */
import type { SqlValue, Statement, WriteUnit } from "./Database.js"
import type { InstallationRecord, InstanceRef, InstanceStatus, NewInstallation } from "./records.js"

/** What one change writes. */
export interface InstanceWrite {
  /**
   * The instance is made by this write (active, with `context`), only while none of its agent has
   * its id or its provisioning key: the unit is refused otherwise.
   */
  readonly create?: { readonly provisioningKey: string | null } | undefined
  readonly context?: Readonly<Record<string, unknown>> | undefined
  /**
   * The status to set, only while the instance's is `from` (the status the change was decided on);
   * without `from`, whatever it is by then (an archive: a resume at the same moment does not undo it).
   */
  readonly status?: { readonly status: InstanceStatus; readonly reason: string | null; readonly from?: InstanceStatus | undefined } | undefined
  /**
   * Installations to write; each with `basis`, the installation as read that it was made from,
   * only while it is stored as read; without, over whatever is stored by then.
   */
  readonly install: ReadonlyArray<{ readonly installation: NewInstallation; readonly basis?: InstallationRecord | undefined }>
  /** Installations to remove, each only while it is stored as read. */
  readonly uninstall: ReadonlyArray<InstallationRecord>
}

/**
 * The `updated_at` of an installation changed at `now`: later than the one it replaces even within
 * one millisecond, as a change made from a read knows the row it read by it.
 */
const changedAt = "CASE WHEN foundry_installations.updated_at >= ? THEN foundry_installations.updated_at + 1 ELSE ? END"

const installationKey = "agent = ? AND instance_id = ? AND kind = ? AND capability = ?"

/**
 * The unit that writes `write` to the instance `ref` at `now` (or creates it with it), then `also`. On PostgreSQL the
 * guards lock what they read, the instance first (every write of an installation is such a unit, so
 * none holds an installation while it waits for the instance): a change waits for one at the same
 * moment and then reads what it wrote.
 */
export const instanceWriteUnit = (
  dialect: "sqlite" | "pg",
  ref: InstanceRef,
  write: InstanceWrite,
  now: number,
  also: ReadonlyArray<Statement>
): WriteUnit => {
  // SQLite writes one transaction at a time: what a guard reads stays so until it commits.
  const locked = dialect === "pg" ? " FOR UPDATE" : ""
  const status = write.status
  const from = status?.from
  const instanceGuard: Statement = write.create === undefined
    ? {
      sql: `SELECT id FROM foundry_instances WHERE agent = ? AND id = ? AND status <> 'archived'${from === undefined ? "" : " AND status = ?"}${locked}`,
      params: from === undefined ? [ref.agent, ref.id] : [ref.agent, ref.id, from]
    }
    // On PostgreSQL an instance made on first use (no events, no events' lock) may commit after this reads: the insert then fails on the unique key.
    : {
      sql: "SELECT 1 AS absent WHERE NOT EXISTS (SELECT 1 FROM foundry_instances WHERE agent = ? AND (id = ? OR provisioning_key = ?))",
      params: [ref.agent, ref.id, write.create.provisioningKey]
    }
  const asRead = (basis: InstallationRecord): Statement => ({
    sql: `SELECT kind FROM foundry_installations WHERE ${installationKey} AND updated_at = ?${locked}`,
    params: [ref.agent, ref.id, basis.kind, basis.capability, basis.updatedAt]
  })
  const sets = ["updated_at = ?"]
  const values: Array<SqlValue> = [now]
  if (write.context !== undefined) {
    sets.push("context = ?")
    values.push(JSON.stringify(write.context))
  }
  if (status !== undefined) {
    sets.push("status = ?", "status_reason = ?")
    values.push(status.status, status.reason)
  }
  const instance: Statement = write.create === undefined
    ? { sql: `UPDATE foundry_instances SET ${sets.join(", ")} WHERE agent = ? AND id = ?`, params: [...values, ref.agent, ref.id] }
    : {
      sql: `INSERT INTO foundry_instances (agent, id, context, provisioning_key, status, created_at, updated_at) VALUES (?, ?, ?, ?, 'active', ?, ?)`,
      params: [ref.agent, ref.id, JSON.stringify(write.context ?? {}), write.create.provisioningKey, now, now]
    }
  const installs = write.install.map(({ basis, installation }): Statement => {
    const config = JSON.stringify(installation.config)
    return basis === undefined
      ? {
        sql: `INSERT INTO foundry_installations (agent, instance_id, kind, capability, config, secrets, created_at, updated_at)
          VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (agent, instance_id, kind, capability)
          DO UPDATE SET config = excluded.config, secrets = excluded.secrets, updated_at = ${changedAt}`,
        params: [ref.agent, ref.id, installation.kind, installation.capability, config, installation.secrets, now, now, now, now]
      }
      : {
        sql: `UPDATE foundry_installations SET config = ?, secrets = ?, updated_at = ${changedAt} WHERE ${installationKey}`,
        params: [config, installation.secrets, now, now, ref.agent, ref.id, installation.kind, installation.capability]
      }
  })
  const removals = write.uninstall.map((gone): Statement => ({
    sql: `DELETE FROM foundry_installations WHERE ${installationKey}`,
    params: [ref.agent, ref.id, gone.kind, gone.capability]
  }))
  return {
    guards: [
      instanceGuard,
      ...write.install.flatMap(({ basis }) => basis === undefined ? [] : [asRead(basis)]),
      ...write.uninstall.map(asRead)
    ],
    statements: [instance, ...installs, ...removals, ...also]
  }
}
