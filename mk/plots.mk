# matplotlib, for the charts written next to the benchmarks' tables and the
# demo's timeline (demo/timeline.py): a virtual environment of its own.
#   make plots-test   the scripts linted and typed; the charts of the
#                     committed runs (docs/images/bench-compare.json and the
#                     bench-*.md tables) drawn again; the timeline's overlap
#                     check made to fail
# (`make demo-test`, the root Makefile's, draws a real run's timeline.)

PLOT_VENV := $(CARGO_TARGET_DIR)/plots/venv
PLOT_PY := $(PLOT_VENV)/bin/python
PLOT_READY := $(PLOT_VENV)/.installed
export LEASEHOLD_PLOT_PYTHON := $(abspath $(PLOT_PY))

SETUP += $(PLOT_READY)

$(PLOT_READY): tools/plots/requirements.txt
	$(PYTHON) -m venv $(PLOT_VENV)
	$(PLOT_PY) -m pip install -q --disable-pip-version-check -r $<
	touch $@

PLOT_SCRIPTS := demo/timeline.py bench/plots.py
PLOT_OUT := $(CARGO_TARGET_DIR)/plots-test
# The committed runs' Markdown tables, each drawn beside it in docs/images.
COMMITTED_TABLES := $(wildcard docs/images/bench-*.md)

.PHONY: plots-test
plots-test: $(PLOT_READY)
	$(PY_VENV)/bin/ruff format --line-length 100 --check $(PLOT_SCRIPTS)
	$(PY_VENV)/bin/ruff check $(PLOT_SCRIPTS)
	$(PY_VENV)/bin/mypy --strict --python-executable $(PLOT_PY) $(PLOT_SCRIPTS)
	rm -rf $(PLOT_OUT) && mkdir -p $(PLOT_OUT)
	cp docs/images/bench-compare.json $(PLOT_OUT)/
	$(PLOT_PY) bench/plots.py compare $(PLOT_OUT)/bench-compare.json
	cp $(COMMITTED_TABLES) $(PLOT_OUT)/
	for t in $(notdir $(COMMITTED_TABLES)); do $(PLOT_PY) bench/plots.py tables $(PLOT_OUT)/$$t || exit 1; done
	@printf '%s\n' '[rust-1] holds summaries/k fence=1 waited=0ms at=1000' '[go-1] holds summaries/k fence=2 waited=0ms at=1010' \
		'[rust-1] done summaries/k fence=1 at=1020' '[go-1] done summaries/k fence=2 at=1030' >$(PLOT_OUT)/overlap.holds
	@! $(PLOT_PY) demo/timeline.py $(PLOT_OUT)/overlap.holds $(PLOT_OUT)/overlap.svg >/dev/null 2>&1 || \
		{ echo "demo/timeline.py did not refuse two holds of one key at once"; exit 1; }
