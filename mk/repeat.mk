# The flake finder (tools/test-repeat): the suites that depend on timing,
# run REPEAT_N times each with a load beside them, and each test's failures
# out of REPEAT_N. Run it before resolving an issue that touches them.
# Included by the root Makefile.
#   make test-repeat               every suite below, 5 rounds, busy loops beside
#   REPEAT_N=10                    rounds
#   REPEAT_LOAD=build              a release build from scratch, over and over
#                                  (hog: one busy loop a core; none)
#   REPEAT_SUITES="repeat-rust"    some of the suites:
#     repeat-rust    the server's faults and floods, the etcd cluster's failover,
#                    member faults and both etcds' conformance suite, the
#                    PostgreSQL faults (cargo test --test ...)
#     repeat-python  repeat-node  repeat-go  repeat-jvm
#                    each binding's etcd member faults (DIST-09) and lost store (LOCK-21)
#     repeat-chaos   the chaos smoke run (make chaos-smoke's)
# Every suite runs from the builds `make test-repeat` makes first.

REPEAT_N ?= 5
REPEAT_LOAD ?= hog
REPEAT_SUITES ?= repeat-rust repeat-python repeat-node repeat-go repeat-jvm repeat-chaos
REPEAT_RUST_TESTS := --test faults --test flood --test failover --test member_faults --test conformance

.PHONY: test-repeat repeat-rust repeat-python repeat-node repeat-go repeat-jvm repeat-chaos

# Built as `make test` builds (not incrementally), so that a run after it
# compiles nothing again.
test-repeat: export CARGO_INCREMENTAL = 0
test-repeat: setup etcd etcd-cluster postgres python-wheel-install node-install jvm-lib $(CHAOS_HOLDERS_BUILT)
	$(CARGO) test --no-run -q $(RUST_CRATES) $(REPEAT_RUST_TESTS)
	@MAKE="$(MAKE)" tools/test-repeat --rounds $(REPEAT_N) --load $(REPEAT_LOAD) $(REPEAT_SUITES); \
		status=$$?; $(MAKE) --no-print-directory $(TEST_FINALLY); exit $$status

repeat-rust:
	$(CARGO) test $(RUST_CRATES) --no-fail-fast $(REPEAT_RUST_TESTS)

repeat-python:
	cd $(PY_DIR) && CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(PY) -m pytest -q -rfE -p no:cacheprovider \
		tests/test_etcd_faults.py tests/test_lost_store.py

repeat-node:
	cd $(NODE_DIR) && RUST_BACKTRACE=0 CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(NODE) --test --test-reporter=tap \
		test/etcd-faults.test.mjs test/lost-store.test.mjs

repeat-go:
	cd $(GO_DIR) && GODEBUG=cgocheck=1 CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(GO) test -race -count=1 \
		-tags leasehold_testing -run 'Dist09|Lock21' ./locks

# Without -q, so that Surefire says how many tests ran.
repeat-jvm:
	cd $(JVM_DIR) && env -u RUST_BACKTRACE $(MVN) $(filter-out -q,$(MVN_FLAGS)) test -Dsurefire.failIfNoSpecifiedTests=false \
		-Dtest='EtcdFaultsTest,HoldTest#LOCK-21*' \
		-Dleasehold.generated=$(JVM_OUT)/testing/generated \
		-Dleasehold.libdir=$(CARGO_TARGET_DIR)/debug \
		-Dleasehold.bin=$(CARGO_TARGET_DIR)/debug/leasehold

repeat-chaos:
	$(CHAOS_SMOKE_RUN)
