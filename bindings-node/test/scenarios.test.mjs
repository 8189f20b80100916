// The shared scenarios of spec-tests/ (every file of spec-tests/scenarios,
// read at test time) through the Node binding: each on a fresh embedded
// store on a virtual clock, and those that move no clock on a real server
// store process too. Every contract a scenario names is covered here; see
// spec-tests/README.md for the format.

import assert from 'node:assert/strict'
import { describe, test } from 'node:test'

import { appliesToServer, loadScenario, runScenario, scenarioFiles } from './helpers/scenarios.mjs'
import { serverFixture } from './helpers/server.mjs'

const files = scenarioFiles()
const scenarios = files.map(loadScenario)

test('the scenario folder of spec-tests has scenarios', () => {
  assert.ok(scenarios.length >= 20, `only ${scenarios.length} scenarios`)
})

describe('shared scenarios on the embedded store (virtual clock)', () => {
  for (const scenario of scenarios) {
    test(`${scenario.id} (${scenario.contracts.join(', ')})`, () => runScenario(scenario))
  }
})

describe('shared scenarios on the server store', () => {
  const onServer = scenarios.filter(appliesToServer)
  test('some scenarios apply to the server store', () => assert.ok(onServer.length >= 4))
  for (const scenario of onServer) {
    describe(scenario.id, () => {
      const server = serverFixture()
      test(`${scenario.id} (${scenario.contracts.join(', ')})`, () =>
        runScenario(scenario, server.url))
    })
  }
})
