package dev.leasehold

import dev.leasehold.support.Scenarios
import dev.leasehold.support.ServerFixture
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.DynamicTest
import org.junit.jupiter.api.DynamicTest.dynamicTest
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.TestFactory
import org.junit.jupiter.api.extension.RegisterExtension

/**
 * The shared scenarios of spec-tests/ (every file of
 * spec-tests/scenarios, read at test time) through the Kotlin API: each on
 * a fresh embedded store on a virtual clock, and those that move no clock
 * on a real server store process too. Every contract a scenario names is
 * covered here; spec-tests/README.md gives the format.
 */
class ScenariosTest {
    private val scenarios = Scenarios.files().map(Scenarios::load)
    private val server get() = fixture.server

    /** One server store process for the class. */
    companion object {
        @JvmField
        @RegisterExtension
        val fixture = ServerFixture()
    }

    @Test
    fun `the scenario folder of spec-tests has scenarios`() {
        assertTrue(scenarios.size >= 20, "only ${scenarios.size} scenarios in ${Scenarios.folder}")
        assertTrue(scenarios.count { it.appliesToServer } >= 4)
    }

    @TestFactory
    fun `shared scenarios on the embedded store (virtual clock)`(): List<DynamicTest> =
        scenarios.map { scenario -> dynamicTest(scenario.toString()) { runBlocking { Scenarios.run(scenario) } } }

    @TestFactory
    fun `shared scenarios on the server store`(): List<DynamicTest> =
        scenarios.filter { it.appliesToServer }.map { scenario ->
            dynamicTest(scenario.toString()) { runBlocking { Scenarios.run(scenario, server.url) } }
        }
}
