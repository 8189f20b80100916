# Coverage-guided fuzzing (docs/fuzzing.md): cargo fuzz (libFuzzer) on the
# nightly toolchain, its own workspace in fuzz/, its build in
# $(CARGO_TARGET_DIR)/fuzz.
#   make fuzz FUZZ_SECONDS=N   each target N seconds (default 60), or only
#                              FUZZ_TARGETS=...; new inputs go to fuzz/corpus/
#   make fuzz-smoke            each target a few seconds from its seeds alone (make test),
#                              built without optimisations (--dev: half the build time
#                              of the optimised targets `make fuzz` runs)
#   make fuzz-seeds            rewrites the committed seeds (fuzz/seeds/)

FUZZ_TARGETS ?= frame_decoder connection scenario ffi_input
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 8
FUZZ_DIR := $(CARGO_TARGET_DIR)/fuzz
# Per input: at most 10 s and 2 GiB; -print_final_stats gives the count of executions.
FUZZ_FLAGS := -timeout=10 -rss_limit_mb=2048 -print_final_stats=1

# In make test's second lane, after the packaging build and its installs
# (tools/steps), where it would otherwise stand idle while the first lane's
# last steps run.
TEST_BESIDE += fuzz-smoke
SETUP += fuzz-tools

.PHONY: fuzz fuzz-smoke fuzz-tools fuzz-build fuzz-smoke-build fuzz-seeds

# The nightly toolchain and cargo-fuzz (into the normal cargo bin), when missing.
fuzz-tools:
	@$(CARGO) +nightly --version >/dev/null 2>&1 || rustup toolchain install nightly --profile minimal
	@command -v cargo-fuzz >/dev/null 2>&1 || $(CARGO) install --locked cargo-fuzz

fuzz-build:
	cd fuzz && $(CARGO) +nightly fuzz build --target-dir $(FUZZ_DIR)

fuzz-smoke-build:
	cd fuzz && $(CARGO) +nightly fuzz build --dev --target-dir $(FUZZ_DIR)

# run_fuzz(target, seconds, corpus, build flags): runs one target over the
# corpus folder (new inputs go there) and its seeds, its log in
# $(FUZZ_DIR)/logs/, and prints how many inputs it ran.
define run_fuzz
mkdir -p $(3) $(FUZZ_DIR)/logs && \
( cd fuzz && $(CARGO) +nightly fuzz run $(4) --target-dir $(FUZZ_DIR) $(1) $(3) seeds/$(1) -- \
	$(FUZZ_FLAGS) -max_total_time=$(2) ) > $(FUZZ_DIR)/logs/$(1).log 2>&1 \
	|| { tail -n 60 $(FUZZ_DIR)/logs/$(1).log; echo "fuzz target $(1) failed (crash inputs in fuzz/artifacts/$(1)/)"; exit 1; }; \
echo "$(1): $$(grep -h 'stat::number_of_executed_units' $(FUZZ_DIR)/logs/$(1).log | awk '{print $$2}') executions in $(2) s"
endef

fuzz: fuzz-build
	@$(foreach t,$(FUZZ_TARGETS),$(call run_fuzz,$(t),$(FUZZ_SECONDS),$(CURDIR)/fuzz/corpus/$(t)) &&) true

# From the seeds alone, in a corpus of its own started afresh: every seed
# runs first, then libFuzzer mutates them for the rest of the time.
fuzz-smoke: fuzz-smoke-build
	@rm -rf $(FUZZ_DIR)/smoke-corpus
	@$(foreach t,$(FUZZ_TARGETS),$(call run_fuzz,$(t),$(FUZZ_SMOKE_SECONDS),$(FUZZ_DIR)/smoke-corpus/$(t),--dev) &&) true

fuzz-seeds:
	LEASEHOLD_FUZZ_SEEDS=write $(CARGO) test -p leasehold-server --test fuzz_seeds
