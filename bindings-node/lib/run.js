'use strict'
// Running a JS function while something is held (a key, a slot): starting
// the holding with an AbortSignal, running the function between the
// addon's `begin` and `end`, and combining the two outcomes into the
// promise `hold` returns. Waiting, renewal, loss and release are the core's.

const native = require('./native')
const { LeaseholdError, LostError, fromNative } = require('./errors')

/** @typedef {import('./addon').Canceller} Canceller */
/** @typedef {import('./loss').LossSignal} LossSignal */

/**
 * What the addon's `begin` gives: a holding to end once.
 * @typedef {object} Ending
 * @property {() => unknown} end releases; rejects LOST if it was lost meanwhile
 */

/**
 * The error of a call given up by its signal: CANCELLED, with the signal's reason as cause.
 * @param {AbortSignal} signal
 * @param {string} message
 * @returns {LeaseholdError}
 */
function cancelled(signal, message) {
  return new LeaseholdError('CANCELLED', message, { cause: signal.reason })
}

/**
 * Calls the addon with `call(canceller)`, the canceller cancelled when
 * `signal` aborts: the addon's error as a JS error, with the signal's
 * reason as cause once it aborted. A signal aborted before the call asks
 * nothing of the store (as AbortSignal users expect): rejects CANCELLED
 * (`message`, the signal's reason as cause).
 * @template R
 * @param {(canceller: Canceller | null) => R | PromiseLike<R>} call
 * @param {AbortSignal | null} signal
 * @param {string} message
 * @returns {Promise<R>}
 */
async function cancellable(call, signal, message) {
  if (signal?.aborted) throw cancelled(signal, message)
  const canceller = signal === null ? null : new native.Canceller()
  const giveUp = () => canceller?.cancel()
  signal?.addEventListener('abort', giveUp, { once: true })
  try {
    return await call(canceller)
  } catch (error) {
    throw fromNative(error, signal?.aborted ? { cause: signal.reason } : undefined)
  } finally {
    signal?.removeEventListener('abort', giveUp)
  }
}

/**
 * Starts holding with `start(canceller)`, given up when `signal` aborts:
 * rejects CANCELLED (`message`, the signal's reason as cause), as
 * `cancellable` does; a holding that raced the give-up is ended at once
 * (LOCK-18). Without a signal, the addon's answer is returned as it came:
 * the holding itself when the addon had it at the call (a free key of the
 * embedded store), so that the caller awaits nothing; else a promise of it.
 * Either way a failure is the LeaseholdError of `fromNative`.
 * @template {Ending} H
 * @param {(canceller: Canceller | null) => H | null | PromiseLike<H | null>} start
 * @param {AbortSignal | null} signal
 * @param {string} message
 * @returns {H | null | Promise<H | null>}
 */
function begin(start, signal, message) {
  if (signal !== null) return beginSignalled(start, signal, message)
  let got
  try {
    got = start(null)
  } catch (error) {
    return Promise.reject(fromNative(error))
  }
  return got instanceof Promise ? got.catch(rethrowNative) : /** @type {H | null} */ (got)
}

/**
 * Throws `fromNative(error)`: what a rejection of the addon becomes.
 * @param {unknown} error
 * @returns {never}
 */
function rethrowNative(error) {
  throw fromNative(error)
}

/**
 * `begin` with a signal.
 * @template {Ending} H
 * @param {(canceller: Canceller | null) => H | null | PromiseLike<H | null>} start
 * @param {AbortSignal} signal
 * @param {string} message
 * @returns {Promise<H | null>}
 */
async function beginSignalled(start, signal, message) {
  const holding = await cancellable(start, signal, message)
  if (holding !== null && signal.aborted) {
    try {
      await holding.end()
    } catch {
      // Whatever became of it, the call was given up.
    }
    throw cancelled(signal, message)
  }
  return holding
}

/**
 * Runs `fn(view)` while `holding` holds, then ends the holding and combines
 * the two outcomes: `fn`'s value or error; a LostError if it was lost
 * meanwhile, even if `fn` resolved, keeping `fn`'s value as `result` or its
 * error as `cause` (LOCK-10); CANCELLED once `fn` settled if `signal`
 * aborted while it ran (`loss`'s signal aborts with the signal's reason
 * at once). The holding ends on every exit path (LOCK-11). `loss` is in
 * `losses` until then, from when its signal is read. What `fn` returns is
 * awaited only when it is an object or a function (a promise, a
 * thenable), and the end only when the addon answered with a promise: a
 * cycle the embedded store answers at once awaits nothing but this
 * function.
 * @template V, T
 * @param {Ending} holding
 * @param {V} view what `fn` sees: a Lease, a HeldSlot
 * @param {LossSignal} loss the signal `view` hands out
 * @param {(view: V) => T | PromiseLike<T>} fn
 * @param {AbortSignal | null} signal
 * @param {Set<LossSignal>} losses
 * @returns {Promise<T>}
 */
async function run(holding, view, loss, fn, signal, losses) {
  loss.runIn(losses)
  try {
    let stopped = false
    /** @type {(() => void) | null} */
    let stop = null
    if (signal !== null) {
      stop = () => {
        stopped = true
        loss.abort(signal.reason)
      }
      signal.addEventListener('abort', stop, { once: true })
    }
    /** @type {{ ok: true, value: T } | { ok: false, error: unknown }} */
    let outcome
    try {
      // A hold lost between its grant and now (its deadline came while the
      // process was frozen, LOCK-04) runs nothing; its end rejects LOST.
      const lostAlready = loss.lostNow()
      if (lostAlready === null) {
        const value = fn(view)
        outcome = {
          ok: true,
          value:
            (typeof value === 'object' && value !== null) || typeof value === 'function'
              ? await value
              : /** @type {T} */ (value),
        }
      } else {
        outcome = { ok: false, error: lostAlready }
      }
    } catch (error) {
      outcome = { ok: false, error }
    } finally {
      if (stop !== null) signal?.removeEventListener('abort', stop)
    }
    try {
      const ended = holding.end()
      if (ended instanceof Promise) await ended
    } catch (error) {
      const failure = fromNative(error)
      if (!(failure instanceof LostError)) throw failure
      const lost = new LostError(
        failure.message,
        outcome.ok
          ? { lossReason: failure.lossReason, result: outcome.value }
          : { lossReason: failure.lossReason, cause: outcome.error },
      )
      loss.abort(lost)
      throw lost
    }
    if (stopped) {
      const error = new LeaseholdError(
        'CANCELLED',
        'the hold was given up while its function ran',
        {
          cause: outcome.ok ? signal?.reason : outcome.error,
        },
      )
      throw outcome.ok ? Object.assign(error, { result: outcome.value }) : error
    }
    if (!outcome.ok) throw outcome.error
    return outcome.value
  } finally {
    loss.ran()
  }
}

/**
 * The functions a store runs while they hold something (a key, a slot),
 * each with its loss signal once read, so that closing the store can tell
 * each function that watches its loss before `close()` resolves: the core
 * marks them lost before its close returns. A signal first read after the
 * close reads the loss then (lib/loss.js).
 */
class Running {
  /** @type {Set<LossSignal>} */
  #losses = new Set()

  /**
   * `run` (above), with `loss` told of the store's close meanwhile.
   * @template V, T
   * @param {Ending} holding
   * @param {V} view
   * @param {LossSignal} loss
   * @param {(view: V) => T | PromiseLike<T>} fn
   * @param {AbortSignal | null} signal
   * @returns {Promise<T>}
   */
  run(holding, view, loss, fn, signal) {
    return run(holding, view, loss, fn, signal, this.#losses)
  }

  /** Aborts the signal of every function still running whose holding the closed store ended. */
  closed() {
    for (const loss of this.#losses) loss.abortIfLost()
  }
}

module.exports = { cancellable, begin, run, Running }
