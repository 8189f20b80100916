# The etcd store (core feature `etcd`, tests in etcd-tests/): docs/etcd.md.
# Included by the root Makefile.
#   make etcd   etcd 3.6 built once from the Go module proxy (tools/etcd-server,
#               whose go.mod pins the version), Debian's etcd-server 3.4, and
#               protoc, which etcd-client's build needs
#   make etcd-cluster   the 3-member cluster the bindings' fault tests drive
#               through stdin (etcd-tests/src/bin/etcd-cluster.rs)

GO ?= go
ETCD := $(CARGO_TARGET_DIR)/etcd/etcd
# The etcd binaries the tests start (etcd-tests/src/lib.rs).
export LEASEHOLD_ETCD := $(abspath $(ETCD))
export LEASEHOLD_ETCD_34 := /usr/bin/etcd
# The cluster the bindings' tests of a member's death start.
export LEASEHOLD_ETCD_CLUSTER := $(CARGO_TARGET_DIR)/debug/etcd-cluster

.PHONY: etcd protoc etcd-debian etcd-cluster

etcd: $(ETCD) etcd-debian

$(ETCD): tools/etcd-server/go.mod tools/etcd-server/go.sum tools/etcd-server/main.go
	cd tools/etcd-server && $(GO) build -trimpath -o $(LEASEHOLD_ETCD) .

etcd-debian:
	@test -x $(LEASEHOLD_ETCD_34) || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq etcd-server; }
	@# Debian starts a system etcd on 2379 when it installs one; the tests use their own.
	@-systemctl disable --now etcd >/dev/null 2>&1 || true

etcd-cluster: etcd protoc
	$(CARGO) build --locked -p etcd-tests --bin etcd-cluster

protoc:
	@command -v protoc >/dev/null 2>&1 || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq protobuf-compiler; }

# The demo's holders in every language on a 3-member etcd cluster, whose
# leader is killed halfway through (demo/run.sh, DEMO_STORE=etcd).
.PHONY: demo-etcd
demo-etcd: toolchain etcd
	DEMO_STORE=etcd DEMO_SECONDS=$${DEMO_SECONDS:-8} DEMO_HOLDERS="$(DEMO_HOLDERS)" bash demo/run.sh
