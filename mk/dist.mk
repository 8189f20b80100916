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

BINDING_TESTS += dist-test


.PHONY: dist dist-test $(addprefix dist-,$(DIST_PARTS))

dist: $(addprefix dist-,$(DIST_PARTS))
	@packaging/sizes.sh $(DIST)

$(addprefix dist-,$(DIST_PARTS)): dist-%: protoc go-toolchain
	packaging/version.sh >/dev/null
	$(DIST_ENV) bash packaging/$*.sh

dist-test: dist
	$(DIST_ENV) bash packaging/consumer/run.sh
