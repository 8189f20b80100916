# A real PostgreSQL for the fenced-write recipe (docs/fencing.md) and
# anything else that needs one (the chaos harness). Included by the root Makefile.
#   make postgres       starts (Debian's `postgresql`, which `make setup` installs
#                       with `pgbouncer` for the pooler test)
#                       a throwaway cluster owned by the build, or finds it
#                       running (a second `make postgres` does nothing more):
#                         $(CARGO_TARGET_DIR)/postgres/url   the libpq URL to use,
#                             postgres://leasehold@127.0.0.1:PORT/leasehold
#                         $(CARGO_TARGET_DIR)/postgres/port  PORT: the last start's,
#                             or a free one when that is taken (read it each time)
#                         $(CARGO_TARGET_DIR)/postgres/data  the cluster (initdb)
#                         $(CARGO_TARGET_DIR)/postgres/log   the server's log
#                         $(CARGO_TARGET_DIR)/postgres/run   its unix socket
#                       It listens on 127.0.0.1 only, trusts every connection
#                       there (role `leasehold` owns database `leasehold`; the
#                       superuser is `postgres`), runs with fsync off, and as
#                       root runs as the OS user postgres (PG_OS_USER).
#                       Recipes that use it read the url file; the tests read
#                       LEASEHOLD_POSTGRES_URL, which this file exports.
#   make postgres-stop  stops it (the data stays; `make postgres` starts it again)
#   make fencing-test   the Rust fenced-write helper (fencing-postgres/) against
#                       it; `make rust-test` runs it too, python-test and
#                       node-test run their languages' helpers' tests
#   make fencing-go-test  the Go helper's tests (in `make test`)
#   make demo-postgres  the demo's holders (every language) on a PostgreSQL of
#                       the demo's own, killed and started again halfway through
# Every test that writes to it has `postgres` as a prerequisite.

PG_DIR := $(CARGO_TARGET_DIR)/postgres
PG_OS_USER ?= postgres
PG_CLUSTER := PG_DIR=$(PG_DIR) PG_OS_USER=$(PG_OS_USER) bash tools/postgres/cluster.sh
# The URL the tests connect to, read when a recipe runs (after `postgres` wrote it).
export LEASEHOLD_POSTGRES_URL = $(shell cat $(PG_DIR)/url 2>/dev/null)

APT_PACKAGES += postgresql pgbouncer

.PHONY: postgres postgres-stop fencing-test demo-postgres

# The tests that write to it start it first.
rust-test python-test node-test go-test jvm-test: postgres

postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { echo "no PostgreSQL: run make setup"; exit 1; }
	@$(PG_CLUSTER) start

postgres-stop:
	@$(PG_CLUSTER) stop

fencing-test: postgres
	$(CARGO) test --locked -p leasehold-postgres

# The Go helper's tests are a module of their own (bindings-go/fencing/pgtest),
# so that the published module needs no PostgreSQL driver; `go-test` does not reach them.
TEST_STEPS += fencing-go-test
.PHONY: fencing-go-test
fencing-go-test: postgres go-toolchain go-lib
	cd $(GO_DIR)/fencing/pgtest && $(GO) vet ./... && \
		GODEBUG=cgocheck=1 CARGO_TARGET_DIR=$(CARGO_TARGET_DIR) $(GO) test -race -count=1 ./...

# The demo on PostgreSQL (demo/run.sh, DEMO_STORE=postgres).
demo-postgres: setup
	DEMO_STORE=postgres DEMO_SECONDS=$${DEMO_SECONDS:-8} DEMO_HOLDERS="$(DEMO_HOLDERS)" bash demo/run.sh
