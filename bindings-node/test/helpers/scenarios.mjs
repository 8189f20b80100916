// The JS runner of the shared scenarios (spec-tests/scenarios/*.json, the
// files the Rust runner spec-tests/src/runner.rs loads), mirroring its
// semantics through the public API of this package. On the embedded store
// the clock is virtual and only `advance` moves it; since the core works on
// its own threads, "granted" / "failed" are read by polling in real time with
// a bound, and "waiting" / "not lost" after a short real pause. An unknown
// step, field or value fails the scenario when it loads.

import { readdirSync, readFileSync } from 'node:fs'
import { basename, join } from 'node:path'
import { fileURLToPath } from 'node:url'

import { codes, connect, LeaseholdError, LostError } from 'leasehold'
import { memory as testMemory, parseDuration, VirtualClock } from 'leasehold/testing'

import { eventually, sleep } from './wait.mjs'

/** The folder of the shared scenarios, read at test time. */
export const scenarioDir = fileURLToPath(new URL('../../../spec-tests/scenarios/', import.meta.url))

/** Every scenario file, sorted by name. */
export function scenarioFiles() {
  return readdirSync(scenarioDir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => join(scenarioDir, f))
}

/** How long to look before concluding that something did not happen. */
const PAUSE = { embedded: 30, server: 150 }
/** The longest real time one step may take (the Rust runner's STEP_GUARD). */
const STEP_GUARD = 5_000

const CODES = [
  'Lost',
  'InvalidTtl',
  'EmptyName',
  'PermissionDenied',
  'Unauthenticated',
  'WaitTimeout',
  'Cancelled',
  'Unavailable',
  'Timeout',
  'NamespaceMismatch',
  'Protocol',
  'Internal',
  'InvalidArgument',
  'Closed',
]
const REASONS = ['expired', 'revoked', 'unknown', 'restarted', 'closed']

/** @typedef {'name' | 'string' | 'duration' | 'code' | 'tasks' | string[]} FieldType */

/** Each step's fields: required, then optional, with their types. */
/** @type {Record<string, { required: Record<string, FieldType>, optional?: Record<string, FieldType> }>} */
const STEPS = {
  open_lock: {
    required: { lock: 'name' },
    optional: {
      name: 'string',
      ttl: 'duration',
      max_hold: 'duration',
      wait: 'duration',
      margin: 'duration',
      expect: ['ok'],
      expect_error: 'code',
    },
  },
  hold: {
    required: { holder: 'name', lock: 'name', key: 'string' },
    optional: { wait: 'duration', expect: ['granted', 'waiting'], expect_error: 'code' },
  },
  try_hold: {
    required: { holder: 'name', lock: 'name', key: 'string' },
    optional: { expect: ['granted', 'not_held'], expect_error: 'code' },
  },
  end: {
    required: { holder: 'name' },
    optional: {
      by: ['return', 'error', 'panic', 'cancel'],
      message: 'string',
      expect: ['ok', 'function_error', 'panic', 'cancelled'],
      expect_error: 'code',
      expect_cause: 'string',
    },
  },
  cancel: { required: { holder: 'name' } },
  expect_granted: { required: { holder: 'name' } },
  expect_waiting: { required: { holder: 'name' } },
  expect_failed: { required: { holder: 'name', error: 'code' } },
  expect_lost: { required: { holder: 'name', reason: REASONS } },
  expect_not_lost: { required: { holder: 'name' } },
  expect_remaining: { required: { holder: 'name', remaining: 'duration' } },
  expect_fence_greater: { required: { holder: 'name', than: 'name' } },
  advance: { required: { by: 'duration' } },
  try_acquire: {
    required: { holder: 'name', name: 'string', ttl: 'duration' },
    optional: { expect: ['granted', 'not_held'], expect_error: 'code' },
  },
  acquire: {
    required: { holder: 'name', name: 'string', ttl: 'duration' },
    optional: { wait: 'duration', expect: ['granted', 'waiting'], expect_error: 'code' },
  },
  extend: {
    required: { holder: 'name', by: 'duration' },
    optional: { tasks: 'tasks', expect: ['ok'], expect_error: 'code' },
  },
  release: {
    required: { holder: 'name' },
    optional: { tasks: 'tasks', expect: ['ok'], expect_error: 'code' },
  },
  close: { required: {} },
  reopen: { required: {} },
}

/**
 * @param {unknown} value
 * @param {FieldType} type
 */
function fits(value, type) {
  if (Array.isArray(type)) return typeof value === 'string' && type.includes(value)
  switch (type) {
    case 'name':
    case 'duration':
      return typeof value === 'string' && value.length > 0
    case 'string':
      return typeof value === 'string'
    case 'code':
      return typeof value === 'string' && CODES.includes(value)
    case 'tasks':
      return Number.isInteger(value) && /** @type {number} */ (value) >= 1
    default:
      throw new Error(`the runner knows no field type ${type}`)
  }
}

/**
 * Loads a scenario file; fails on an unknown step, field or value, a
 * missing field, or an id that is not the file's name.
 * @param {string} file
 */
export function loadScenario(file) {
  const scenario = JSON.parse(readFileSync(file, 'utf8'))
  const fail = (/** @type {string} */ why) => {
    throw new Error(`scenario ${basename(file)}: ${why}`)
  }
  const top = ['id', 'contracts', 'title', 'store', 'steps']
  for (const key of Object.keys(scenario)) if (!top.includes(key)) fail(`unknown field ${key}`)
  for (const key of top) if (!(key in scenario)) fail(`missing field ${key}`)
  if (scenario.id !== basename(file, '.json')) fail(`the id ${scenario.id} is not the file's name`)
  const store = scenario.store
  if (
    Object.keys(store).sort().join() !== 'push,renewal' ||
    typeof store.renewal !== 'boolean' ||
    typeof store.push !== 'boolean'
  ) {
    fail(`bad store ${JSON.stringify(store)}`)
  }
  scenario.steps.forEach((/** @type {Record<string, unknown>} */ step, /** @type {number} */ i) => {
    const spec = STEPS[/** @type {string} */ (step.step)]
    if (!spec) fail(`step ${i}: unknown step ${JSON.stringify(step.step)}`)
    const fields = { ...spec.required, ...spec.optional }
    for (const [key, value] of Object.entries(step)) {
      if (key === 'step') continue
      if (!(key in fields)) fail(`step ${i} (${step.step}): unknown field ${key}`)
      if (!fits(value, fields[key]))
        fail(`step ${i} (${step.step}): bad ${key} ${JSON.stringify(value)}`)
    }
    for (const key of Object.keys(spec.required)) {
      if (!(key in step)) fail(`step ${i} (${step.step}): missing field ${key}`)
    }
  })
  return scenario
}

/** Whether a scenario runs on the server store (runner.rs `applies_to_server`). */
export function appliesToServer(/** @type {any} */ scenario) {
  return (
    scenario.store.push &&
    scenario.steps.every(
      (/** @type {any} */ s) =>
        !['advance', 'close', 'reopen', 'expect_remaining'].includes(s.step),
    )
  )
}

/** A scenario's error code in JS form: `InvalidTtl` → `INVALID_TTL`. */
function jsCode(/** @type {string} */ code) {
  const js = code.replace(/(?<!^)([A-Z])/g, '_$1').toUpperCase()
  if (!(js in codes)) throw new Error(`no JS code for ${code}`)
  return js
}

/** What a failed call answered, as the runner compares it. */
function errorOutcome(/** @type {unknown} */ error) {
  if (error instanceof LeaseholdError) return `error ${error.code}`
  return `not a LeaseholdError: ${String(error)}`
}

/** The expected outcome of a step: its `expect_error`, its `expect`, or the default. */
function expected(/** @type {any} */ step, /** @type {string} */ fallback) {
  if (step.expect_error) return `error ${jsCode(step.expect_error)}`
  return step.expect ?? fallback
}

function compare(
  /** @type {string} */ want,
  /** @type {string} */ got,
  /** @type {unknown} */ detail,
) {
  if (want !== got) {
    const more = detail instanceof Error ? ` (${detail.message})` : ''
    throw new Error(`expected ${want}, got ${got}${more}`)
  }
}

/** The marker with which `end` by `cancel` aborts a hold's signal. */
const CANCEL = Symbol('the runner cancels the held function')

class World {
  /**
   * @param {any} spec
   * @param {string | null} server
   */
  constructor(spec, server) {
    this.spec = spec
    this.server = server
    this.clock = new VirtualClock()
    this.pause = server ? PAUSE.server : PAUSE.embedded
    /** @type {any} */
    this.store = null
    /** @type {Map<string, { options: any, name: string, lock: any }>} */
    this.locks = new Map()
    /** @type {Map<string, any>} */
    this.holders = new Map()
    /** @type {Map<string, bigint>} */
    this.fences = new Map()
  }

  async open() {
    this.store = this.server
      ? await connect(this.server)
      : testMemory({ clock: this.clock, renewal: this.spec.renewal, push: this.spec.push })
  }

  settle() {
    return sleep(this.pause)
  }

  /** @param {string} name */
  newHolder(name) {
    if (this.holders.has(name)) throw new Error(`holder ${name} exists already`)
  }

  /** @param {string} name */
  actor(name) {
    const actor = this.holders.get(name)
    if (!actor) throw new Error(`no holder ${name}`)
    return actor
  }

  /** @param {string} alias */
  lock(alias) {
    const entry = this.locks.get(alias)
    if (!entry) throw new Error(`no lock ${alias} was opened`)
    return entry.lock
  }

  /** The phase of a holder's call as the scenarios write it. */
  phase(/** @type {any} */ actor) {
    return actor.phase === 'failed' ? errorOutcome(actor.error) : actor.phase
  }

  /** After a call that may wait started or was given time: compares its phase. */
  async expectPhase(/** @type {string} */ holder, /** @type {string} */ want) {
    const actor = this.actor(holder)
    if (want === 'waiting') await this.settle()
    else await eventually(() => actor.phase !== 'waiting', STEP_GUARD)
    compare(want, this.phase(actor), actor.error)
    if (actor.phase === 'failed') this.holders.delete(holder)
  }

  /** Starts `hold` of a key by a holder whose held function waits for `end`. */
  startHold(/** @type {any} */ step) {
    this.newHolder(step.holder)
    const lock = this.lock(step.lock)
    const actor = {
      kind: 'key',
      phase: 'waiting',
      controller: new AbortController(),
      lease: null,
      finish: null,
      error: null,
      settled: null,
    }
    const fn = (/** @type {any} */ lease) =>
      new Promise((resolve, reject) => {
        actor.lease = lease
        actor.finish = { resolve, reject }
        this.fences.set(step.holder, lease.fence)
        // The function stops when its hold is cancelled, as a well-behaved one does.
        lease.signal.addEventListener('abort', () => {
          if (lease.signal.reason === CANCEL) reject(CANCEL)
        })
        actor.phase = 'granted'
      })
    const options = { signal: actor.controller.signal, ...(step.wait ? { wait: step.wait } : {}) }
    return { actor, fn, lock, options }
  }

  /** @param {any} step */
  async step(step) {
    switch (step.step) {
      case 'open_lock': {
        if (this.locks.has(step.lock)) throw new Error(`lock ${step.lock} is open already`)
        const options = {}
        for (const [field, option] of [
          ['ttl', 'ttl'],
          ['max_hold', 'maxHold'],
          ['wait', 'wait'],
          ['margin', 'margin'],
        ]) {
          if (step[field] !== undefined) Object.assign(options, { [option]: step[field] })
        }
        const name = step.name ?? step.lock
        let got = 'ok'
        let error = null
        try {
          this.locks.set(step.lock, { options, name, lock: this.store.lock(name, options) })
        } catch (e) {
          got = errorOutcome(e)
          error = e
        }
        return compare(expected(step, 'ok'), got, error)
      }
      case 'hold': {
        const { actor, fn, lock, options } = this.startHold(step)
        actor.settled = lock.hold(step.key, fn, options).then(
          (/** @type {unknown} */ value) => ({ ok: true, value }),
          (/** @type {unknown} */ error) => {
            if (actor.phase === 'waiting') Object.assign(actor, { phase: 'failed', error })
            return { ok: false, error }
          },
        )
        this.holders.set(step.holder, actor)
        return this.expectPhase(step.holder, expected(step, ''))
      }
      case 'try_hold': {
        const { actor, fn, lock } = this.startHold(step)
        let answer = 'pending'
        actor.settled = lock.tryHold(step.key, fn).then(
          (/** @type {unknown} */ value) => {
            if (actor.phase === 'waiting') answer = 'not_held'
            return { ok: true, value }
          },
          (/** @type {unknown} */ error) => {
            if (actor.phase === 'waiting') Object.assign(actor, { phase: 'failed', error })
            return { ok: false, error }
          },
        )
        await eventually(() => actor.phase !== 'waiting' || answer !== 'pending', STEP_GUARD)
        const got = answer === 'not_held' ? 'not_held' : this.phase(actor)
        compare(expected(step, ''), got, actor.error)
        if (actor.phase === 'granted') this.holders.set(step.holder, actor)
        return
      }
      case 'acquire': {
        this.newHolder(step.holder)
        const actor = {
          kind: 'manual',
          phase: 'waiting',
          controller: new AbortController(),
          lease: null,
          error: null,
        }
        const options = {
          ttl: step.ttl,
          signal: actor.controller.signal,
          ...(step.wait ? { wait: step.wait } : {}),
        }
        this.store.acquire(step.name, options).then(
          (/** @type {any} */ lease) => {
            Object.assign(actor, { phase: 'granted', lease })
            this.fences.set(step.holder, lease.fence)
          },
          (/** @type {unknown} */ error) => Object.assign(actor, { phase: 'failed', error }),
        )
        this.holders.set(step.holder, actor)
        return this.expectPhase(step.holder, expected(step, ''))
      }
      case 'try_acquire': {
        this.newHolder(step.holder)
        let got
        let error = null
        try {
          const lease = await this.store.tryAcquire(step.name, { ttl: step.ttl })
          if (lease === null) got = 'not_held'
          else {
            got = 'granted'
            this.holders.set(step.holder, { kind: 'manual', phase: 'granted', lease })
            this.fences.set(step.holder, lease.fence)
          }
        } catch (e) {
          got = errorOutcome(e)
          error = e
        }
        return compare(expected(step, ''), got, error)
      }
      case 'end':
        return this.end(step)
      case 'cancel': {
        const actor = this.actor(step.holder)
        if (actor.phase !== 'waiting') throw new Error(`${step.holder} is not waiting`)
        actor.controller.abort()
        return this.settle()
      }
      case 'expect_granted':
        return this.expectPhase(step.holder, 'granted')
      case 'expect_waiting':
        return this.expectPhase(step.holder, 'waiting')
      case 'expect_failed':
        return this.expectPhase(step.holder, `error ${jsCode(step.error)}`)
      case 'expect_lost':
        return this.expectLost(step.holder, step.reason)
      case 'expect_not_lost': {
        await this.settle()
        const lease = this.keyLease(step.holder)
        if (lease.lost || lease.signal.aborted) {
          throw new Error(
            `the lease was lost (${lease.lossReason}; signal aborted ${lease.signal.aborted})`,
          )
        }
        return
      }
      case 'expect_remaining': {
        const lease = this.keyLease(step.holder)
        const want = step.remaining === 'none' ? null : parseDuration(step.remaining)
        await eventually(() => lease.remaining === want, 1_000)
        if (lease.remaining !== want)
          throw new Error(`expected ${want} ms left, got ${lease.remaining}`)
        return
      }
      case 'expect_fence_greater': {
        const fence = (/** @type {string} */ name) => {
          const f = this.fences.get(name)
          if (f === undefined) throw new Error(`holder ${name} was never granted`)
          return f
        }
        if (!(fence(step.holder) > fence(step.than))) {
          throw new Error(
            `${step.holder}'s fence ${fence(step.holder)} is not larger than ${step.than}'s ${fence(step.than)}`,
          )
        }
        return
      }
      case 'advance':
        return this.clock.advance(step.by)
      case 'extend':
      case 'release': {
        const actor = this.actor(step.holder)
        if (actor.kind !== 'manual' || actor.phase !== 'granted') {
          throw new Error(`${step.holder} has no manual lease`)
        }
        const calls = Array.from({ length: step.tasks ?? 1 }, () =>
          step.step === 'extend' ? actor.lease.extend(step.by) : actor.lease.release(),
        )
        const outcomes = await Promise.allSettled(calls)
        outcomes.forEach((outcome, i) => {
          const got = outcome.status === 'fulfilled' ? 'ok' : errorOutcome(outcome.reason)
          try {
            compare(
              expected(step, 'ok'),
              got,
              outcome.status === 'rejected' ? outcome.reason : null,
            )
          } catch (e) {
            throw new Error(`task ${i}: ${/** @type {Error} */ (e).message}`)
          }
        })
        return this.settle()
      }
      case 'close':
        await this.store.close()
        return this.settle()
      case 'reopen': {
        await this.store.close()
        await this.settle()
        await this.open()
        for (const [alias, entry] of this.locks) {
          try {
            entry.lock = this.store.lock(entry.name, entry.options)
          } catch (e) {
            throw new Error(
              `lock ${alias} does not open again: ${/** @type {Error} */ (e).message}`,
            )
          }
        }
        return
      }
      default:
        throw new Error(`unknown step ${step.step}`)
    }
  }

  /** The lease of a holder of a key, once granted. */
  keyLease(/** @type {string} */ holder) {
    const actor = this.actor(holder)
    if (actor.kind !== 'key' || actor.lease === null)
      throw new Error(`${holder} was never granted a key`)
    return actor.lease
  }

  async expectLost(/** @type {string} */ holder, /** @type {string} */ reason) {
    const lease = this.keyLease(holder)
    await eventually(() => lease.lost && lease.signal.aborted, STEP_GUARD)
    if (lease.lossReason !== reason)
      throw new Error(`expected the lease lost ${reason}, got ${lease.lossReason}`)
    const why = lease.signal.reason
    if (
      !lease.signal.aborted ||
      !(why instanceof LostError) ||
      why.code !== 'LOST' ||
      why.lossReason !== reason
    ) {
      throw new Error(
        `the loss did not reach the function: signal aborted ${lease.signal.aborted} with ${why}`,
      )
    }
    if (lease.remaining !== 0) throw new Error(`a lost lease has ${lease.remaining} ms left, not 0`)
  }

  async end(/** @type {any} */ step) {
    const actor = this.actor(step.holder)
    if (actor.kind !== 'key' || actor.phase !== 'granted') {
      throw new Error(`${step.holder} holds nothing to end: ${this.phase(actor)}`)
    }
    actor.phase = 'ended'
    const message = step.message ?? 'the held function failed'
    const own = new Error(message)
    const panic = { panic: message }
    switch (step.by ?? 'return') {
      case 'return':
        actor.finish.resolve('returned')
        break
      case 'error':
        actor.finish.reject(own)
        break
      case 'panic':
        // JS has no panics: the function throws a value that is not an Error.
        actor.finish.reject(panic)
        break
      case 'cancel':
        actor.controller.abort(CANCEL)
        break
    }
    const outcome = await actor.settled
    await this.settle()
    let got
    if (outcome.ok) got = 'ok'
    else if (outcome.error === own) got = 'function_error'
    else if (outcome.error === panic) got = 'panic'
    else if (outcome.error instanceof LeaseholdError && outcome.error.code === 'CANCELLED')
      got = 'cancelled'
    else got = errorOutcome(outcome.error)
    compare(expected(step, 'ok'), got, outcome.error)
    if (step.expect_cause !== undefined) {
      const cause = outcome.error?.cause
      if (!(cause instanceof Error) || cause !== own || cause.message !== step.expect_cause) {
        throw new Error(
          `expected the function's error ${step.expect_cause} as the cause, got ${cause}`,
        )
      }
    }
  }
}

/**
 * Runs a scenario on a fresh embedded store on a virtual clock, or on the
 * server store at `server`. Throws naming the step that failed.
 * @param {any} scenario
 * @param {string | null} [server]
 */
export async function runScenario(scenario, server = null) {
  const world = new World(scenario.store, server)
  await world.open()
  try {
    for (const [i, step] of scenario.steps.entries()) {
      let timer
      const guard = new Promise((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`did not finish within ${STEP_GUARD} ms`)),
          STEP_GUARD + 1_000,
        )
      })
      try {
        await Promise.race([world.step(step), guard])
      } catch (e) {
        throw new Error(
          `scenario ${scenario.id}: step ${i} ${JSON.stringify(step)}: ${/** @type {Error} */ (e).message}`,
        )
      } finally {
        clearTimeout(timer)
      }
    }
  } finally {
    for (const actor of world.holders.values()) {
      if (actor.kind === 'key' && actor.phase === 'granted') actor.finish.resolve('cleanup')
    }
    await world.store.close()
  }
}
