// `make bench-live` (docs/live.md): what the live page costs a busy server.
// A release server with 100,000 held keys and 1,000 keys handed over every
// second (bench/src/bin/live_load.rs: 1,000 grants a second, 1,000 always
// waiting); the server's CPU (from /proc, user + system) and memory over a
// window without a page, then with the page open in Debian's chromium; the
// page's frames and drawing time; the stream's bytes. Writes
// $CARGO_TARGET_DIR/live-load.md.

import { spawn } from 'node:child_process'
import { mkdtemp, readFile, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { chromium } from 'playwright-core'
import { serve } from './serve.mjs'

const repo = fileURLToPath(new URL('../', import.meta.url))
const target = process.env.CARGO_TARGET_DIR ?? join(repo, 'target')
const KEYS = Number(process.env.LIVE_KEYS ?? 100_000)
const CHURN = Number(process.env.LIVE_CHURN ?? 1_000)
const WINDOW_S = Number(process.env.LIVE_WINDOW_S ?? 20)
const TICKS_PER_S = 100 // Linux's USER_HZ

/** Resolves with the first line of `child`'s stdout that matches `pattern`. */
function line(child, pattern) {
  return new Promise((resolve, reject) => {
    let text = ''
    child.stdout.setEncoding('utf8').on('data', (t) => {
      text += t
      const m = pattern.exec(text)
      if (m) resolve(m)
    })
    child.on('exit', (code) => reject(new Error(`exited ${code} before ${pattern}`)))
  })
}

/** The process's CPU seconds so far and its resident memory in MiB. */
async function usage(pid) {
  const stat = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1].split(' ')
  const status = await readFile(`/proc/${pid}/status`, 'utf8')
  const rss = Number(/VmRSS:\s+(\d+)/.exec(status)[1]) / 1024
  return { cpu: (Number(stat[11]) + Number(stat[12])) / TICKS_PER_S, rss }
}

/** The server's share of one core and its memory over `seconds`. */
async function measure(pid, seconds) {
  const a = await usage(pid)
  await new Promise((r) => setTimeout(r, seconds * 1000))
  const b = await usage(pid)
  return { core: (b.cpu - a.cpu) / seconds, rss: b.rss }
}

const dir = await mkdtemp(join(tmpdir(), 'leasehold-live-load-'))
const server = await serve(join(target, 'release', 'leasehold'), [
  '--listen',
  '127.0.0.1:0',
  '--http',
  '127.0.0.1:0',
  '--data-dir',
  join(dir, 'data'),
  '--max-keys-per-connection',
  String(KEYS + 2 * CHURN + 10),
])
const { address, http } = server
const load = spawn(
  join(target, 'release', 'live_load'),
  [`leasehold://${address}`, String(KEYS), String(CHURN)],
  {
    stdio: ['pipe', 'pipe', 'inherit'],
  },
)
await line(load, /^ready/m)
await new Promise((r) => setTimeout(r, 3000))

const idle = await measure(server.child.pid, WINDOW_S)

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  args: ['--no-sandbox'],
})
const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } })
await page.goto(`http://${http}/`)
await page.waitForSelector('body[data-state="live"]')
await new Promise((r) => setTimeout(r, 2000))
const framesBefore = Number(await page.evaluate(() => document.body.dataset.frames))
const watched = await measure(server.child.pid, WINDOW_S)
const framesAfter = Number(await page.evaluate(() => document.body.dataset.frames))
const footer = await page.locator('#footer').textContent()
const drawnMs = Number(/drawn in ([\d.]+) ms/.exec(footer)?.[1] ?? NaN)
const heap = await page.evaluate(() => performance.memory?.usedJSHeapSize ?? 0)
await page.screenshot({ path: join(target, 'live-load.png') })

// The stream itself, read raw for a few seconds: its size and what a frame carries.
const res = await fetch(`http://${http}/live`)
const reader = res.body.getReader()
let bytes = 0
let text = ''
const until = Date.now() + 5000
while (Date.now() < until) {
  const { value, done } = await reader.read()
  if (done) break
  bytes += value.length
  text += new TextDecoder().decode(value)
}
await reader.cancel()
const frames = text.split('\n\n').filter((b) => b.startsWith('event: frame'))
const last = JSON.parse(frames[frames.length - 1].split('\ndata: ')[1])

await browser.close()
load.stdin.end()
server.child.kill('SIGTERM')

const pct = (x) => `${(x * 100).toFixed(1)} %`
const report = [
  `# The live page under load`,
  ``,
  `${KEYS.toLocaleString('en')} keys held and ${CHURN.toLocaleString('en')} keys handed over every second ` +
    `(${last.overview.held.toLocaleString('en')} held, ${last.overview.waiting} waiting at the end); ` +
    `windows of ${WINDOW_S} s; \`make bench-live\`.`,
  ``,
  `| | server CPU (one core) | server memory |`,
  `|---|---:|---:|`,
  `| no page open | ${pct(idle.core)} | ${idle.rss.toFixed(0)} MiB |`,
  `| the page open in chromium | ${pct(watched.core)} | ${watched.rss.toFixed(0)} MiB |`,
  `| the page's cost | **${pct(watched.core - idle.core)}** | ${(watched.rss - idle.rss).toFixed(0)} MiB |`,
  ``,
  `The page: ${((framesAfter - framesBefore) / WINDOW_S).toFixed(2)} frames drawn a second ` +
    `(the server sends 2), the last drawn in ${drawnMs} ms, JS heap ${(heap / 2 ** 20).toFixed(1)} MiB.`,
  `The stream: ${(bytes / 5 / 1024).toFixed(0)} KiB a second; a frame carries ` +
    `${last.overview.keys.length} key rows, ${last.events.length} events ` +
    `(${last.missed} more left out of it), ${last.connections.length} connections.`,
  ``,
].join('\n')
await writeFile(join(target, 'live-load.md'), report)
console.log(report)
