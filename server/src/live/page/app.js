// The live page: reads the server's stream of frames (GET /live, server-sent
// events read through fetch, so that a token can go in a header) and draws
// them. Every value is written with textContent: nothing the store holds is
// ever parsed as HTML.
'use strict'

const FRAME_TIMEOUT_MS = 5000 // no frame this long: the stream is dead, reconnect
const RECONNECT_MS = 1000
const EVENTS_SHOWN = 200
const TOKEN_KEY = 'leasehold.token'

const $ = (id) => document.getElementById(id)
let samples = []
let connections = new Map()
let frames = 0
let query = { lock: '', filter: '' }
let current = null // the AbortController of the open stream

function setState(state, text) {
  document.body.dataset.state = state
  $('status').textContent = text
}

function el(tag, cls, text) {
  const e = document.createElement(tag)
  if (cls) e.className = cls
  if (text !== undefined) e.textContent = String(text)
  return e
}

function row(cells, cls) {
  const tr = el('tr', cls)
  for (const [c, text] of cells) tr.append(el('td', c, text))
  return tr
}

function ms(v) {
  if (v === null || v === undefined) return '–'
  if (v < 1000) return `${v} ms`
  const s = v / 1000
  if (s < 120) return `${s.toFixed(1)} s`
  const m = s / 60
  if (m < 120) return `${m.toFixed(1)} min`
  return `${(m / 60).toFixed(1)} h`
}

function time(unixMs) {
  return new Date(unixMs).toLocaleTimeString()
}

function holder(id, identity) {
  if (!id) return identity || '–'
  const c = connections.get(id)
  const named = identity ? `${identity} #${id}` : `#${id}`
  return c ? `${named} ${c.peer}` : named
}

function chart(name, values) {
  const svg = $(`chart-${name}`)
  const max = Math.max(1, ...values)
  const n = Math.max(values.length - 1, 1)
  const points = values.map((v, i) => `${(i / n) * 300},${58 - (v / max) * 56}`).join(' ')
  const line = document.createElementNS('http://www.w3.org/2000/svg', 'polyline')
  line.setAttribute('points', points)
  svg.replaceChildren(line)
  $(`last-${name}`).textContent = values.length ? String(values[values.length - 1]) : ''
}

function drawCharts(shows) {
  chart(
    'grants',
    samples.map((s) => s.grants),
  )
  // A store read from outside cannot tell a loss from a release: its chart is of every end.
  chart(
    'losses',
    samples.map((s) => (shows.endings ? s.losses : s.releases)),
  )
  chart(
    'waiting',
    samples.map((s) => s.waiting),
  )
  chart(
    'connections',
    samples.map((s) => s.connections),
  )
  // A second without a handoff draws as 0.
  chart(
    'handoff',
    samples.map((s) => s.handoff_p50_us ?? 0),
  )
}

function applyShows(shows) {
  const body = document.body.classList
  for (const part of ['waiters', 'holders', 'revocations', 'slots', 'connections', 'epoch']) {
    body.toggle(`no-${part}`, !shows[part])
  }
  $('store-name').textContent = `live · ${shows.store}`
  $('losses-caption').textContent = shows.endings ? 'losses / s' : 'ended / s'
}

function drawLocks(o) {
  const body = $('locks').tBodies[0]
  body.replaceChildren(
    ...o.locks.map((l) => {
      const tr = row(
        [
          ['', l.lock || '(manual)'],
          ['', l.held],
          ['', l.waiting],
        ],
        'lock-row',
      )
      tr.dataset.lock = l.lock
      tr.addEventListener('click', () => choose(l.lock, query.filter))
      return tr
    }),
  )
  const select = $('lock-filter')
  const names = ['', ...o.locks.map((l) => l.lock)]
  if (query.lock && !names.includes(query.lock)) names.push(query.lock)
  const shown = [...select.options].map((o) => o.value)
  if (shown.join('\u0000') !== names.join('\u0000')) {
    select.replaceChildren(
      ...names.map((n) => {
        const o = el('option', '', n === '' ? 'every lock' : n)
        o.value = n
        return o
      }),
    )
  }
  select.value = query.lock
}

function drawKeys(o) {
  const body = $('keys').tBodies[0]
  body.replaceChildren(
    ...o.keys.map((k) => {
      const tr = row([
        ['lock', k.lock || '(manual)'],
        ['key', k.key],
        ['fence', k.fence],
        ['holder', holder(k.holder, k.identity)],
        ['held', ms(k.held_ms)],
        ['expires', ms(k.expires_in_ms)],
        ['revoke', ms(k.revoke_in_ms)],
        ['waiters', k.waiting],
        ['oldest', ms(k.oldest_wait_ms)],
      ])
      tr.dataset.lock = k.lock
      tr.dataset.key = k.key
      return tr
    }),
  )
  $('matched').textContent =
    o.matched > o.keys.length
      ? `(the ${o.keys.length} longest held of ${o.matched})`
      : `(${o.matched})`
}

function describe(e) {
  const who =
    e.holder || e.identity
      ? ` ${e.kind === 'granted' ? 'to' : 'by'} ${holder(e.holder, e.identity)}`
      : ''
  switch (e.kind) {
    case 'refused':
      return `refused ${e.peer} (${e.reason})`
    case 'lost':
      return `lost ${e.lock}/${e.key} fence ${e.fence}${who} (${e.reason === 'revoked' ? 'revoked: maxHold' : e.reason})`
    default:
      return `${e.kind} ${e.lock}/${e.key} fence ${e.fence}${who}`
  }
}

function drawEvents(f) {
  const list = $('events')
  const items = f.events
    .map((e) => {
      const li = el('li', e.kind, `${time(e.at)} ${describe(e)}`)
      li.dataset.kind = e.kind
      if (e.key !== undefined) li.dataset.key = e.key
      if (e.reason) li.dataset.reason = e.reason
      return li
    })
    .reverse()
  if (f.missed > 0) items.push(el('li', 'missed', `… ${f.missed} more not shown`))
  list.prepend(...items)
  while (list.children.length > EVENTS_SHOWN) list.lastElementChild.remove()
}

function drawNamespaces(o) {
  const box = $('namespaces')
  if (!o.namespaces.length) {
    box.replaceChildren(el('p', 'sub', 'none'))
    return
  }
  box.replaceChildren(
    ...o.namespaces.map((n) => {
      const div = el('div')
      div.append(
        el('h3', '', `${n.name} · ${n.limit} slots from node ${n.offset} · IDs ${n.layout}`),
      )
      const table = el('table')
      const head = el('tr')
      for (const h of ['slot', 'node', 'owner', 'fence', 'floor', 'ceiling', 'expires in'])
        head.append(el('th', '', h))
      table.append(el('thead'), el('tbody'))
      table.tHead.append(head)
      table.tBodies[0].append(
        ...n.slots.map((s) =>
          row([
            ['', s.slot],
            ['', s.node],
            ['', s.owner ?? 'free'],
            ['', s.fence ?? '–'],
            ['', s.floor],
            ['', s.ceiling === null ? '–' : time(s.ceiling)],
            ['', ms(s.expires_in_ms)],
          ]),
        ),
      )
      div.append(table)
      return div
    }),
  )
}

function drawConnections(f) {
  connections = new Map(f.connections.map((c) => [c.id, c]))
  $('connection-list').tBodies[0].replaceChildren(
    ...f.connections.map((c) =>
      row([
        ['', c.id],
        ['', c.identity],
        ['', c.peer],
        ['', c.role],
        ['', time(c.since)],
      ]),
    ),
  )
}

function draw(f, first) {
  const started = performance.now()
  if (first) samples = []
  samples = samples.concat(f.samples).slice(-300)
  const o = f.overview
  applyShows(f.shows)
  $('held').textContent = o.held
  $('waiting').textContent = o.waiting
  $('connections').textContent = f.connection_count
  $('epoch').textContent = f.epoch
  drawConnections(f)
  drawCharts(f.shows)
  drawLocks(o)
  drawKeys(o)
  drawEvents(f)
  drawNamespaces(o)
  frames += 1
  const took = performance.now() - started
  document.body.dataset.frames = String(frames)
  document.body.dataset.frameT = String(f.t)
  $('footer').textContent = `frame ${frames} at ${time(f.t)} · drawn in ${took.toFixed(1)} ms`
}

function showToken(message) {
  setState('token', 'token needed')
  $('live').hidden = true
  $('token-form').hidden = false
  $('token-error').textContent = message
}

// Reads one stream until it ends; resolves 'token' when the server asked
// for a (valid) token, 'ended' otherwise.
async function stream(controller) {
  const token = sessionStorage.getItem(TOKEN_KEY)
  const params = new URLSearchParams()
  if (query.lock) params.set('lock', query.lock)
  if (query.filter) params.set('filter', query.filter)
  const headers = token ? { Authorization: `Bearer ${token}` } : {}
  const res = await fetch(`/live?${params}`, {
    headers,
    cache: 'no-store',
    signal: controller.signal,
  })
  if (res.status === 401) {
    showToken(token ? 'that token is not accepted' : '')
    return 'token'
  }
  if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`)
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  let first = true
  let watchdog = setTimeout(() => controller.abort(), FRAME_TIMEOUT_MS)
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return 'ended'
      buffer += value
      let end
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const block = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        const data = block
          .split('\n')
          .filter((l) => l.startsWith('data: '))
          .map((l) => l.slice(6))
          .join('\n')
        if (!data) continue
        clearTimeout(watchdog)
        watchdog = setTimeout(() => controller.abort(), FRAME_TIMEOUT_MS)
        $('token-form').hidden = true
        $('live').hidden = false
        setState('live', 'live')
        draw(JSON.parse(data), first)
        first = false
      }
    }
  } finally {
    clearTimeout(watchdog)
  }
}

async function run() {
  for (;;) {
    const controller = new AbortController()
    current = controller
    let outcome
    try {
      outcome = await stream(controller)
    } catch (e) {
      outcome = 'ended'
    }
    if (outcome === 'token') return
    if (current !== controller) return // a new query opened its own stream
    setState('reconnecting', 'reconnecting…')
    await new Promise((r) => setTimeout(r, RECONNECT_MS))
    if (current !== controller) return
  }
}

function choose(lock, filter) {
  query = { lock, filter }
  if (current) current.abort()
  current = null
  run()
}

document.addEventListener('DOMContentLoaded', () => {
  $('token-form').addEventListener('submit', (ev) => {
    ev.preventDefault()
    sessionStorage.setItem(TOKEN_KEY, $('token').value)
    $('token').value = ''
    choose(query.lock, query.filter)
  })
  $('lock-filter').addEventListener('change', (ev) => choose(ev.target.value, query.filter))
  let typing
  $('key-filter').addEventListener('input', (ev) => {
    clearTimeout(typing)
    typing = setTimeout(() => choose(query.lock, ev.target.value), 300)
  })
  run()
})
