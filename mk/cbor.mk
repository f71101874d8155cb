# mk/cbor.mk - the CBOR codec and the Raft wire codec (core/cbor.c, core/wire.c):
# conformance against libcbor and libFuzzer targets. Their unit tests
# (tests/unit/test_cbor.c, test_wire.c) run in the core's unit program.
#
#   make test-cbor-conformance      differential tests against libcbor (ASan/UBSan)
#   make fuzz FUZZ_SECONDS=n        fuzz each target for n seconds (default 60)
#   make test-fuzz-cbor             seed-corpus regression + a fixed seeded run
#   make fuzz-corpus                rewrite tests/fuzz/corpus (after a wire format change)
# FUZZ_CC and FUZZ_SECONDS are defined here; mk/posix.mk uses them as well.

CBOR_SRCS := core/cbor.c core/wire.c
CBOR_SAN_OBJS := $(BUILD)/san/core/cbor.o $(BUILD)/san/core/wire.o

# Conformance: a host program linked with Debian's libcbor, the oracle.
CONFORMANCE_SRCS := $(sort $(wildcard tests/conformance/*.c))
CONFORMANCE := $(BUILD)/san/cbor_conformance

$(CONFORMANCE): $(CONFORMANCE_SRCS) $(wildcard tests/conformance/*.h) $(CBOR_SAN_OBJS) \
		$(TEST_LIB_SRCS) tests/lib/el_test.h
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(INCLUDES) $(CONFORMANCE_SRCS) $(CBOR_SAN_OBJS) \
		$(TEST_LIB_SRCS) -lcbor -o $@

# Fuzzing: clang's libFuzzer, the codec compiled with coverage and sanitizers.
FUZZ_CC ?= clang
FUZZ_CFLAGS := $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all
FUZZ_TARGETS := $(BUILD)/fuzz/fuzz_wire $(BUILD)/fuzz/fuzz_cbor $(BUILD)/fuzz/fuzz_oracle \
	$(BUILD)/fuzz/fuzz_snapshot
# The lock-table snapshot decoder (InstallSnapshot, backups), with small
# limits so a table copy per run is cheap; FUZZ_GEN writes its seeds.
FUZZ_SNAP_LIMITS := -DEL_SESSIONS_MAX=8 -DEL_LOCKS_MAX=8 -DEL_HOLDS_MAX=8 -DEL_WAITERS_MAX=8 \
	-DEL_WATCHES_MAX=4 -DEL_VALUES_MAX=4 -DEL_OPENS_MAX=4 -DEL_SNAPSHOT_MAX=4096
FUZZ_SNAP_SRCS := core/lock.c core/lock_table.c core/lock_index.c core/lock_check.c \
	core/lock_cmd.c core/lock_open.c core/lock_query.c core/lock_snapshot.c core/cbor.c core/error.c
$(BUILD)/fuzz/fuzz_snapshot: tests/fuzz/fuzz_snapshot.c $(FUZZ_SNAP_SRCS) $(CORE_HDRS) $(TEST_LIB_SRCS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(FUZZ_SNAP_LIMITS) $(INCLUDES) $< $(FUZZ_SNAP_SRCS) \
		$(TEST_LIB_SRCS) -o $@
$(BUILD)/host/gen_snapshot_corpus: tests/fuzz/fuzz_snapshot.c $(FUZZ_SNAP_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -DEL_FUZZ_GEN $(FUZZ_SNAP_LIMITS) $(INCLUDES) $< $(FUZZ_SNAP_SRCS) \
		$(TEST_LIB_SRCS) -o $@
FUZZ_SECONDS ?= 60

$(BUILD)/fuzz/fuzz_wire $(BUILD)/fuzz/fuzz_cbor: $(BUILD)/fuzz/fuzz_%: tests/fuzz/fuzz_%.c \
		$(CBOR_SRCS) $(CORE_HDRS) $(TEST_LIB_SRCS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(INCLUDES) $< $(CBOR_SRCS) $(TEST_LIB_SRCS) -o $@

# Differential fuzzing against libcbor, with the conformance tests' glue.
$(BUILD)/fuzz/fuzz_oracle: tests/fuzz/fuzz_oracle.c tests/conformance/oracle.c \
		tests/conformance/oracle.h $(CBOR_SRCS) $(CORE_HDRS) $(TEST_LIB_SRCS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -D_DEFAULT_SOURCE $(INCLUDES) -Itests/conformance $< \
		tests/conformance/oracle.c $(CBOR_SRCS) $(TEST_LIB_SRCS) -lcbor -o $@

# Regenerates the seed corpus (after a change of the wire format).
$(BUILD)/host/gen_corpus: tests/fuzz/gen_corpus.c $(CBOR_SRCS) $(CORE_HDRS) $(TEST_LIB_SRCS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(INCLUDES) $< $(CBOR_SRCS) $(TEST_LIB_SRCS) -o $@

.PHONY: fuzz fuzz-corpus test-cbor-conformance test-fuzz-cbor
fuzz: $(FUZZ_TARGETS)
	@tests/fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS)
fuzz-corpus: $(BUILD)/host/gen_corpus $(BUILD)/host/gen_snapshot_corpus
	@mkdir -p tests/fuzz/corpus/wire tests/fuzz/corpus/cbor tests/fuzz/corpus/snapshot
	$(BUILD)/host/gen_corpus tests/fuzz/corpus
	$(BUILD)/host/gen_snapshot_corpus tests/fuzz/corpus/snapshot

test-cbor-conformance: $(CONFORMANCE)
	@tests/run-suite.sh $(BUILD)/results cbor-conformance $(CONFORMANCE)
test-fuzz-cbor: $(FUZZ_TARGETS)
	@tests/run-suite.sh $(BUILD)/results fuzz-cbor-wire tests/fuzz/run.sh $(BUILD)/fuzz
TESTS += test-cbor-conformance test-fuzz-cbor
