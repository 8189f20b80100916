// A real etcd member for the tests: $LEASEHOLD_ETCD (which `make etcd`
// builds) on free loopback ports, with a data directory of its own, stopped
// when done.

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

/** A loopback TCP port that nothing listens on now. */
async function freePort() {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const port = /** @type {import('node:net').AddressInfo} */ (server.address()).port
  server.close()
  await once(server, 'close')
  return port
}

/** Whether something accepts connections on 127.0.0.1:`port`. */
function accepts(/** @type {number} */ port) {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('error', () => resolve(false))
  })
}

/**
 * Starts one member of the etcd binary the variable `env` names
 * (`LEASEHOLD_ETCD`: 3.6, which `make etcd` builds; `LEASEHOLD_ETCD_34`:
 * Debian's 3.4) and waits until its client port accepts connections.
 * Throws when the variable is not set or names no file.
 */
export async function startEtcd(env = 'LEASEHOLD_ETCD') {
  const binary = process.env[env]
  if (!binary) {
    throw new Error(
      `${env} is not set: it names an etcd binary the etcd tests start (\`make etcd\` provides it; \`make node-test\` sets it)`,
    )
  }
  if (!existsSync(binary)) {
    throw new Error(`no etcd binary at ${env}=${binary} (\`make etcd\` provides it)`)
  }
  const dir = await mkdtemp(join(tmpdir(), 'leasehold-node-etcd-'))
  const client = await freePort()
  const peer = await freePort()
  const clientUrl = `http://127.0.0.1:${client}`
  const peerUrl = `http://127.0.0.1:${peer}`
  const child = spawn(
    binary,
    [
      ['--name', 'm0', '--data-dir', join(dir, 'data')],
      ['--listen-client-urls', clientUrl, '--advertise-client-urls', clientUrl],
      ['--listen-peer-urls', peerUrl, '--initial-advertise-peer-urls', peerUrl],
      ['--initial-cluster', `m0=${peerUrl}`, '--initial-cluster-state', 'new'],
      ['--heartbeat-interval', '50', '--election-timeout', '500'],
      ['--logger', 'zap', '--log-level', 'error'],
    ].flat(),
    { stdio: ['ignore', 'ignore', 'pipe'] },
  )
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text))
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit')
      child.kill('SIGKILL')
      await exited
    }
    await rm(dir, { recursive: true, force: true })
  }
  const until = Date.now() + 15_000
  while (!(await accepts(client))) {
    if (child.exitCode !== null || Date.now() > until) {
      await stop()
      throw new Error(`etcd did not accept connections on port ${client}: ${stderr}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  return {
    /** The client endpoint, `127.0.0.1:PORT`. */
    endpoint: `127.0.0.1:${client}`,
    /** The store URL of this member under `prefix`. */
    url: (/** @type {string} */ prefix) => `etcd://127.0.0.1:${client}/${prefix}`,
    /** Kills the member and removes its data directory. */
    stop,
  }
}
