# mk/fuzz.mk - the live-replica fuzzer (tests/fuzz/fuzz_replica.c): hostile,
# wire-valid peer messages delivered to a running node of a small cluster.
# Built twice, with the default limits and with the small board config.
#
#   make test-fuzz-replica        corpus replay + a fixed, seeded run per config
#   make fuzz-replica FUZZ_SECONDS=1800   fuzz each config that long (also part of `make fuzz`)

REPLICA_FUZZ_SRCS := tests/fuzz/fuzz_replica.c $(CORE_SRCS) $(TEST_LIB_SRCS)
REPLICA_FUZZ := $(BUILD)/fuzz/fuzz_replica $(BUILD)/fuzz/fuzz_replica_small

$(BUILD)/fuzz/fuzz_replica: $(REPLICA_FUZZ_SRCS) $(CORE_HDRS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(INCLUDES) $(REPLICA_FUZZ_SRCS) -o $@

$(BUILD)/fuzz/fuzz_replica_small: $(REPLICA_FUZZ_SRCS) $(CORE_HDRS) boards/common/el_small_config.h
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -include boards/common/el_small_config.h $(INCLUDES) \
		$(REPLICA_FUZZ_SRCS) -o $@

.PHONY: test-fuzz-replica fuzz-replica
test-fuzz-replica: $(REPLICA_FUZZ)
	@tests/run-suite.sh $(BUILD)/results fuzz-replica tests/fuzz/run_replica.sh $(BUILD)/fuzz
fuzz-replica: $(REPLICA_FUZZ)
	@tests/fuzz/run_replica.sh $(BUILD)/fuzz $(FUZZ_SECONDS)
fuzz: fuzz-replica
TESTS += test-fuzz-replica
