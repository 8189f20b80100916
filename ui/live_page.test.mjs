// The live page (`leasehold serve --http`, docs/live.md) in a real browser:
// Debian's chromium driven by playwright-core, a real server process, real
// holders in Node (the binding) and Python (the installed package), over
// real sockets. Leaves a screenshot at $CARGO_TARGET_DIR/live-page.png.

import { spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { mkdtemp, writeFile } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { after, before, test } from 'node:test'
import assert from 'node:assert/strict'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { startEtcd } from '../bindings-node/test/helpers/etcd.mjs'
import { postgresUrl } from '../bindings-node/test/helpers/postgres.mjs'
import { makeCertificates } from '../bindings-node/test/helpers/server.mjs'
import { serve as serveWith } from './serve.mjs'

const repo = fileURLToPath(new URL('../', import.meta.url))
const target = process.env.CARGO_TARGET_DIR ?? join(repo, 'target')
const serverBinary = process.env.LEASEHOLD_BIN ?? join(target, 'debug', 'leasehold')
const python = process.env.LEASEHOLD_PYTHON ?? join(target, 'python', 'venv', 'bin', 'python')
const chromiumPath = process.env.CHROMIUM ?? '/usr/bin/chromium'
const leasehold = createRequire(import.meta.url)(join(repo, 'bindings-node'))

/** Starts `leasehold ui` with `args`; resolves once it serves, with its address. */
async function ui(args) {
  const child = spawn(serverBinary, ['ui', '--http', '127.0.0.1:0', ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, LEASEHOLD_LOG: 'warn' },
  })
  const http = await new Promise((resolve, reject) => {
    let text = ''
    child.stdout.setEncoding('utf8').on('data', (t) => {
      text += t
      const m = /^http on (\S+)$/m.exec(text)
      if (m) resolve(m[1])
    })
    child.on('exit', (code) => reject(new Error(`leasehold ui exited ${code}`)))
  })
  return { child, http }
}

/** Starts `leasehold serve` with `args`. */
const serve = (args) => serveWith(serverBinary, args)

/** A holder in Python, named `python-<key>`: holds `key` of lock `live` for 2 s ttl, prints its fence, waits. */
function pythonHolder(url, key) {
  const script = [
    'import asyncio, sys, leasehold',
    'async def main():',
    '    store = await leasehold.connect(sys.argv[1], identity="python-" + sys.argv[2])',
    '    async with store.lock("live", ttl="2s").hold(sys.argv[2]) as lease:',
    '        print(lease.fence, flush=True)',
    '        await asyncio.sleep(3600)',
    'asyncio.run(main())',
  ].join('\n')
  const child = spawn(python, ['-c', script, url, key], { stdio: ['ignore', 'pipe', 'inherit'] })
  const fence = new Promise((resolve, reject) => {
    child.stdout.setEncoding('utf8').once('data', (t) => resolve(t.trim()))
    child.on('exit', (code) => reject(new Error(`the Python holder exited ${code}`)))
  })
  return { child, fence }
}

/** Holds `key` of `lock` on `store` until `release()` is called; `fence` resolves at the grant. */
function nodeHolder(store, key) {
  let release
  const released = new Promise((r) => (release = r))
  let granted
  const fence = new Promise((r) => (granted = r))
  const done = store.lock('live', { ttl: '5s' }).hold(key, async (lease) => {
    granted(lease.fence.toString())
    await released
  })
  return { fence, release, done }
}

/** The text of a key row's cell. */
const cell = (page, key, name) => page.locator(`#keys tr[data-key="${key}"] td.${name}`)

let browser
let dir
let server
let ports
before(async () => {
  browser = await chromium.launch({ executablePath: chromiumPath, args: ['--no-sandbox'] })
  dir = await mkdtemp(join(tmpdir(), 'leasehold-ui-'))
  server = await serve([
    '--listen',
    '127.0.0.1:0',
    '--http',
    '127.0.0.1:0',
    '--data-dir',
    join(dir, 'data'),
  ])
  ports = { listen: server.address, http: server.http }
})
after(async () => {
  await browser?.close()
  server?.child.kill('SIGKILL')
})

test('the page shows a held key with its fence, its waiter, a lost holder, and survives a restart', async () => {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1100 } })
  await page.goto(`http://${ports.http}/`)
  await page.waitForSelector('body[data-state="live"]')
  const url = `leasehold://${ports.listen}`

  // A key held by the test appears with its fence and its holder's identity
  // and connection (the second holder gives none: hostname:pid).
  const first = await leasehold.connect(url, { identity: 'node-first' })
  const second = await leasehold.connect(url)
  const a = nodeHolder(first, 'node-key')
  const fenceA = await a.fence
  await assert.doesNotReject(cell(page, 'node-key', 'fence').filter({ hasText: fenceA }).waitFor())
  assert.match(
    await cell(page, 'node-key', 'holder').textContent(),
    /^node-first #\d+ 127\.0\.0\.1:\d+$/,
  )

  // A waiter appears in the key's line, and is gone within a second of its grant.
  const b = nodeHolder(second, 'node-key')
  await cell(page, 'node-key', 'waiters').filter({ hasText: /^1$/ }).waitFor()
  const releasedAt = Date.now()
  a.release()
  const fenceB = await b.fence
  const shownAt = await page.waitForFunction(
    (fence) => {
      const row = document.querySelector('#keys tr[data-key="node-key"]')
      const ok =
        row?.querySelector('td.fence')?.textContent === fence &&
        row?.querySelector('td.waiters')?.textContent === '0'
      return ok ? Number(document.body.dataset.frameT) : false
    },
    fenceB,
    { polling: 'raf' },
  )
  const lag = (await shownAt.jsonValue()) - releasedAt
  assert.ok(lag < 1000, `the grant showed ${lag} ms after the release`)
  assert.match(
    await cell(page, 'node-key', 'holder').textContent(),
    new RegExp(`^\\S+:${process.pid} #\\d+ 127\\.0\\.0\\.1:\\d+$`),
  )
  // The handoff was timed: the chart's second with it shows its p50 in µs.
  await page.waitForFunction(
    () => Number(document.getElementById('last-handoff')?.textContent) > 0,
    null,
    {
      polling: 'raf',
    },
  )
  b.release()
  await a.done
  await b.done

  // A holder killed with SIGKILL: its lease expires, and the page says so.
  const py = pythonHolder(url, 'py-key')
  const pyFence = await py.fence
  await cell(page, 'py-key', 'fence').filter({ hasText: pyFence }).waitFor()
  assert.match(await cell(page, 'py-key', 'holder').textContent(), /^python-py-key #\d+ /)
  await page.screenshot({ path: join(target, 'live-page.png'), fullPage: true })
  py.child.kill('SIGKILL')
  const lost = page.locator(
    '#events li[data-kind="lost"][data-key="py-key"][data-reason="expired"]',
  )
  await lost.waitFor({ timeout: 15_000 })
  // Its connection is gone by then; the event still names it.
  assert.match(await lost.textContent(), /by python-py-key #\d+/)
  await cell(page, 'py-key', 'fence').waitFor({ state: 'detached' })

  // The page stays connected across a restart: it reconnects to the new
  // process on the same address (a new epoch) and shows what it holds.
  const epoch = await page.locator('#epoch').textContent()
  await first.close()
  await second.close()
  server.child.kill('SIGTERM')
  await server.exited
  await page.waitForSelector('body[data-state="reconnecting"]')
  server = await serve([
    '--listen',
    ports.listen,
    '--http',
    ports.http,
    '--data-dir',
    join(dir, 'data'),
  ])
  await page.waitForSelector('body[data-state="live"]')
  assert.notEqual(await page.locator('#epoch').textContent(), epoch)
  const third = await leasehold.connect(url)
  const c = nodeHolder(third, 'after-restart')
  await cell(page, 'after-restart', 'fence')
    .filter({ hasText: await c.fence })
    .waitFor()
  c.release()
  await c.done
  await third.close()
  await page.close()
})

test('with tokens, over TLS, the page shows nothing until given a known token', async () => {
  const certs = await makeCertificates()
  assert.ok(certs, 'openssl made no certificates')
  const tokens = join(dir, 'tokens')
  await writeFile(tokens, 'w-secret write\nr-secret read\n')
  const guarded = await serve([
    '--listen',
    '127.0.0.1:0',
    '--http',
    '127.0.0.1:0',
    '--data-dir',
    join(dir, 'guarded'),
    '--tokens',
    tokens,
    '--tls-cert',
    certs.cert,
    '--tls-key',
    certs.key,
  ])
  try {
    const store = await leasehold.connect(`leaseholds://${guarded.address}`, {
      token: 'w-secret',
      tls: { ca: readFileSync(certs.ca) },
    })
    const held = nodeHolder(store, 'secret-key')
    const fence = await held.fence
    const context = await browser.newContext({ ignoreHTTPSErrors: true })
    const page = await context.newPage()
    await page.goto(`https://${guarded.http}/`)
    await page.waitForSelector('body[data-state="token"]')
    assert.equal(await page.locator('#live').isHidden(), true)
    assert.equal(await page.locator('#keys tbody tr').count(), 0)
    assert.equal(await page.evaluate(() => fetch('/live').then((r) => r.status)), 401)

    await page.fill('#token', 'not-a-token')
    await page.click('#token-form button')
    await page.locator('#token-error').filter({ hasText: 'not accepted' }).waitFor()
    assert.equal(await page.locator('#keys tbody tr').count(), 0)

    await page.fill('#token', 'r-secret')
    await page.click('#token-form button')
    await page.waitForSelector('body[data-state="live"]')
    await cell(page, 'secret-key', 'fence').filter({ hasText: fence }).waitFor()
    held.release()
    await held.done
    await store.close()
    await context.close()
  } finally {
    guarded.child.kill('SIGKILL')
    await certs.remove()
  }
})

test('the page shows a slot namespace with its slot, node and owner key, never the instance', async () => {
  const page = await browser.newPage()
  await page.goto(`http://${ports.http}/`)
  await page.waitForSelector('body[data-state="live"]')
  const store = await leasehold.connect(`leasehold://${ports.listen}`)
  const slots = store.slots('order-ids', { limit: 8, offset: 100 })
  const lease = await slots.acquire(new leasehold.Owner('order-service', 'secret-instance'))
  assert.ok(lease, 'a slot was free')
  const section = page.locator('#namespaces')
  await section.locator('h3').filter({ hasText: 'order-ids · 8 slots from node 100' }).waitFor()
  const row = section.locator('tbody tr').filter({ hasText: 'order-service' })
  await row.waitFor()
  const cells = await row.locator('td').allTextContents()
  assert.deepEqual(cells.slice(0, 4), [
    String(lease.slot),
    String(lease.node),
    'order-service',
    String(lease.fence),
  ])
  assert.equal((await section.textContent()).includes('secret-instance'), false)
  await slots.release(lease, 0)
  await store.close()
  await page.close()
})

for (const store of ['etcd', 'postgres']) {
  test(`leasehold ui shows what it can read of a store on ${store}`, async () => {
    const etcd = store === 'etcd' ? await startEtcd() : null
    const url = etcd ? etcd.url('ui-test') : `${postgresUrl()}?schema=ui_test`
    const page = await ui(['--store', url])
    try {
      const holders = await leasehold.connect(url, { identity: `ui-${store}` })
      const held = nodeHolder(holders, `${store}-key`)
      const fence = await held.fence
      const tab = await browser.newPage()
      await tab.goto(`http://${page.http}/`)
      await tab.waitForSelector('body[data-state="live"]')
      await cell(tab, `${store}-key`, 'fence').filter({ hasText: fence }).waitFor()
      // WHO-02: the holder's identity, as the store recorded it.
      assert.equal(await cell(tab, `${store}-key`, 'holder').textContent(), `ui-${store}`)
      assert.equal(await tab.locator('#store-name').textContent(), `live · ${store}`)
      // What a store read from outside cannot show is left out, not shown as
      // 0: maxHold and the connections; how many wait it can.
      assert.equal(await cell(tab, `${store}-key`, 'revoke').isHidden(), true)
      assert.equal(await cell(tab, `${store}-key`, 'waiters').textContent(), '0')
      assert.equal(await tab.locator('section.connections').isHidden(), true)
      held.release()
      await held.done
      await tab
        .locator(`#events li[data-kind="ended"][data-key="${store}-key"]`)
        .waitFor({ timeout: 10_000 })
      await cell(tab, `${store}-key`, 'fence').waitFor({ state: 'detached' })
      await holders.close()
      await tab.close()
    } finally {
      page.child.kill('SIGTERM')
      await etcd?.stop()
    }
  })
}
