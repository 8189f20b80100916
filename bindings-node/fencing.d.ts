// Types of `leasehold/fencing`: fenced writes to PostgreSQL (docs/fencing.md).

/** What the helpers need of a client: pg's Client, Pool and PoolClient have it. */
export interface Queryable {
  query(text: string, values: unknown[]): Promise<{ rowCount: number | null }>
}

/** The table's column names, `key` and `fence` unless given. */
export interface FencedOptions {
  /** The key column (`text`). */
  keyColumn?: string
  /** The fence column (`numeric(20)`: fences outgrow `bigint`). */
  fenceColumn?: string
}

/** A fenced write that changed nothing: the holder's fence is stale, and it should stop. */
export class FenceRefused extends Error {
  /** The key written. */
  readonly key: string
  /** The write's fence. */
  readonly fence: bigint
}

/**
 * Writes `values` (column: value) to the row of `key` with `fence`, creating
 * the row if there is none, in one statement (`INSERT … ON CONFLICT … DO
 * UPDATE … WHERE fence < $2`). Rejects with FenceRefused when the row's fence
 * is `fence` or larger: nothing changed. `table` is `name` or `schema.name`.
 */
export function fencedWrite(
  client: Queryable,
  table: string,
  key: string,
  fence: bigint,
  values: Record<string, unknown>,
  options?: FencedOptions,
): Promise<void>

/** Like fencedWrite for a row that must already exist: a missing row is refused too. */
export function fencedUpdate(
  client: Queryable,
  table: string,
  key: string,
  fence: bigint,
  values: Record<string, unknown>,
  options?: FencedOptions,
): Promise<void>
