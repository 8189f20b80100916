# The live page (`leasehold serve --http`, docs/live.md) in a real browser:
# Debian's chromium driven by playwright-core (ui/), a real server, holders
# in Node and Python; `leasehold ui` against etcd and PostgreSQL. Included
# after node.mk and python.mk, whose addon and installed package it uses.
#   make ui-test     the page's test; its screenshot: $(CARGO_TARGET_DIR)/live-page.png
#   make bench-live  what the page costs a server with 100,000 held keys and
#                    1,000 grants a second: $(CARGO_TARGET_DIR)/live-load.md

UI_DIR := ui
UI_DEV := $(UI_DIR)/node_modules/.installed

APT_PACKAGES += chromium
TEST_AFTER_DIST += ui-test
SETUP += $(UI_DEV)

.PHONY: ui-test bench-live

# playwright-core as locked (it drives the chromium Debian installs; no
# browser is downloaded): `make setup`'s, again when the lock changes.
$(UI_DEV): $(UI_DIR)/package-lock.json
	cd $(UI_DIR) && $(NPM) ci $(NPM_FLAGS)
	touch $@

# The test and the page's own files, formatted as the Node binding's are.
UI_FORMATTED := $(UI_DIR)/*.mjs server/src/live/page/*.js server/src/live/page/*.css server/src/live/page/*.html

ui-test: etcd postgres $(NODE_ADDON) python-wheel-install
	@test -f $(UI_DEV) || { echo "no $(UI_DIR)/node_modules: run make setup"; exit 1; }
	$(NODE_DIR)/node_modules/.bin/prettier --config $(UI_DIR)/.prettierrc.json --check $(UI_FORMATTED)
	$(CARGO) build -q $(RUST_DEBUG)
	cd $(UI_DIR) && CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) CHROMIUM=/usr/bin/chromium $(NODE) --test live_page.test.mjs
	@ls -l $(CARGO_TARGET_DIR)/live-page.png

bench-live:
	@test -f $(UI_DEV) || { echo "no $(UI_DIR)/node_modules: run make setup"; exit 1; }
	$(CARGO) build --release -q -p leasehold-server -p leasehold-bench --bin leasehold --bin live_load
	cd $(UI_DIR) && CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) CHROMIUM=/usr/bin/chromium $(NODE) live_load.mjs
