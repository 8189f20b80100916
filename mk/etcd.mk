# The etcd store (core feature `etcd`, tests in etcd-tests/): docs/etcd.md.
# Included by the root Makefile.
#   make etcd   etcd 3.6 built once from the Go module proxy (tools/etcd-server,
#               whose go.mod pins the version; `make setup` builds it), and a
#               check that Debian's etcd-server 3.4 is there (`make setup`
#               installs it); etcd-client's protos are compiled by protox, so
#               no build needs protoc (third_party/etcd-client/PATCHED.md)
#   make etcd-cluster   the 3-member cluster the bindings' fault tests drive
#               through stdin (etcd-tests/src/bin/etcd-cluster.rs)

GO ?= go
ETCD := $(CARGO_TARGET_DIR)/etcd/etcd
# The etcd binaries the tests start (etcd-tests/src/lib.rs).
export LEASEHOLD_ETCD := $(abspath $(ETCD))
export LEASEHOLD_ETCD_34 := /usr/bin/etcd
# The cluster the bindings' tests of a member's death start.
export LEASEHOLD_ETCD_CLUSTER := $(CARGO_TARGET_DIR)/debug/etcd-cluster

APT_PACKAGES += etcd-server
SETUP += $(ETCD)

.PHONY: etcd etcd-cluster

etcd: $(ETCD)
	@test -x $(LEASEHOLD_ETCD_34) || { echo "no etcd 3.4 at $(LEASEHOLD_ETCD_34): run make setup"; exit 1; }

$(ETCD): tools/etcd-server/go.mod tools/etcd-server/go.sum tools/etcd-server/main.go
	cd tools/etcd-server && $(GO) build -trimpath -o $(LEASEHOLD_ETCD) .

etcd-cluster: etcd
	$(CARGO) build --locked -p etcd-tests --bin etcd-cluster

# The demo's holders in every language on a 3-member etcd cluster, whose
# leader is killed halfway through (demo/run.sh, DEMO_STORE=etcd).
.PHONY: demo-etcd
demo-etcd: setup
	DEMO_STORE=etcd DEMO_SECONDS=$${DEMO_SECONDS:-8} DEMO_HOLDERS="$(DEMO_HOLDERS)" bash demo/run.sh
