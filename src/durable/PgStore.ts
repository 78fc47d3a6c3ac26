/**
 * The `Store` on PostgreSQL: the SQL store of `SqlStore` over `@effect/sql-pg` (node-postgres),
 * with the same names and value shapes as on SQLite.
 */
import type { SqlError } from "@effect/sql/SqlError"
import { PgClient } from "@effect/sql-pg"
import { Layer, Redacted, String as Str } from "effect"
import { getTypeParser } from "pg-types"
import * as SqlStore from "./SqlStore.js"
import { type Store, StoreError } from "./Store.js"

/** PostgreSQL's type oid of BIGINT (`int8`); BIGSERIAL columns have it too. */
const int8Oid = 20

/**
 * BIGINT as a number. node-postgres returns it as a string (it may exceed 2^53), but the store
 * keeps milliseconds and sequence numbers in it, which are safe integers, and the record schemas
 * expect numbers. A value that is not a safe integer stays a string, so decoding it fails loudly
 * instead of losing precision.
 */
const parseInt8 = (text: string): number | string => {
  const value = Number(text)
  return Number.isSafeInteger(value) ? value : text
}

/**
 * The pool's type parsers: node-postgres's defaults (from `pg-types`), except BIGINT in text
 * format. Set per pool, so nothing else in the process that uses `pg` is affected.
 */
const types = {
  getTypeParser: (oid: number, format?: "text" | "binary") =>
    format === "binary" ? getTypeParser(oid, "binary") : oid === int8Oid ? parseInt8 : getTypeParser(oid, "text")
}

/** The PostgreSQL client the store runs on: the store's name transforms and type parsers. */
export const clientLayer = (url: Redacted.Redacted | string) =>
  PgClient.layer({
    url: typeof url === "string" ? Redacted.make(url) : url,
    transformQueryNames: Str.camelToSnake,
    transformResultNames: Str.snakeToCamel,
    types
  })

/** A connection failure as a `StoreError`, with the driver's reason (e.g. `ECONNREFUSED`). */
const connectError = (error: SqlError): StoreError => {
  const cause = error.cause
  const reason = cause instanceof Error
    ? cause.message || ("code" in cause ? String(cause.code) : cause.name)
    : String(cause)
  return new StoreError({ operation: "connect", message: `${error.message}: ${reason}` })
}

/**
 * The SQL store on the PostgreSQL database at `url`; runs the migrations on start. A failure to
 * connect is a `StoreError` with operation `connect`.
 */
export const layerPg = (url: Redacted.Redacted | string): Layer.Layer<Store, StoreError> =>
  SqlStore.layer.pipe(
    Layer.provide(clientLayer(url)),
    Layer.mapError((error) => error._tag === "StoreError" ? error : connectError(error))
  )

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
