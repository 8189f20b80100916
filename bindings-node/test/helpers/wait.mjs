// Waiting in real time, with bounds: the core's work runs on its own
// threads, so a test looks again until what it expects happened.

import { setTimeout as sleep } from 'node:timers/promises'

export { sleep }

/**
 * Settles as `promise` does, or rejects after `ms` (30 s): a guard against a
 * call that never answers (a hang), not a bound on how fast it answers.
 * @template T
 * @param {Promise<T>} promise
 * @param {string} what
 * @param {number} [ms]
 * @returns {Promise<T>}
 */
export function orHang(promise, what, ms = 30_000) {
  /** @type {NodeJS.Timeout | undefined} */
  let timer
  const hung = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms)
  })
  return /** @type {Promise<T>} */ (Promise.race([promise, hung])).finally(() =>
    clearTimeout(timer),
  )
}

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
