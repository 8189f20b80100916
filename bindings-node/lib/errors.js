'use strict'
// Errors (ERR-01): every failure is a LeaseholdError whose `code` is one of
// the project's stable codes as JS writes them ('LOST', 'INVALID_TTL', …);
// a lost lease is a LostError. The codes come from the core (ErrorKind::js_code).

const native = require('./native')

/** @typedef {import('../index').ErrorCode} ErrorCode */
/** @typedef {import('../index').LossReason} LossReason */

/** Every ERR-01 code, as `err.code` writes it. */
const codes = /** @type {Readonly<{ [C in ErrorCode]: C }>} */ (
  Object.freeze(Object.fromEntries(native.errorCodes().map((code) => [code, code])))
)
const known = new Set(Object.keys(codes))

/** A Leasehold failure; `code` says which (ERR-01). */
class LeaseholdError extends Error {
  /**
   * @param {ErrorCode} code
   * @param {string} message
   * @param {{ cause?: unknown }} [options]
   */
  constructor(code, message, options) {
    super(message, options)
    /** @type {ErrorCode} */
    this.code = code
  }
}
Object.defineProperty(LeaseholdError.prototype, 'name', { value: 'LeaseholdError' })

/**
 * The lease is gone (code 'LOST'): it ran out, was revoked at maxHold,
 * released elsewhere, or its store restarted or closed; or a held slot is
 * (`slots.hold`). From `hold`, it keeps the held function's own outcome:
 * `cause` when it threw, `result` when it resolved (LOCK-10).
 */
class LostError extends LeaseholdError {
  /**
   * @param {string} message
   * @param {{ lossReason?: LossReason | null, cause?: unknown, result?: unknown }} [options]
   */
  constructor(message, options = {}) {
    super('LOST', message, 'cause' in options ? { cause: options.cause } : undefined)
    /** @type {'LOST'} */
    this.code = 'LOST'
    /** @type {LossReason | null} */
    this.lossReason = options.lossReason ?? null
    if ('result' in options) {
      /** @type {unknown} */
      this.result = options.result
    }
  }
}
Object.defineProperty(LostError.prototype, 'name', { value: 'LostError' })

/**
 * Whether `error` is a store timeout (SLOT-07): a LeaseholdError with code
 * 'TIMEOUT' (the store did not answer in time; the call's outcome is
 * unknown), or an error whose `cause` chain holds one. Failures that are
 * outcomes (NAMESPACE_MISMATCH, LOST, …) are not.
 * @param {unknown} error
 * @returns {boolean}
 */
function isTimeout(error) {
  const seen = new Set()
  let current = error
  while (typeof current === 'object' && current !== null && !seen.has(current)) {
    if (current instanceof LeaseholdError && current.code === 'TIMEOUT') return true
    seen.add(current)
    current = /** @type {{ cause?: unknown }} */ (current).cause
  }
  return false
}

/** Node-API statuses of a value the addon could not convert: a wrong argument type. */
const conversionStatuses = new Set([
  'InvalidArg',
  'ObjectExpected',
  'StringExpected',
  'NameExpected',
  'FunctionExpected',
  'NumberExpected',
  'BooleanExpected',
  'ArrayExpected',
  'BigintExpected',
  'DateExpected',
])

/**
 * The LeaseholdError for what the addon threw or rejected with. A code the
 * project does not know is a bug: INTERNAL (a Rust panic is one).
 * @param {unknown} error
 * @param {{ cause?: unknown }} [extra] a cause to keep (an abort signal's reason)
 * @returns {LeaseholdError}
 */
function fromNative(error, extra) {
  if (error instanceof LeaseholdError) return error
  const { code, message, lossReason } =
    /** @type {{ code?: unknown, message?: unknown, lossReason?: unknown }} */ (
      typeof error === 'object' && error !== null ? error : {}
    )
  const text = typeof message === 'string' ? message : String(error)
  if (code === 'LOST') {
    return new LostError(text, {
      lossReason: /** @type {LossReason | null} */ (lossReason ?? null),
    })
  }
  if (typeof code === 'string' && known.has(code)) {
    return new LeaseholdError(/** @type {ErrorCode} */ (code), text, extra)
  }
  if (typeof code === 'string' && conversionStatuses.has(code)) {
    return new LeaseholdError('INVALID_ARGUMENT', text, { cause: error })
  }
  return new LeaseholdError('INTERNAL', `a bug in Leasehold: ${text}`, { cause: error })
}

module.exports = { codes, LeaseholdError, LostError, isTimeout, fromNative }
