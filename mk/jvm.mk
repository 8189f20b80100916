# The JVM binding (bindings-jvm/, Maven artifact dev.leasehold:leasehold,
# crate leasehold-jvm): docs/jvm.md. Included by the root Makefile.
#   make jvm-lib    the native library with the test hooks (feature `testing`)
#                   and the Kotlin uniffi generates from it, under target/jvm/testing
#   make jvm-test   Kotlin and Java compiled with warnings as errors, then JUnit
#                   on the embedded store, a server store and etcd (mvn -B test)
#   make demo-holder-jvm  the Kotlin holder of `make demo`
#   make bench-jvm  JMH: the hold cycle through Kotlin and Java next to Rust, IDs next
#                   to CosId, cycles a second next to Redisson (target/bench-jvm.md)

MVN ?= mvn
JVM_DIR := bindings-jvm
JVM_OUT := $(CARGO_TARGET_DIR)/jvm
# uniffi's bindgen, a workspace of its own (tools/uniffi-bindgen).
UNIFFI_BINDGEN := $(CARGO_TARGET_DIR)/debug/uniffi-bindgen
# -q: Maven's own chatter off; the Kotlin daemon off (it would stay up with 1.5 GB).
MVN_FLAGS := -B -q -Dkotlin.compiler.daemon=false -Dstyle.color=never
JVM_SOURCES := $(JVM_DIR)/Cargo.toml $(JVM_DIR)/uniffi.toml $(shell find $(JVM_DIR)/src -name '*.rs') $(shell find core/src bridge/src -name '*.rs')

TEST_STEPS += jvm-test
DEMO_HOLDERS += jvm

.PHONY: jvm-lib jvm-test bench-jvm demo-holder-jvm

# One build for the tests and `make dist` (packaging/jvm.sh): make test's
# two lanes may ask at once, and cargo's lock on the target directory lets
# the second find it built.
dist-jvm: $(UNIFFI_BINDGEN)
$(UNIFFI_BINDGEN): tools/uniffi-bindgen/Cargo.toml tools/uniffi-bindgen/Cargo.lock tools/uniffi-bindgen/src/main.rs
	cd tools/uniffi-bindgen && $(CARGO) build --locked

# $(1): the folder under target/jvm; $(2): the native library; the generated
# Kotlin goes to $(1)/generated, written afresh.
define jvm_generate
	rm -rf $(JVM_OUT)/$(1)/generated
	$(UNIFFI_BINDGEN) generate --no-format --language kotlin --out-dir $(JVM_OUT)/$(1)/generated $(2)
endef

# The Kotlin is written again only when the library changed (a stamp in
# its folder), so that the demo's holder starts at once.
JVM_TEST_LIB := $(CARGO_TARGET_DIR)/debug/libleasehold_jvm.so
JVM_GENERATED := $(JVM_OUT)/testing/generated/.from-library
jvm-lib: $(UNIFFI_BINDGEN)
	$(CARGO) build -q $(RUST_DEBUG)
	@$(MAKE) -s $(JVM_GENERATED)

$(JVM_GENERATED): $(JVM_TEST_LIB)
	$(call jvm_generate,testing,$(JVM_TEST_LIB))
	touch $@

# The tests load the library from target/debug (jna.library.path); the
# server-store tests start target/debug/leasehold, the etcd ones
# $(LEASEHOLD_ETCD), the etcd fault tests $(LEASEHOLD_ETCD_CLUSTER) (both
# exported by mk/etcd.mk). RUST_BACKTRACE unset: the panic test's panic prints one line.
# The same Maven run writes the test classpath the demo's holder and the
# benchmark run with (JVM_CLASSPATH, below), so that `make test`'s demo
# compiles nothing again.
jvm-test: etcd etcd-cluster jvm-lib
	$(CARGO) build -q $(RUST_DEBUG)
	cd $(JVM_DIR) && env -u RUST_BACKTRACE $(MVN) $(MVN_FLAGS) test dependency:build-classpath \
		-Dmdep.includeScope=test -Dmdep.outputFile=$(JVM_CLASSPATH) \
		-Dleasehold.generated=$(JVM_OUT)/testing/generated \
		-Dleasehold.libdir=$(CARGO_TARGET_DIR)/debug \
		-Dleasehold.bin=$(CARGO_TARGET_DIR)/debug/leasehold

# The test sources' programs (the demo holder, the bench) run with `java` on
# the compiled classes and this classpath, written when the sources change.
JVM_CLASSPATH := $(JVM_OUT)/test-classpath
$(JVM_CLASSPATH): $(JVM_SOURCES) $(JVM_DIR)/pom.xml $(shell find $(JVM_DIR)/src/main $(JVM_DIR)/src/test -type f) | jvm-lib
	cd $(JVM_DIR) && $(MVN) $(MVN_FLAGS) test-compile dependency:build-classpath \
		-Dleasehold.generated=$(JVM_OUT)/testing/generated \
		-Dmdep.includeScope=test -Dmdep.outputFile=$(JVM_CLASSPATH)
JVM_JAVA = java -cp $(JVM_OUT)/maven/classes:$(JVM_OUT)/maven/test-classes:$$(cat $(JVM_CLASSPATH))

demo-holder-jvm: jvm-lib $(JVM_CLASSPATH)
	@$(JVM_JAVA) -Djna.library.path=$(CARGO_TARGET_DIR)/debug dev.leasehold.demo.HolderKt

# The JMH benchmarks (bindings-jvm/src/test/.../bench) beside Rust's hold cycle
# (bench/src/bin/hold_cycle.rs), Redisson's RLock on a redis-server and CosId's
# SnowflakeId, in one run, release builds (the library with the test hooks:
# the bench is compiled with the tests, against the same generated Kotlin);
# tables on stdout and in target/bench-jvm.md, their charts beside it
# (bench/plots.py). BENCH_JVM_ARGS: the rounds (5).
bench-jvm: $(JVM_CLASSPATH)
	$(CARGO) build --release -p leasehold-server
	$(CARGO) build --release -p leasehold-bench --bin hold_cycle
	$(CARGO) build --release -p leasehold-jvm --features testing
	$(JVM_JAVA) -Djna.library.path=$(CARGO_TARGET_DIR)/release -Dleasehold.bin=$(CARGO_TARGET_DIR)/release/leasehold \
		-Dleasehold.repo=$(CURDIR) dev.leasehold.bench.JvmBenchKt $(BENCH_JVM_ARGS)
	$(PLOT_PY) bench/plots.py tables $(CARGO_TARGET_DIR)/bench-jvm.md
