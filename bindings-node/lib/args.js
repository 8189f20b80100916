'use strict'
// Checks of the arguments' JS types before they reach the addon, so that a
// wrong type fails with an ERR-01 code (INVALID_ARGUMENT, or INVALID_TTL for
// a duration) instead of a Node-API conversion error (ERR-03). Values (empty
// names, ranges, duration strings) are the core's to check.

const { LeaseholdError } = require('./errors')

/** @typedef {import('./addon').NativeDuration} NativeDuration */

/**
 * @param {string} message
 * @returns {LeaseholdError}
 */
function invalid(message) {
  return new LeaseholdError('INVALID_ARGUMENT', message)
}

/** The options of a call given none (shared: nobody writes to it). */
const NONE = Object.freeze({})

/**
 * An options object with only the keys `known`; `undefined` is an empty one.
 * @param {string} what
 * @param {unknown} value
 * @param {readonly string[]} known
 * @returns {Record<string, unknown>}
 */
function options(what, value, known) {
  if (value === undefined || value === null) return NONE
  if (typeof value !== 'object' || Array.isArray(value)) {
    throw invalid(`${what} must be an object, got ${describe(value)}`)
  }
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) {
      throw invalid(`${what} has no option ${JSON.stringify(key)} (known: ${known.join(', ')})`)
    }
  }
  return /** @type {Record<string, unknown>} */ (value)
}

/**
 * A name, key or URL: a string (empty ones are the core's to refuse).
 * @param {string} what
 * @param {unknown} value
 * @returns {string}
 */
function string(what, value) {
  if (typeof value !== 'string') throw invalid(`${what} must be a string, got ${describe(value)}`)
  return value
}

/**
 * Names or keys: an array of strings (empty ones, and one named twice, are
 * the core's to refuse).
 * @param {string} what
 * @param {unknown} value
 * @returns {string[]}
 */
function strings(what, value) {
  if (!Array.isArray(value))
    throw invalid(`${what} must be an array of strings, got ${describe(value)}`)
  value.forEach((item, at) => {
    if (typeof item !== 'string')
      throw invalid(`${what}[${at}] must be a string, got ${describe(item)}`)
  })
  return value
}

/**
 * An optional string.
 * @param {string} what
 * @param {unknown} value
 * @returns {string | null}
 */
function optionalString(what, value) {
  return value === undefined || value === null ? null : string(what, value)
}

/**
 * An optional boolean; `undefined` is `false`.
 * @param {string} what
 * @param {unknown} value
 * @returns {boolean}
 */
function flag(what, value) {
  if (value === undefined || value === null) return false
  if (typeof value !== 'boolean') throw invalid(`${what} must be a boolean, got ${describe(value)}`)
  return value
}

/**
 * A duration: milliseconds or a string; `undefined` is "not given".
 * @param {string} what
 * @param {unknown} value
 * @returns {NativeDuration}
 */
function duration(what, value) {
  if (value === undefined || value === null) return null
  if (typeof value === 'number' || typeof value === 'string') return value
  throw new LeaseholdError(
    'INVALID_TTL',
    `${what} must be a number of milliseconds or a string such as '30s', got ${describe(value)}`,
  )
}

/**
 * A required duration.
 * @param {string} what
 * @param {unknown} value
 * @returns {number | string}
 */
function requiredDuration(what, value) {
  const d = duration(what, value)
  if (d === null) throw new LeaseholdError('INVALID_TTL', `${what} is required`)
  return d
}

/**
 * An optional whole number from 0 to `max`; `undefined` is "not given".
 * @param {string} what
 * @param {unknown} value
 * @param {number} max
 * @returns {number | null}
 */
function optionalIndex(what, value, max) {
  if (value === undefined || value === null) return null
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > max) {
    throw invalid(`${what} must be a whole number from 0 to ${max}, got ${show(value)}`)
  }
  return value
}

/**
 * A count of milliseconds as the addon takes it: a bigint from 0 to
 * 2^64 - 1, given as a bigint or as a whole number up to 2^53 - 1.
 * @param {string} what
 * @param {unknown} value
 * @returns {bigint}
 */
function millis(what, value) {
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value)
  if (typeof value === 'bigint' && value >= 0n && value <= 0xffff_ffff_ffff_ffffn) return value
  throw invalid(
    `${what} must be a whole number of milliseconds (a number up to 2^53 - 1 or a bigint up to 2^64 - 1), got ${show(value)}`,
  )
}

/**
 * An optional AbortSignal.
 * @param {unknown} value
 * @returns {AbortSignal | null}
 */
function signal(value) {
  if (value === undefined || value === null) return null
  if (!(value instanceof AbortSignal))
    throw invalid(`signal must be an AbortSignal, got ${describe(value)}`)
  return value
}

/**
 * A function to run.
 * @param {unknown} value
 * @returns {Function}
 */
function func(value) {
  if (typeof value !== 'function')
    throw invalid(`the held function must be a function, got ${describe(value)}`)
  return value
}

/**
 * A number or bigint as written, else its type.
 * @param {unknown} value
 * @returns {string}
 */
function show(value) {
  if (typeof value === 'number') return String(value)
  if (typeof value === 'bigint') return `${value}n`
  return describe(value)
}

/**
 * @param {unknown} value
 * @returns {string}
 */
function describe(value) {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  return typeof value
}

module.exports = {
  options,
  string,
  strings,
  optionalString,
  flag,
  duration,
  requiredDuration,
  optionalIndex,
  millis,
  signal,
  func,
}
