'use strict'
// Fenced writes to PostgreSQL (`require('leasehold/fencing')`, docs/fencing.md):
// a write that carries a lease's fence lands only if the row's last fence is
// smaller, so a holder paused past its lease cannot overwrite the holder after
// it. For any client with `query(text, values)` resolving to `{ rowCount }`,
// such as pg's Client, Pool and PoolClient; the package does not depend on pg.

/** @typedef {import('./fencing').Queryable} Queryable */
/** @typedef {import('./fencing').FencedOptions} FencedOptions */

/** A fenced write that changed nothing: the holder's fence is stale. */
class FenceRefused extends Error {
  /**
   * @param {string} key
   * @param {bigint} fence
   */
  constructor(key, fence) {
    super(
      `the write to ${JSON.stringify(key)} with fence ${fence} was refused: ` +
        'a write with a fence as large or larger landed first',
    )
    this.name = 'FenceRefused'
    /** The key written. */
    this.key = key
    /** The write's fence. */
    this.fence = fence
  }
}

/** `name` as a quoted SQL identifier. @param {string} name */
function quote(name) {
  return `"${name.replaceAll('"', '""')}"`
}

/** `name` or `schema.name`, each part quoted. @param {string} table */
function quoteTable(table) {
  return table.split('.').map(quote).join('.')
}

/**
 * Writes `values` (column: value) to the row of `key` with `fence`, creating
 * the row if there is none, in one statement (`INSERT … ON CONFLICT … DO
 * UPDATE … WHERE fence < $2`). Rejects with FenceRefused when the row's fence
 * is `fence` or larger: nothing changed.
 * @param {Queryable} client
 * @param {string} table
 * @param {string} key
 * @param {bigint} fence
 * @param {Record<string, unknown>} values
 * @param {FencedOptions} [options]
 * @returns {Promise<void>}
 */
async function fencedWrite(client, table, key, fence, values, options = {}) {
  const k = quote(options.keyColumn ?? 'key')
  const f = quote(options.fenceColumn ?? 'fence')
  const columns = Object.keys(values).map(quote)
  const names = [k, f, ...columns].join(', ')
  const placeholders = ['$1', '$2::numeric', ...columns.map((_, i) => `$${i + 3}`)].join(', ')
  const set = [f, ...columns].map((c) => `${c} = EXCLUDED.${c}`).join(', ')
  const text =
    `INSERT INTO ${quoteTable(table)} AS t (${names}) VALUES (${placeholders}) ` +
    `ON CONFLICT (${k}) DO UPDATE SET ${set} WHERE t.${f} < EXCLUDED.${f}`
  await execute(client, text, key, fence, values)
}

/**
 * Like fencedWrite for a row that must already exist (`UPDATE … WHERE key =
 * $1 AND fence < $2`): a missing row is refused too.
 * @param {Queryable} client
 * @param {string} table
 * @param {string} key
 * @param {bigint} fence
 * @param {Record<string, unknown>} values
 * @param {FencedOptions} [options]
 * @returns {Promise<void>}
 */
async function fencedUpdate(client, table, key, fence, values, options = {}) {
  const k = quote(options.keyColumn ?? 'key')
  const f = quote(options.fenceColumn ?? 'fence')
  const set = [
    `${f} = $2::numeric`,
    ...Object.keys(values).map((c, i) => `${quote(c)} = $${i + 3}`),
  ]
  const text = `UPDATE ${quoteTable(table)} SET ${set.join(', ')} WHERE ${k} = $1 AND ${f} < $2::numeric`
  await execute(client, text, key, fence, values)
}

/**
 * @param {Queryable} client
 * @param {string} text
 * @param {string} key
 * @param {bigint} fence
 * @param {Record<string, unknown>} values
 */
async function execute(client, text, key, fence, values) {
  if (typeof fence !== 'bigint' || fence < 0n || fence >= 1n << 64n) {
    throw new RangeError(`a fence is an unsigned 64-bit bigint, not ${fence}`)
  }
  // The fence goes as decimal text: a JS number would lose its low bits.
  const result = await client.query(text, [key, fence.toString(), ...Object.values(values)])
  if (result.rowCount === 0) {
    throw new FenceRefused(key, fence)
  }
}

module.exports = { FenceRefused, fencedWrite, fencedUpdate }
