# The chaos harness of issue #13 (chaos/, crate leasehold-chaos): holders
# contending for a few keys of a real store through a fault proxy while a
# scheduler injects faults at random from a seed; then the checker of their
# histories (docs/chaos.md). Included by the root Makefile.
#   make chaos        CHAOS_STORE=server, etcd (a 3-member cluster of `make etcd`'s etcd)
#                     or postgres (a PostgreSQL server of the run's own),
#                     CHAOS_SECONDS=300, CHAOS_SEED=1, CHAOS_PYTHON_HOLDERS=2
#                     (Python holders beside the Rust ones), CHAOS_GO_HOLDERS=2
#                     (Go holders, bindings-go/cmd/chaos-holder), CHAOS_NODE_HOLDERS=2
#                     (Node holders, chaos/holders/holder.js), CHAOS_ARGS=… (more
#                     `leasehold-chaos run` flags: --holders, --keys, --faults,
#                     --fault-every-ms, …); release builds; the histories stay in
#                     $(CARGO_TARGET_DIR)/chaos/STORE-SEED/histories
#   make chaos-smoke  about a minute on the server store at a fixed seed, every
#                     fault kind, a few thousand operations (debug builds, as
#                     `make test` has them); run by `make test`

CHAOS_STORE ?= server
CHAOS_SECONDS ?= 300
CHAOS_SEED ?= 1
CHAOS_PYTHON_HOLDERS ?= 2
CHAOS_GO_HOLDERS ?= 2
CHAOS_NODE_HOLDERS ?= 2
CHAOS_ARGS ?=
CHAOS_GO_HOLDER := $(CARGO_TARGET_DIR)/go/chaos-holder
CHAOS_OTHERS = --python $(PY) --go-holder $(CHAOS_GO_HOLDER) --node $(NODE) \
	--postgres $(LEASEHOLD_POSTGRES_URL)
# The other languages' holders need their bindings built (the Node addon's
# rule is in node.mk, and the Node holders' pg is among the package's dev
# dependencies, which `make setup` installs); the Rust and Node holders write
# their fences to `make postgres`'s.
CHAOS_HOLDERS_BUILT := python-wheel-install chaos-go-holder bindings-node/leasehold.node postgres
CHAOS_SMOKE_SEED := 13

TEST_AFTER_DIST += chaos-smoke

.PHONY: chaos chaos-smoke chaos-go-holder

# The Go holder, linked with the library `make go-lib` builds.
chaos-go-holder: go-lib
	cd bindings-go && $(GO) build -o $(CHAOS_GO_HOLDER) ./cmd/chaos-holder

chaos: $(CHAOS_HOLDERS_BUILT) etcd
	$(CARGO) build --release --locked -p leasehold-server -p leasehold-chaos
	$(CARGO_TARGET_DIR)/release/leasehold-chaos run --store $(CHAOS_STORE) \
		--seconds $(CHAOS_SECONDS) --seed $(CHAOS_SEED) \
		--python-holders $(CHAOS_PYTHON_HOLDERS) --go-holders $(CHAOS_GO_HOLDERS) \
		--node-holders $(CHAOS_NODE_HOLDERS) \
		$(CHAOS_OTHERS) $(CHAOS_ARGS)

# The smoke run, from the debug build (also one of `make test-repeat`'s suites).
CHAOS_SMOKE_RUN = $(CARGO_TARGET_DIR)/debug/leasehold-chaos run --store server --seconds 50 \
	--seed $(CHAOS_SMOKE_SEED) --fault-every-ms 1000 --python-holders 2 --go-holders 2 \
	--node-holders 2 $(CHAOS_OTHERS)

chaos-smoke: $(CHAOS_HOLDERS_BUILT)
	$(CARGO) build -q $(RUST_DEBUG)
	$(CHAOS_SMOKE_RUN)
