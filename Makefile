# Leasehold: the commands the README gives, and the loops CONTRIBUTING.md describes.
#   make demo    the main job: holders contending for keys, fences printed
#   make test    every test in every language, then a table of its steps' times
#   make check   the fast loop: formatting, lints, the core's and the C ABI's
#                tests, Python and Node on debug builds (no etcd, no PostgreSQL)
#   make setup   installs every tool and package the others use, once;
#                demo, test and the benchmarks call it first
#   make bench   the benchmarks (numbers go in docs/benchmarks.md)

CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(CURDIR)/target
# No build may run protoc, though the machine may have one: every build the
# Makefile runs (the core, the C ABI, the addon and the wheel from source,
# make dist) finds a protoc that fails (tools/no-protoc).
export PROTOC := $(CURDIR)/tools/no-protoc
# What the Makefile keeps outside the clone, shared by every clone on the
# machine: the compiler cache (mk/cache.mk) and the packaging tools
# (mk/dist.mk).
LEASEHOLD_CACHE ?= $(HOME)/.cache/leasehold

.PHONY: all setup setup-apt demo demo-embedded demo-test test check check-rust lint fmt-check clippy rustdoc tools-lint \
	rust-test rust-debug coverage bench bench-embedded bench-compare bench-ids bench-instructions toolchain

all: test

# Each part keeps its targets in mk/<part>.mk and adds to these:
#   TEST_STEPS += <target>                    a step of `make test`, in order
#   TEST_AFTER_DIST += <target>               a step of `make test` that installs what
#                                             `make dist` built: after TEST_STEPS, once
#                                             `dist` is done
#   TEST_BESIDE += <target>                   a step of `make test` in its second lane,
#                                             beside the others from the start (tools/steps)
#   CHECK_STEPS += <target>                   a step of `make check`
#   RUST_TEST_EXCLUDE += --exclude <crate>    crates `cargo test` cannot link (extension modules)
#   DEMO_HOLDERS += <lang>                    holders `make demo` starts (see demo/run.sh)
#   APT_PACKAGES += <package>                 Debian packages `make setup` installs when missing
#   SETUP += <target>                         other installs of `make setup` (a virtual
#                                             environment, npm packages, a tool built once)
# No target but `setup` installs anything.
# The lints, but the core's API docs, which run in the second lane (below).
TEST_STEPS := fmt-check clippy tools-lint rust-test
TEST_AFTER_DIST :=
TEST_BESIDE :=
CHECK_STEPS := lint check-rust
RUST_TEST_EXCLUDE :=
DEMO_HOLDERS :=
# Redis, for the benchmarks' comparison rows.
APT_PACKAGES := redis-server
SETUP := toolchain
# The features of the workspace's crates the tests need: the C ABI's and the
# JVM library's test hooks (Go's and the JVM's tests call them).
RUST_FEATURES := --features leasehold-ffi/testing,leasehold-jvm/testing
# The debug build every step of `make test` runs on (the server, the C ABI's
# static library, the JVM library, the chaos harness, the demo), as
# `rust-test` builds it: every crate of the workspace, every target, one set
# of features. Cargo resolves a dependency's features for the packages and
# targets it is asked for, and builds it again, with everything above it,
# for each new set: when each step built its own packages (`-p
# leasehold-server`, `-p leasehold-ffi --features testing`, ...), hyper,
# tonic, the PostgreSQL client and the core were built five more times,
# tokio three (154 units, by cargo's --unit-graph). Built this way, a step
# after `rust-test` builds only our own crates that it did not. A test
# run of a few targets (`--test NAME`) selects RUST_CRATES too.
RUST_CRATES = --workspace --locked $(RUST_TEST_EXCLUDE) $(RUST_FEATURES)
RUST_DEBUG = $(RUST_CRATES) --all-targets
-include mk/*.mk
TEST_STEPS += @dist $(TEST_AFTER_DIST) plots-test demo-test coverage
# The second lane ends well before the first (cold or warm): the core's API
# docs are checked there, at its end.
TEST_BESIDE += rustdoc

# One apt run for every missing package; Debian starts the services it
# installs (etcd, PostgreSQL, Redis), and the tests start their own.
setup-apt:
	@missing=$$(for p in $(APT_PACKAGES); do dpkg -s $$p >/dev/null 2>&1 || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing $$missing"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing && \
		for s in etcd postgresql redis-server; do systemctl disable --now $$s >/dev/null 2>&1 || true; done; \
	fi

setup: setup-apt
	@$(MAKE) --no-print-directory $(SETUP)

toolchain:
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy

# The main job: a server store on loopback and holders in every language
# contending for its keys (demo/run.sh); demo-embedded: Rust holders on the
# embedded store.
demo: setup
	DEMO_HOLDERS="$(DEMO_HOLDERS)" bash demo/run.sh

demo-embedded:
	$(CARGO) run --release -q -p leasehold-bench --bin demo

# The demo as a test (make test): 2 s of holders in every language on the
# server store, from the debug builds the other steps made (and the Python
# package from the wheel they installed); it fails if a stale fence reached
# the resource or two holds overlap on its timeline.
demo-test:
	PY_HOLDER_INSTALL=python-wheel-install DEMO_PROFILE=debug DEMO_BUILD="$(RUST_DEBUG)" DEMO_SECONDS=2 DEMO_HOLDERS="$(DEMO_HOLDERS)" bash demo/run.sh

# Every step in order, timed, in two lanes (tools/steps): TEST_STEPS, then
# TEST_AFTER_DIST once `dist` is done, and beside them TEST_BESIDE (the
# packaging build, compiling for minutes, while the first lane's tests mostly
# wait on timers and sockets); the table is printed at the end, or at the
# first step that fails, which stops the other lane; and then, however the
# steps ended, what they left running is stopped (TEST_FINALLY). Builds are not
# incremental here: a clean clone gains nothing from it, and the compiler
# cache (mk/cache.mk) keeps no incremental build.
TEST_FINALLY := postgres-stop cache-stop
test: setup
	@CARGO_INCREMENTAL=0 STEPS_FINALLY="$(TEST_FINALLY)" STEPS_BESIDE="$(TEST_BESIDE)" \
		STEPS_LOGS=$(CARGO_TARGET_DIR)/steps MAKE="$(MAKE)" tools/steps $(TEST_STEPS)

check:
	@MAKE="$(MAKE)" tools/steps $(CHECK_STEPS)

lint: fmt-check clippy rustdoc tools-lint

fmt-check:
	$(CARGO) fmt --all -- --check

# One run, with the test hooks of the C ABI and the JVM library and the
# bench's comparisons: no code is compiled only without them, so one run
# sees it all (three runs, one a feature each, checked 150 more crates).
clippy:
	$(CARGO) clippy --workspace --all-targets --locked \
		--features leasehold-ffi/testing,leasehold-jvm/testing,leasehold-bench/compare -- -D warnings

# The Makefile's own Python tools, checked as the plots' scripts are: ruff,
# and mypy --strict one at a time (scripts, each a module named __main__).
TOOLS_PY := tools/steps tools/test-repeat
tools-lint:
	$(PY_VENV)/bin/ruff format --line-length 100 --check $(TOOLS_PY)
	$(PY_VENV)/bin/ruff check --line-length 100 $(TOOLS_PY)
	for tool in $(TOOLS_PY); do $(PY_VENV)/bin/mypy --strict $$tool || exit 1; done

# The core's API docs, every intra-doc link resolved. In a target directory
# of its own: in make test's second lane, a cargo holding the lock of the
# first lane's would stall its builds.
rustdoc:
	RUSTDOCFLAGS="-D warnings" CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)/rustdoc \
		$(CARGO) doc --no-deps --locked -q -p leasehold --features etcd

rust-test: etcd
	$(CARGO) test $(RUST_CRATES)

# The debug build of RUST_DEBUG (above).
rust-debug:
	$(CARGO) build -q $(RUST_DEBUG)

# The core's tests (its unit tests, its tests/ on the embedded store and
# the doc examples) and the C ABI's, with the features the bindings build it
# with, so that `check-python` and `check-node` reuse the same core.
check-rust:
	$(CARGO) test --locked -p leasehold -p leasehold-ffi --features leasehold/etcd,leasehold/postgres

coverage:
	tools/contract-coverage --check | tail -n 7

bench: setup bench-embedded bench-compare bench-ids

bench-embedded:
	$(CARGO) bench -p leasehold-bench --bench embedded
	$(CARGO) run --release -q -p leasehold-bench --bin lease_memory

# The ID generator on the embedded and the server store, next to Redis INCR
# and etcd revisions as ID sources (docs/ids.md).
bench-ids: etcd
	$(CARGO) build --release -p leasehold-server
	$(CARGO) run --release -q -p leasehold-bench --features compare --bin ids
	$(PLOT_PY) bench/plots.py tables target/bench-ids.md

# The instructions one uncontended hold cycle costs client and server
# together, Leasehold's server store next to Redis's recipe, counted by
# callgrind (docs/benchmarks.md). INSTRUCTION_CYCLES: the cycles of the
# shorter run (2,000).
INSTRUCTION_CYCLES ?= 2000
bench-instructions:
	$(CARGO) build --release -p leasehold-server
	$(CARGO) run --release -q -p leasehold-bench --features compare --bin instructions -- $(INSTRUCTION_CYCLES)
	$(PLOT_PY) bench/plots.py tables $(CARGO_TARGET_DIR)/bench-instructions.md

# Leasehold's server store vs etcd and Redis, and Leasehold on PostgreSQL vs
# PostgreSQL's lock recipes, on this machine (docs/benchmarks.md).
bench-compare: etcd
	$(CARGO) build --release -p leasehold-server
	$(CARGO) run --release -q -p leasehold-bench --features compare --bin compare
	$(PLOT_PY) bench/plots.py compare $(CARGO_TARGET_DIR)/bench-compare.json

# The native libraries `make check` tests through, in one debug build: the
# server the tests start, the Python module and the Node addon.
CHECK_NATIVE := -p leasehold-server -p leasehold-python -p leasehold-node \
	--features leasehold-python/extension-module
