// A real etcd member for the tests: $LEASEHOLD_ETCD (which `make etcd`
// builds) on free loopback ports, with a data directory of its own, stopped
// when done; and a 3-member cluster driven by commands, $LEASEHOLD_ETCD_CLUSTER
// (etcd-tests' etcd-cluster, which `make etcd-cluster` builds).

import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { createConnection, createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'

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

/**
 * Starts `$LEASEHOLD_ETCD_CLUSTER`: three etcd members on loopback, told what
 * to do by one command a line on its stdin, each answered by one line
 * (etcd-tests/src/bin/etcd-cluster.rs); reads its ready line. Throws when the
 * variable is not set or names no file.
 */
export async function startEtcdCluster() {
  const binary = process.env.LEASEHOLD_ETCD_CLUSTER
  if (!binary) {
    throw new Error(
      'LEASEHOLD_ETCD_CLUSTER is not set: it names the etcd-cluster tool the etcd fault tests start (`make etcd-cluster` builds it; `make node-test` sets it)',
    )
  }
  if (!existsSync(binary)) {
    throw new Error(
      `no etcd-cluster at LEASEHOLD_ETCD_CLUSTER=${binary} (\`make etcd-cluster\` builds it)`,
    )
  }
  const child = spawn(binary, [], { stdio: ['pipe', 'pipe', 'pipe'] })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (text) => (stderr += text))
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const readLine = async () => {
    const { value, done } = await lines.next()
    if (done) throw new Error(`etcd-cluster exited: ${stderr}`)
    return /** @type {string} */ (value)
  }
  // The end of its stdin stops the tool, which stops its members (thawing a
  // frozen one) and removes their data; killed after 10 s, it would leave
  // them running.
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, 'exit')
      child.stdin.end()
      const kill = setTimeout(() => child.kill('SIGKILL'), 10_000)
      await exited
      clearTimeout(kill)
    }
  }
  /** @type {RegExpExecArray | null} */
  let ready
  try {
    const line = await readLine()
    ready = /^ready etcd:\/\/(\S+) election-timeout=(\d+)ms$/.exec(line)
    if (ready === null) throw new Error(`etcd-cluster did not start: ${line}`)
  } catch (e) {
    await stop()
    throw e
  }
  const [, hosts, electionTimeout] = ready
  return {
    /** The members' `--election-timeout`, in milliseconds. */
    electionTimeoutMs: Number(electionTimeout),
    /** The store URL of the cluster under `prefix`, member 0 first. */
    url: (/** @type {string} */ prefix) => `etcd://${hosts}/${prefix}`,
    /**
     * Sends one command (`leader`, `lead N`, `kill N`, `restart N`, `freeze N`,
     * `thaw N`) and answers its answer (`leader N`, `ok`); an `error: …`
     * answer or the tool's exit rejects.
     */
    command: async (/** @type {string} */ line) => {
      child.stdin.write(`${line}\n`)
      const answer = await readLine()
      if (answer.startsWith('error')) throw new Error(`etcd-cluster answered ${answer} to ${line}`)
      return answer
    },
    /** Stops the cluster. */
    stop,
  }
}
