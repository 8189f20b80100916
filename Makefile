# Leasehold: the commands the README gives.
#   make demo   the main job: holders contending for keys, fences printed
#   make test   formatting, lints and every test
#   make bench  the benchmarks (numbers go in docs/benchmarks.md)

CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(CURDIR)/target
COVERAGE := ../shared/tools/contract-coverage

.PHONY: all demo demo-embedded test lint fmt-check clippy rust-test coverage bench bench-embedded bench-compare bench-ids toolchain

all: test

# Each language binding keeps its targets in mk/<lang>.mk and adds to these:
#   BINDING_TESTS += <lang>-test              run by `make test`
#   RUST_TEST_EXCLUDE += --exclude <crate>    crates `cargo test` cannot link (extension modules)
#   DEMO_HOLDERS += <lang>                    holders `make demo` starts (see demo/run.sh)
BINDING_TESTS :=
RUST_TEST_EXCLUDE :=
DEMO_HOLDERS :=
-include mk/*.mk

toolchain: protoc
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy

# The main job: a server store on loopback and holders in every language
# contending for its keys (demo/run.sh); demo-embedded: Rust holders on the
# embedded store.
demo: toolchain
	DEMO_HOLDERS="$(DEMO_HOLDERS)" bash demo/run.sh

demo-embedded: toolchain
	$(CARGO) run --release -q -p leasehold-bench --bin demo

test: lint rust-test $(BINDING_TESTS) coverage

lint: fmt-check clippy

fmt-check: toolchain
	$(CARGO) fmt --all -- --check

clippy: toolchain
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings
	$(CARGO) clippy -p leasehold-ffi --all-targets --features testing --locked -- -D warnings

rust-test: etcd
	$(CARGO) test --workspace --locked $(RUST_TEST_EXCLUDE)

coverage:
	@if [ -x $(COVERAGE) ]; then $(COVERAGE) | tail -n 5; else echo "no $(COVERAGE): coverage not checked"; fi

bench: bench-embedded bench-compare bench-ids

bench-embedded:
	$(CARGO) bench -p leasehold-bench --bench embedded
	$(CARGO) run --release -q -p leasehold-bench --bin lease_memory

# The ID generator on the embedded and the server store, next to Redis INCR
# and etcd revisions as ID sources (docs/ids.md).
bench-ids: etcd protoc
	@command -v redis-server >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }
	$(CARGO) build --release -p leasehold-server
	$(CARGO) run --release -q -p leasehold-bench --features compare --bin ids

# Leasehold's server store vs etcd and Redis on this machine (docs/benchmarks.md).
# Installs etcd, Redis and protoc (etcd-client's build needs it) when missing.
bench-compare: etcd protoc
	@command -v redis-server >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server; }
	$(CARGO) build --release -p leasehold-server
	$(CARGO) run --release -q -p leasehold-bench --features compare --bin compare
