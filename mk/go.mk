# The C ABI (ffi/, crate leasehold-ffi) and the Go binding (bindings-go/,
# package locks): docs/go.md. Included by the root Makefile.
#   make go-test         header drift, C smoke test (plain and under valgrind),
#                        gofmt, go vet, go test -race with GODEBUG=cgocheck=1
#                        and the tag leasehold_testing (the test hooks)
#   make demo-holder-go  the Go holder of `make demo`
#   make bench-go        the hold cycle through Go next to Rust, with the ratio;
#                        the ID generator's Next and NextInto through Go

GO ?= go
GO_DIR := bindings-go
# Where link_static.go's #cgo flags look, as in the published module's zip.
GO_LIB_DIR = $(GO_DIR)/lib/$(shell $(GO) env GOOS)_$(shell $(GO) env GOARCH)
FFI_SMOKE := $(CARGO_TARGET_DIR)/ffi-smoke/smoke
FFI_NATIVE_LIBS := -lgcc_s -lutil -lrt -lpthread -lm -ldl
VALGRIND := valgrind --quiet --error-exitcode=1 --leak-check=full \
	--show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
	--suppressions=ffi/tests/c/valgrind.supp

TEST_STEPS += go-test
APT_PACKAGES += gcc libc6-dev valgrind
DEMO_HOLDERS += go

.PHONY: go-test go-toolchain go-lib ffi-header-check ffi-smoke go-lint demo-holder-go bench-go

# Go, a C compiler (cgo, the smoke test) and valgrind (`make setup` installs the last two).
go-toolchain:
	@$(GO) version >/dev/null
	@command -v cc >/dev/null 2>&1 || { echo "no C compiler: run make setup"; exit 1; }
	@command -v valgrind >/dev/null 2>&1 || { echo "no valgrind: run make setup"; exit 1; }

# The static library (debug, with the C ABI's test hooks: the feature
# `testing`) where the package's #cgo flags look, and the header beside the
# package's sources (the Go copy is written here, never by hand); the server
# the tests start.
go-lib: rust-debug
	mkdir -p $(GO_LIB_DIR)
	cp $(CARGO_TARGET_DIR)/debug/libleasehold_ffi.a $(GO_LIB_DIR)/
	cp ffi/include/leasehold.h $(GO_DIR)/locks/leasehold.h

# The committed header is cbindgen's output now (ffi/tests/header.rs).
ffi-header-check:
	$(CARGO) test -q $(RUST_CRATES) --test header

# The C smoke test, then again under valgrind: no leak, no error.
ffi-smoke: go-lib
	mkdir -p $(dir $(FFI_SMOKE))
	cc -std=gnu11 -Wall -Wextra -Werror -g -DLEASEHOLD_TESTING -I ffi/include ffi/tests/c/smoke.c \
		$(CARGO_TARGET_DIR)/debug/libleasehold_ffi.a $(FFI_NATIVE_LIBS) -o $(FFI_SMOKE)
	RUST_BACKTRACE=0 $(FFI_SMOKE) 2>/dev/null
	RUST_BACKTRACE=0 $(VALGRIND) $(FFI_SMOKE) 2>&1 | grep -v -e 'panicked at' -e 'lh_testing_panic was called' -e '^note: run with'; \
		exit $${PIPESTATUS[0]}

go-lint:
	@unformatted=$$(cd $(GO_DIR) && gofmt -l .); \
		if [ -n "$$unformatted" ]; then echo "gofmt: $$unformatted"; exit 1; fi
	cd $(GO_DIR) && $(GO) vet ./... && $(GO) vet -tags leasehold_testing ./...
	cd $(GO_DIR) && $(GO) run ./cmd/gencodes -check

go-test: SHELL := /bin/bash
# The etcd fault tests start etcd-cluster ($LEASEHOLD_ETCD_CLUSTER, exported by mk/etcd.mk).
go-test: etcd etcd-cluster go-toolchain ffi-header-check go-lib ffi-smoke go-lint
	cd $(GO_DIR) && GODEBUG=cgocheck=1 CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(GO) test -race -count=1 -tags leasehold_testing ./...

ffi-smoke: SHELL := /bin/bash

demo-holder-go: go-toolchain go-lib
	cd $(GO_DIR) && $(GO) build -o $(CARGO_TARGET_DIR)/go/demo-holder ./cmd/demo-holder
	$(CARGO_TARGET_DIR)/go/demo-holder

bench-go: go-toolchain
	$(CARGO) build --release -p leasehold-ffi -p leasehold-server
	$(CARGO) build --release -p leasehold-ffi --example ffi_hold_cycle
	mkdir -p $(GO_LIB_DIR)
	cp $(CARGO_TARGET_DIR)/release/libleasehold_ffi.a $(GO_LIB_DIR)/
	cp ffi/include/leasehold.h $(GO_DIR)/locks/leasehold.h
	CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(GO_DIR)/scripts/bench.sh
	$(PLOT_PY) bench/plots.py tables $(CARGO_TARGET_DIR)/bench-go.md
