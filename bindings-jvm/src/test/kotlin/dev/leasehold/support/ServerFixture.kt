package dev.leasehold.support

import org.junit.jupiter.api.extension.AfterAllCallback
import org.junit.jupiter.api.extension.AfterEachCallback
import org.junit.jupiter.api.extension.BeforeAllCallback
import org.junit.jupiter.api.extension.BeforeEachCallback
import org.junit.jupiter.api.extension.ExtensionContext

/**
 * A server store process for the tests of a class, as a JUnit extension:
 * registered on a static field (`@JvmField @RegisterExtension` in a
 * companion object), one for the whole class; with [eachTest], registered
 * on an instance field, a fresh one for every test.
 */
class ServerFixture
    @JvmOverloads
    constructor(
        private val eachTest: Boolean = false,
    ) : BeforeAllCallback,
        AfterAllCallback,
        BeforeEachCallback,
        AfterEachCallback {
        private var process: ServerProcess? = null

        /** The server, while the tests run. */
        val server: ServerProcess get() = process ?: error("the server fixture is read before its tests run")

        override fun beforeAll(context: ExtensionContext) {
            if (!eachTest) process = ServerProcess.start()
        }

        override fun afterAll(context: ExtensionContext) {
            if (!eachTest) stop()
        }

        override fun beforeEach(context: ExtensionContext) {
            if (eachTest) process = ServerProcess.start()
        }

        override fun afterEach(context: ExtensionContext) {
            if (eachTest) stop()
        }

        private fun stop() {
            process?.stop()
            process = null
        }
    }
