# What would be published, built into dist/ (packaging/, docs/packaging.md).
# Included by the root Makefile.
#   make dist       one version for everything (packaging/version.sh), the
#                   native parts built once with the `dist` profile:
#                   dist/python  an abi3 wheel for this platform and an sdist
#                   dist/node    the npm package and its linux-x64-gnu addon package
#                   dist/go      the Go module as a module proxy (GOPROXY=file://…),
#                                its zip carrying the static library
#                   dist/server  the leasehold binary as a tarball, and a Debian
#                                package with a systemd unit
#                   dist/jvm     the jar (native library inside) and a Maven
#                                repository holding it with its pom
#   make dist-test  installs each artifact as a user would, in a fresh folder
#                   with no Rust toolchain on PATH, and runs the README's
#                   example in each language against the packaged server

DIST := $(CURDIR)/dist
DIST_PARTS := server python node go jvm
DIST_ENV = DIST=$(DIST) VERSION=$$(packaging/version.sh) CARGO="$(CARGO)" CARGO_TARGET_DIR=$(CARGO_TARGET_DIR)

TEST_STEPS += dist-test

# maturin and auditwheel, which packaging/python.sh builds and checks the
# wheel with, in a virtual environment of their own: `make setup`'s; and a
# wheelhouse with maturin's wheel, the build backend pip's isolated build of
# the sdist installs (packaging/consumer/sdist.sh), so that it asks no index.
PACKAGING_TOOLS := $(CARGO_TARGET_DIR)/packaging/python-tools
PACKAGING_REQUIREMENTS := bindings-python/requirements-packaging.txt
SETUP += $(PACKAGING_TOOLS)/requirements.txt
$(PACKAGING_TOOLS)/requirements.txt: $(PACKAGING_REQUIREMENTS)
	rm -rf $(PACKAGING_TOOLS)
	python3 -m venv $(PACKAGING_TOOLS)
	$(PACKAGING_TOOLS)/bin/pip install -q --disable-pip-version-check -r $<
	$(PACKAGING_TOOLS)/bin/pip download -q --disable-pip-version-check --only-binary :all: \
		-d $(PACKAGING_TOOLS)/wheelhouse $$(grep '^maturin==' $<)
	cp $< $@


.PHONY: dist dist-test $(addprefix dist-,$(DIST_PARTS))

dist: setup
	@$(MAKE) --no-print-directory $(addprefix dist-,$(DIST_PARTS))
	@packaging/sizes.sh $(DIST)

$(addprefix dist-,$(DIST_PARTS)): dist-%: go-toolchain
	packaging/version.sh >/dev/null
	$(DIST_ENV) bash packaging/$*.sh

# The server, the Go module's static library and the jar's library in one
# cargo invocation, so that their dependencies build once: built one by one,
# each with its own unified features (and the static library with its own
# LTO), tokio, the etcd client and the core were built three times over. The
# Python and Node parts are built by their from-source builds (maturin, the
# npm install script) with the same profile, so after `make test`'s installs
# `make dist` finds them built.
.PHONY: dist-native
dist-server dist-go dist-jvm: dist-native
dist-native:
	$(CARGO) build --locked --profile dist -p leasehold-server -p leasehold-ffi -p leasehold-jvm

dist-test: dist
	$(DIST_ENV) bash packaging/consumer/sdist.sh
	$(DIST_ENV) bash packaging/consumer/run.sh
