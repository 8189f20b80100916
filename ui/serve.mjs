// `leasehold serve` as a child process for the live page's test and its
// load measurement: resolves once the server listens, with its addresses.

import { spawn } from 'node:child_process'

/**
 * Starts `binary serve ARGS…` (ARGS should include `--http`).
 * @param {string} binary
 * @param {string[]} args
 */
export async function serve(binary, args) {
  const child = spawn(binary, ['serve', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, LEASEHOLD_LOG: 'warn' },
  })
  let stderr = ''
  child.stderr.setEncoding('utf8').on('data', (t) => (stderr += t))
  const out = await new Promise((resolve, reject) => {
    let text = ''
    const timer = setTimeout(() => reject(new Error(`no start: ${stderr}`)), 15_000)
    child.stdout.setEncoding('utf8').on('data', (t) => {
      text += t
      if (/^listening on \S+$/m.test(text)) {
        clearTimeout(timer)
        resolve(text)
      }
    })
    child.on('exit', (code) => reject(new Error(`the server exited ${code}: ${stderr}`)))
  })
  const address = /^listening on (\S+)$/m.exec(out)[1]
  const http = /^http on (\S+)$/m.exec(out)?.[1]
  const exited = new Promise((resolve) => child.on('exit', resolve))
  return { child, address, http, exited }
}
