// The PostgreSQL that `make postgres` starts: its URL (LEASEHOLD_POSTGRES_URL,
// or the file it writes under the cargo target dir).

import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'

import { repo } from './server.mjs'

/** The URL of `make postgres`'s cluster; fails the tests when there is none. */
export function postgresUrl() {
  if (process.env.LEASEHOLD_POSTGRES_URL) return process.env.LEASEHOLD_POSTGRES_URL
  const file = join(process.env.CARGO_TARGET_DIR ?? join(repo, 'target'), 'postgres', 'url')
  if (!existsSync(file))
    throw new Error(`no PostgreSQL URL in LEASEHOLD_POSTGRES_URL or ${file}: make postgres`)
  return readFileSync(file, 'utf8').trim()
}
