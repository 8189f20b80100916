# The Python binding (bindings-python/, package `leasehold`, crate
# leasehold-python): docs/python.md. Included by the root Makefile.
#   make python-test         installs the package as a user would from an index
#                            (the x86_64 wheel `make dist` builds, into a virtual
#                            environment under the target dir), ruff, mypy --strict
#                            (the package, a typed usage example, the tests), stubtest
#                            (_native.pyi against the module), pytest on the
#                            embedded, a server and an etcd store
#   make python-install      installs it from the checkout (pip install ./bindings-python:
#                            maturin builds the native module), for the demo and bench
#   make check-python        `make check`'s: ruff, mypy, then pytest on a debug build of
#                            the native module (no install, no etcd, no PostgreSQL)
#   make demo-holder-python  the Python holder of `make demo`
#   make bench-python        the hold cycle through Python next to Rust, with the ratio;
#                            then the ID generator's calls next to the core's next()

PYTHON ?= python3
PY_DIR := bindings-python
PY_VENV := $(CARGO_TARGET_DIR)/python/venv
PY := $(PY_VENV)/bin/python
PY_TOOLS := $(PY_VENV)/.tools-installed
PY_INSTALLED := $(PY_VENV)/.leasehold-installed
PY_SOURCES := $(shell find $(PY_DIR)/src $(PY_DIR)/python core/src bridge/src -type f -not -name '*.pyc') \
	$(PY_DIR)/Cargo.toml $(PY_DIR)/pyproject.toml $(PY_DIR)/README.md
PY_CHECKED := python examples bench demo tests

TEST_AFTER_DIST += python-test
CHECK_STEPS += check-python
SETUP += $(PY_TOOLS)
DEMO_HOLDERS += python
# The crate has no Rust tests (its tests are the Python ones below).
RUST_TEST_EXCLUDE += --exclude leasehold-python

.PHONY: python-test python-install python-wheel-install python-lint check-python demo-holder-python bench-python

# A virtual environment with the tools (maturin, pytest, pytest-asyncio, mypy,
# ruff, uvloop for the benchmark) from PyPI: `make setup`'s.
$(PY_TOOLS): $(PY_DIR)/requirements-dev.txt
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
		{ echo "bindings-python needs Python 3.11 or later"; exit 1; }
	$(PYTHON) -m venv $(PY_VENV)
	$(PY) -m pip install -q --disable-pip-version-check -r $<
	touch $@

# The package installed as the README says: pip builds the wheel with maturin
# (the dist profile, pyproject.toml), the venv's own (no build isolation:
# nothing is fetched; its backend runs the `maturin` on PATH, so the venv's
# bin goes first).
$(PY_INSTALLED): $(PY_SOURCES)
	@test -x $(PY) || { echo "no $(PY_VENV): run make setup"; exit 1; }
	PATH="$(abspath $(PY_VENV))/bin:$$PATH" $(PY) -m pip install -q --disable-pip-version-check --no-build-isolation --force-reinstall ./$(PY_DIR)
	rm -f $(PY_WHEEL_INSTALLED)
	touch $@

python-install: $(PY_INSTALLED)

# What `make test` installs into the same venv instead (for python-test and
# the Python holders of the chaos smoke and the live page's test): the
# x86_64 wheel that `make dist` builds, as a user installs it from an index,
# so that the tests run the module that ships and no second release build of
# it is made. The build from the package's sources that `pip install
# ./bindings-python` makes (maturin, above) is the one `make dist-test`
# makes from the sdist (packaging/consumer/sdist.sh). Each install removes
# the other's mark.
PY_WHEEL = $(DIST)/python/leasehold-$(shell packaging/version.sh)-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl
PY_WHEEL_INSTALLED := $(PY_VENV)/.leasehold-wheel-installed
$(PY_WHEEL): $(PY_SOURCES)
	@$(MAKE) --no-print-directory dist-python
$(PY_WHEEL_INSTALLED): $(PY_WHEEL)
	@test -x $(PY) || { echo "no $(PY_VENV): run make setup"; exit 1; }
	$(PY) -m pip install -q --disable-pip-version-check --force-reinstall --no-deps --no-index $(PY_WHEEL)
	rm -f $(PY_INSTALLED)
	touch $@

python-wheel-install: $(PY_WHEEL_INSTALLED)

python-lint:
	cd $(PY_DIR) && $(PY_VENV)/bin/ruff format --check $(PY_CHECKED)
	cd $(PY_DIR) && $(PY_VENV)/bin/ruff check $(PY_CHECKED)
	cd $(PY_DIR) && MYPYPATH=tests $(PY_VENV)/bin/mypy --strict $(PY_CHECKED)

# The native module's stub (_native.pyi) against the module itself.
STUBTEST := $(PY) -m mypy.stubtest leasehold._native

# The tests start `leasehold serve` themselves, from the debug build, and the
# etcd fault tests etcd-cluster ($LEASEHOLD_ETCD_CLUSTER, exported by mk/etcd.mk).
python-test: etcd etcd-cluster python-wheel-install python-lint
	$(CARGO) build -q $(RUST_DEBUG)
	cd $(PY_DIR) && $(STUBTEST)
	cd $(PY_DIR) && CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(PY) -m pytest -q -p no:cacheprovider

# The holder runs the package as PY_HOLDER_INSTALL installs it: from the
# checkout, or, in `make test`'s demo, from the wheel the other steps installed.
PY_HOLDER_INSTALL ?= python-install
demo-holder-python: $(PY_HOLDER_INSTALL)
	@$(PY) $(PY_DIR)/demo/holder.py

# uvloop (in the venv) gives the benchmark's row of the same cycle on its event loop.
bench-python: python-install
	$(CARGO) build -q --release -p leasehold-server
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(PY) $(PY_DIR)/bench/bench_hold.py
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(PY) $(PY_DIR)/bench/bench_ids.py
	$(PLOT_PY) bench/plots.py tables $(CARGO_TARGET_DIR)/bench-python.md
	$(PLOT_PY) bench/plots.py tables $(CARGO_TARGET_DIR)/bench-python-ids.md

# The package as its sources are, with the debug native module beside them
# (in $(PY_DEV), first on PYTHONPATH, so it wins over the installed one);
# the tests that need etcd or PostgreSQL are `make python-test`'s.
PY_DEV := $(CARGO_TARGET_DIR)/python/dev
PY_CHECK_IGNORED := tests/test_etcd.py tests/test_etcd_faults.py tests/test_fencing.py tests/test_postgres.py
check-python: python-lint
	$(CARGO) build --locked -q $(CHECK_NATIVE)
	rm -rf $(PY_DEV) && mkdir -p $(PY_DEV)/leasehold
	ln -s $(CURDIR)/$(PY_DIR)/python/leasehold/*.py* $(CURDIR)/$(PY_DIR)/python/leasehold/py.typed $(PY_DEV)/leasehold/
	cp $(CARGO_TARGET_DIR)/debug/lib_native.so $(PY_DEV)/leasehold/_native.abi3.so
	cd $(PY_DIR) && PYTHONPATH=$(PY_DEV) $(STUBTEST)
	cd $(PY_DIR) && PYTHONPATH=$(PY_DEV) CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(PY) -m pytest -q -p no:cacheprovider \
		$(addprefix --ignore=,$(PY_CHECK_IGNORED))
