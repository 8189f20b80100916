// What the tests expect of a failing call's error.

import assert from 'node:assert/strict'

import { isTimeout, LeaseholdError } from 'leasehold'

/**
 * A check for `assert.throws` and `assert.rejects`: the error is a
 * LeaseholdError with `code`, and a timeout only when `code` is TIMEOUT
 * (SLOT-07: a timeout is recognisable apart from the other failures).
 * @param {string} code
 */
export const fails = (code) => (/** @type {unknown} */ e) => {
  assert.ok(e instanceof LeaseholdError, `not a LeaseholdError: ${e}`)
  assert.equal(e.code, code, e.message)
  assert.equal(isTimeout(e), code === 'TIMEOUT')
  return true
}
