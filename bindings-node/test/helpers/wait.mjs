// Waiting in real time, with bounds: the core's work runs on its own
// threads, so a test looks again until what it expects happened.

import { setTimeout as sleep } from 'node:timers/promises'

export { sleep }

/**
 * Polls `check` every millisecond until it returns true; false after `ms`.
 * @param {() => boolean} check
 * @param {number} [ms]
 */
export async function eventually(check, ms = 5_000) {
  const until = Date.now() + ms
  while (!check()) {
    if (Date.now() > until) return false
    await sleep(1)
  }
  return true
}
