# mk/bench.mk - the core's in-process benchmark (tests/bench/bench_core.c):
# the same program built against the core sources with three capacity
# profiles, each its own binary (struct layouts depend on the limits).
#
#   make bench-core                      one table (figures, never pass/fail)
#   make bench-core BENCH_FILL_S=30      cap each table fill at 30 s of CPU
#
# This fragment is read before mk/core.mk and mk/net.mk, so it names the core
# sources itself and takes GW_FLAGS in a recipe (expanded when it runs).

BENCH_CORE_PROFILES := firmware default gateway
BENCH_CORE_SRCS := $(sort $(wildcard core/*.c)) tests/lib/panic_host.c
BENCH_CORE_DEPS := tests/bench/bench_core.c $(BENCH_CORE_SRCS) $(wildcard core/*.h) \
	boards/common/el_small_config.h cmd/edgelockd/el_gateway_config.h
BENCH_CORE_BINS := $(BENCH_CORE_PROFILES:%=$(BUILD)/bench/%/bench_core)
BENCH_FILL_S ?= 100

# The profiles' flags (recursive: GW_FLAGS comes from mk/net.mk).
BENCH_CORE_FLAGS_firmware = -include boards/common/el_small_config.h
BENCH_CORE_FLAGS_default =
BENCH_CORE_FLAGS_gateway = $(GW_FLAGS)

$(BUILD)/bench/%/bench_core: $(BENCH_CORE_DEPS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O2 $(BENCH_CORE_FLAGS_$*) -Icore -Itests/lib \
		tests/bench/bench_core.c $(BENCH_CORE_SRCS) -o $@

# Progress goes to the terminal as it runs; the table is printed at the end.
.PHONY: bench-core
bench-core: $(BENCH_CORE_BINS)
	@$(BUILD)/bench/firmware/bench_core firmware $(BENCH_FILL_S) --header >$(BUILD)/bench/core.txt
	@$(BUILD)/bench/default/bench_core default $(BENCH_FILL_S) >>$(BUILD)/bench/core.txt
	@$(BUILD)/bench/gateway/bench_core gateway $(BENCH_FILL_S) >>$(BUILD)/bench/core.txt
	@echo && cat $(BUILD)/bench/core.txt
BENCHES += bench-core

# `make bench`'s load generator (tests/bench/load/): a real 3-node edgelockd
# cluster over TLS on loopback, driven through libedgelock; the table on
# stdout, the figures in build/bench/edgelock.json. Knobs: BENCH_SECONDS,
# BENCH_FAILOVERS, BENCH_IDLE, BENCH_LOCKS, BENCH_ONLY, BENCH_PORT
# (tests/bench/load/README.md).
BENCH_LOAD := $(BUILD)/bench/bench_load
BENCH_LOAD_SRCS := $(filter-out tests/bench/load/peer_%.c,$(sort $(wildcard tests/bench/load/*.c)))
$(BENCH_LOAD): $(BENCH_LOAD_SRCS) tests/bench/load/bench.h $(BUILD)/lib/libedgelock.a
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(CLIENT_FLAGS) $(BENCH_LOAD_SRCS) $(BUILD)/lib/libedgelock.a $(CLIENT_LIBS) -o $@

.PHONY: bench-load
bench-load: $(BENCH_LOAD) $(BUILD)/bin/edgelockd $(BUILD)/bin/edgelock $(BUILD)/lib/libedgelock.so certs
	@$(BENCH_LOAD) $(BUILD) $(BUILD)/bench/edgelock.json
	@/usr/bin/python3 tests/bench/load/compare.py $(BUILD)/bench/edgelock.json
BENCHES += bench-load

# `make bench-compare`: the same workloads on etcd, ZooKeeper and Redis (the peers' packages come
# from tools/bench-packages.txt, installed by this target only), then one
# side-by-side table with ratios (tests/bench/load/compare.py).
BENCH_COMPARE := $(BUILD)/bench/bench_compare
BENCH_CMP_DIR := $(BUILD)/bench/compare
BENCH_PEER_SRCS := $(sort $(wildcard tests/bench/load/peer_*.c))
BENCH_CMP_OBJS := $(patsubst tests/bench/load/%.c,$(BENCH_CMP_DIR)/%.o,$(BENCH_LOAD_SRCS) $(BENCH_PEER_SRCS))

# etcd is driven over gRPC (tests/bench/load/peer_etcd.cc): C++ stubs that
# protoc and grpc_cpp_plugin generate from etcd's .proto files as Debian
# ships them (golang-etcd-server-dev), unedited; their imports come from
# Debian too (gogoproto: golang-github-gogo-protobuf-dev; google/api:
# grpc-gateway's copy of googleapis), and are compiled in because the
# generated descriptors name them. Generated and compiled once, under
# $(BUILD)/bench/etcd-grpc.
ETCD_GEN := $(BUILD)/bench/etcd-grpc
ETCD_GOCODE := /usr/share/gocode/src
ETCD_PROTO_PATH := -I$(ETCD_GOCODE)/go.etcd.io -I$(ETCD_GOCODE)/github.com/gogo/protobuf \
	-I$(ETCD_GOCODE)/github.com/grpc-ecosystem/grpc-gateway/third_party/googleapis -I/usr/include
ETCD_PROTOS := etcd/etcdserver/etcdserverpb/rpc etcd/etcdserver/api/v3lock/v3lockpb/v3lock \
	etcd/mvcc/mvccpb/kv etcd/auth/authpb/auth gogoproto/gogo google/api/annotations google/api/http
ETCD_SERVICES := etcd/etcdserver/etcdserverpb/rpc etcd/etcdserver/api/v3lock/v3lockpb/v3lock
ETCD_GEN_OBJS := $(ETCD_PROTOS:%=$(ETCD_GEN)/%.pb.o) $(ETCD_SERVICES:%=$(ETCD_GEN)/%.grpc.pb.o)
BENCH_CXXFLAGS = -std=c++17 $(OPT) $(shell pkg-config --cflags grpc++ protobuf 2>/dev/null)

$(ETCD_GEN)/.stamp:
	@mkdir -p $(@D)
	$(call say,PROTOC,$(ETCD_GEN))
	$(Q)protoc $(ETCD_PROTO_PATH) --cpp_out=$(ETCD_GEN) --grpc_out=$(ETCD_GEN) \
		--plugin=protoc-gen-grpc=$$(command -v grpc_cpp_plugin) $(ETCD_PROTOS:%=%.proto)
	@touch $@
$(ETCD_GEN)/%.pb.o: $(ETCD_GEN)/.stamp
	$(call say,CXX,$@)
	$(Q)$(CXX) $(BENCH_CXXFLAGS) -I$(ETCD_GEN) -c $(ETCD_GEN)/$*.pb.cc -o $@
$(BENCH_CMP_DIR)/peer_etcd.o: tests/bench/load/peer_etcd.cc tests/bench/load/bench.h $(ETCD_GEN)/.stamp
	@mkdir -p $(@D)
	$(call say,CXX,$@)
	$(Q)$(CXX) $(BENCH_CXXFLAGS) $(filter-out -Wstrict-prototypes,$(WARN)) -isystem $(ETCD_GEN) -Itests/bench/load -c $< -o $@
$(BENCH_CMP_DIR)/%.o: tests/bench/load/%.c tests/bench/load/bench.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(CLIENT_FLAGS) -DBENCH_PEERS -c $< -o $@

$(BENCH_COMPARE): $(BENCH_CMP_OBJS) $(BENCH_CMP_DIR)/peer_etcd.o $(ETCD_GEN_OBJS) $(BUILD)/lib/libedgelock.a
	$(call say,LD,$@)
	$(Q)$(CXX) $(BENCH_CMP_OBJS) $(BENCH_CMP_DIR)/peer_etcd.o $(ETCD_GEN_OBJS) \
		$(BUILD)/lib/libedgelock.a $(CLIENT_LIBS) -lhiredis -lzookeeper_mt \
		$$(pkg-config --libs grpc++ protobuf) -o $@

.PHONY: bench-compare bench-peers
bench-peers:
	@tools/deps.sh tools/bench-packages.txt
bench-compare: bench-peers
	@$(MAKE) --no-print-directory $(BENCH_COMPARE) $(BUILD)/bin/edgelockd $(BUILD)/bin/edgelock \
		$(BUILD)/lib/libedgelock.so certs
	@$(BENCH_COMPARE) $(BUILD) $(BUILD)/bench/edgelock.json edgelock
	@$(BENCH_COMPARE) $(BUILD) $(BUILD)/bench/redis.json redis
	@$(BENCH_COMPARE) $(BUILD) $(BUILD)/bench/zookeeper.json zookeeper
	@$(BENCH_COMPARE) $(BUILD) $(BUILD)/bench/etcd.json etcd
	@/usr/bin/python3 tests/bench/load/compare.py $(BUILD)/bench/edgelock.json \
		$(BUILD)/bench/etcd.json $(BUILD)/bench/zookeeper.json $(BUILD)/bench/redis.json

# `make test`'s smoke run of the load generator (about 10 s): a one-second
# uncontended run; checks the output is well formed, never the speed.
.PHONY: test-bench-smoke
test-bench-smoke: $(BENCH_LOAD) $(BUILD)/bin/edgelockd certs
	@tests/run-suite.sh $(BUILD)/results bench-smoke /usr/bin/python3 tests/bench/load/smoke.py $(BUILD)
TESTS += test-bench-smoke
SERIAL_TESTS += test-bench-smoke
SERIAL_PREREQS += $(BENCH_LOAD)
