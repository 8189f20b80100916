// A real server store process for the tests: `leasehold serve` on a free
// loopback port, with a data directory of its own, stopped when done.

import { spawn, spawnSync } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before } from 'node:test'
import { fileURLToPath } from 'node:url'

/** The workspace's root folder. */
export const repo = fileURLToPath(new URL('../../../', import.meta.url))

/** The server binary: LEASEHOLD_BIN, else $CARGO_TARGET_DIR/debug/leasehold. */
export function serverBinary() {
  if (process.env.LEASEHOLD_BIN) return process.env.LEASEHOLD_BIN
  const target = process.env.CARGO_TARGET_DIR ?? join(repo, 'target')
  return join(target, 'debug', 'leasehold')
}

/**
 * Starts a server store. `tokens`: lines of a tokens file (LOCK-14);
 * `tls`: `{ cert, key }` PEM file paths.
 * @param {{ tokens?: string[], tls?: { cert: string, key: string } }} [options]
 */
export async function startServer(options = {}) {
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-node-'))
  const argv = ['serve', '--listen', '127.0.0.1:0', '--data-dir', join(dir, 'data')]
  if (options.tokens) {
    const file = join(dir, 'tokens')
    await writeFile(file, options.tokens.join('\n') + '\n')
    argv.push('--tokens', file)
  }
  if (options.tls) argv.push('--tls-cert', options.tls.cert, '--tls-key', options.tls.key)
  const child = spawn(serverBinary(), argv, {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LEASEHOLD_LOG: 'warn' },
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text))
  const address = await new Promise((resolve, reject) => {
    let out = ''
    const timer = setTimeout(() => reject(new Error(`the server did not start: ${stderr}`)), 10_000)
    child.stdout.setEncoding('utf8').on('data', (text) => {
      out += text
      const match = /^listening on (\S+)$/m.exec(out)
      if (match) {
        clearTimeout(timer)
        resolve(match[1])
      }
    })
    child.on('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`the server exited ${code}: ${stderr}`))
    })
  })
  const scheme = options.tls ? 'leaseholds' : 'leasehold'
  return {
    url: `${scheme}://${address}`,
    address,
    /** The server's process id. */
    pid: /** @type {number} */ (child.pid),
    /**
     * Freezes the server (SIGSTOP) and waits until it is stopped: the
     * signal takes effect a little after kill returns, and a request sent
     * meanwhile would still be answered.
     */
    async freeze() {
      child.kill('SIGSTOP')
      const until = Date.now() + 5_000
      while (processState(/** @type {number} */ (child.pid)) !== 'T') {
        if (Date.now() > until) throw new Error(`the server ${child.pid} did not stop`)
        await new Promise((resolve) => setTimeout(resolve, 1))
      }
    },
    /** Thaws a frozen server (SIGCONT). */
    thaw() {
      child.kill('SIGCONT')
    },
    /** Stops the server (SIGTERM, then SIGKILL) and removes its data directory. */
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        const exited = once(child, 'exit')
        child.kill('SIGTERM')
        const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
        await exited
        clearTimeout(timer)
      }
      await rm(dir, { recursive: true, force: true })
    },
  }
}

/**
 * A server store for the tests of the enclosing `describe` (or of the file,
 * at its top level): started before them, stopped after them. Its fields
 * (`url`, `freeze`, …) are those of `startServer`'s, read once the tests run.
 * @returns {Awaited<ReturnType<typeof startServer>>}
 */
export function serverFixture() {
  /** @type {Awaited<ReturnType<typeof startServer>> | null} */
  let server = null
  before(async () => {
    server = await startServer()
  })
  after(() => server?.stop())
  return /** @type {Awaited<ReturnType<typeof startServer>>} */ (
    new Proxy(
      {},
      {
        get(_, field) {
          if (server === null) throw new Error('the server fixture is read before its tests run')
          return server[/** @type {keyof typeof server} */ (field)]
        },
      },
    )
  )
}

/**
 * The state letter of process `pid` in /proc (`T`: stopped).
 * @param {number} pid
 */
function processState(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  return stat
    .slice(stat.lastIndexOf(')') + 1)
    .trim()
    .split(' ')[0]
}

/**
 * A CA and a server certificate for 127.0.0.1 signed by it, made with the
 * openssl command; `null` when there is no openssl.
 */
export async function makeCertificates() {
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-node-tls-'))
  const run = (/** @type {string[]} */ args) =>
    spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' })
  const steps = [
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'ca.key',
      '-out',
      'ca.pem',
      '-days',
      '2',
      '-subj',
      '/CN=leasehold test CA',
    ],
    [
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      'server.key',
      '-out',
      'server.csr',
      '-subj',
      '/CN=127.0.0.1',
    ],
  ]
  for (const args of steps) {
    const result = run(args)
    if (result.error || result.status !== 0) return null
  }
  await writeFile(
    join(dir, 'ext.cnf'),
    'basicConstraints=critical,CA:FALSE\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n',
  )
  const signed = run([
    'x509',
    '-req',
    '-in',
    'server.csr',
    '-CA',
    'ca.pem',
    '-CAkey',
    'ca.key',
    '-CAcreateserial',
    '-out',
    'server.pem',
    '-days',
    '2',
    '-extfile',
    'ext.cnf',
  ])
  if (signed.error || signed.status !== 0) return null
  // rustls reads PKCS#8 keys; openssl's EC keys from `req` already are.
  return {
    dir,
    ca: join(dir, 'ca.pem'),
    cert: join(dir, 'server.pem'),
    key: join(dir, 'server.key'),
    remove: () => rm(dir, { recursive: true, force: true }),
  }
}
