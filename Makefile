# Leasehold: the commands the README gives.
#   make demo   the main job: holders contending for keys, fences printed
#   make test   formatting, lints and every test
#   make bench  the benchmarks (numbers go in docs/benchmarks.md)

CARGO ?= cargo
export CARGO_TARGET_DIR ?= $(CURDIR)/target
COVERAGE := ../shared/tools/contract-coverage

.PHONY: all demo test lint fmt-check clippy rust-test coverage bench bench-embedded toolchain

all: test

toolchain:
	@$(CARGO) fmt --version >/dev/null 2>&1 || rustup component add rustfmt
	@$(CARGO) clippy --version >/dev/null 2>&1 || rustup component add clippy

demo: toolchain
	$(CARGO) run --release -q -p leasehold-bench --bin demo

test: lint rust-test coverage

lint: fmt-check clippy

fmt-check: toolchain
	$(CARGO) fmt --all -- --check

clippy: toolchain
	$(CARGO) clippy --workspace --all-targets --locked -- -D warnings

rust-test:
	$(CARGO) test --workspace --locked

coverage:
	@if [ -x $(COVERAGE) ]; then $(COVERAGE) | tail -n 4; else echo "no $(COVERAGE): coverage not checked"; fi

bench: bench-embedded

bench-embedded:
	$(CARGO) bench -p leasehold-bench --bench embedded
	$(CARGO) run --release -q -p leasehold-bench --bin lease_memory
