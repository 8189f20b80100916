# matplotlib, for the charts written next to the benchmarks' tables and the
# demo's timeline (demo/timeline.py): a virtual environment of its own.
#   make plots-test   the demo on the server store for 2 s, its timeline drawn
#                     and checked (no two holds of a key overlap)

PLOT_VENV := $(CARGO_TARGET_DIR)/plots/venv
PLOT_PY := $(PLOT_VENV)/bin/python
PLOT_READY := $(PLOT_VENV)/.installed
export LEASEHOLD_PLOT_PYTHON := $(abspath $(PLOT_PY))

SETUP += $(PLOT_READY)

$(PLOT_READY): tools/plots/requirements.txt
	$(PYTHON) -m venv $(PLOT_VENV)
	$(PLOT_PY) -m pip install -q --disable-pip-version-check -r $<
	touch $@
