# The Node binding (bindings-node/, npm package `leasehold`, crate
# leasehold-node): docs/node.md. Included by the root Makefile.
#   make node-test         installs the package as a developer does, from source
#                          (LEASEHOLD_BUILD_FROM_SOURCE=1 npm install ./bindings-node,
#                          whose install script builds the addon with cargo),
#                          prettier, tsc (the JS layer and a typed usage example),
#                          node --test on the embedded and the server store
#   make check-node        `make check`'s: prettier, tsc, then node --test on a debug
#                          build of the addon (no install, no etcd, no PostgreSQL)
#   make demo-holder-node  the Node holder of `make demo`
#   make bench-node        the hold cycle through Node next to Rust, with the ratio
#   make bench-node-ids    the ID generator's nextNow() and takeNow() through Node
#                          next to Rust's next() and next_into(), with the ratio

NPM ?= npm
NODE ?= node
NODE_DIR := bindings-node
NODE_ADDON := $(NODE_DIR)/leasehold.node
# A scratch project that installs the package from its folder, as a developer does.
NODE_SCRATCH := $(CARGO_TARGET_DIR)/node-install
NPM_FLAGS := --no-audit --no-fund
# The install script builds the addon only when asked (docs/node.md, "Install").
FROM_SOURCE := LEASEHOLD_BUILD_FROM_SOURCE=1

TEST_STEPS += node-test
CHECK_STEPS += check-node
NODE_DEV := $(NODE_DIR)/node_modules/.installed
SETUP += $(NODE_DEV)
DEMO_HOLDERS += node

.PHONY: node-test node-install node-lint check-node demo-holder-node bench-node bench-node-ids

# `npm install ./bindings-node` in a scratch project, asked to build from
# source: the package's install script builds the addon with cargo (sharing
# CARGO_TARGET_DIR), then the installed package is loaded and holds a key (the addon is removed
# first, so that only the install script can have made it).
node-install:
	rm -rf $(NODE_SCRATCH) $(NODE_ADDON) && mkdir -p $(NODE_SCRATCH)
	cd $(NODE_SCRATCH) && $(NPM) init -y >/dev/null && $(FROM_SOURCE) $(NPM) install $(NPM_FLAGS) $(CURDIR)/$(NODE_DIR)
	cd $(NODE_SCRATCH) && $(NODE) -e "require('leasehold').memory().lock('smoke').hold('k', (l) => l.fence).then((f) => console.log('installed leasehold holds a key, fence', f))"

# The package's own dev tools (typescript, prettier, @types/node, pg), as
# locked: `make setup`'s, again when the lock changes.
$(NODE_DEV): $(NODE_DIR)/package-lock.json
	cd $(NODE_DIR) && $(NPM) ci $(NPM_FLAGS) --ignore-scripts
	touch $@

node-lint:
	@test -f $(NODE_DEV) || { echo "no $(NODE_DIR)/node_modules: run make setup"; exit 1; }
	cd $(NODE_DIR) && npx prettier --check . && npx tsc -p tsconfig.json

# The etcd fault tests start etcd-cluster ($LEASEHOLD_ETCD_CLUSTER, exported by mk/etcd.mk).
node-test: etcd etcd-cluster node-install node-lint
	$(CARGO) build -q $(RUST_DEBUG)
	cd $(NODE_DIR) && RUST_BACKTRACE=0 CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(NODE) --test test/*.test.mjs

# The addon, rebuilt when the Rust sources change (the demo needs no npm packages).
$(NODE_ADDON): $(NODE_DIR)/Cargo.toml $(wildcard $(NODE_DIR)/src/*.rs) $(shell find core/src bridge/src -name '*.rs')
	cd $(NODE_DIR) && $(FROM_SOURCE) $(NODE) scripts/build.js >&2

demo-holder-node: $(NODE_ADDON)
	@$(NODE) $(NODE_DIR)/demo/holder.js

bench-node:
	$(CARGO) build --release -p leasehold-server
	$(CARGO) build --release -p leasehold-bench --bin hold_cycle
	cd $(NODE_DIR) && $(FROM_SOURCE) $(NODE) scripts/build.js
	cd $(NODE_DIR) && $(NODE) bench/hold-cycle.mjs
	$(PLOT_PY) bench/plots.py tables $(CARGO_TARGET_DIR)/bench-node.md

bench-node-ids:
	$(CARGO) build --release -p leasehold-node --example ids_next
	cd $(NODE_DIR) && $(FROM_SOURCE) $(NODE) scripts/build.js
	cd $(NODE_DIR) && $(NODE) bench/ids.mjs
	$(PLOT_PY) bench/plots.py tables $(CARGO_TARGET_DIR)/bench-node-ids.md

# The addon from `make check`'s one debug build (CHECK_NATIVE, with the
# Python module and the server: one set of features, so the core builds
# once); the tests that need etcd or PostgreSQL are `make node-test`'s.
NODE_CHECK_IGNORED := etcd.test.mjs etcd-faults.test.mjs fencing.test.mjs postgres.test.mjs
check-node: node-lint
	$(CARGO) build --locked -q $(CHECK_NATIVE)
	cp $(CARGO_TARGET_DIR)/debug/libleasehold_node.so $(NODE_ADDON)
	cd $(NODE_DIR) && RUST_BACKTRACE=0 CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(NODE) --test \
		$(filter-out $(addprefix test/,$(NODE_CHECK_IGNORED)),$(patsubst $(NODE_DIR)/%,%,$(wildcard $(NODE_DIR)/test/*.test.mjs)))
