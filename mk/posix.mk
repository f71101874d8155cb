# mk/posix.mk - port/posix: the Linux platform layer (clock, seed, logging,
# panic, durable storage), its host tests, the kill/restart test and the WAL
# benchmark. See port/posix/README.md.

POSIX_SRCS := $(sort $(wildcard port/posix/*.c))
POSIX_HDRS := $(wildcard port/posix/*.h) $(CORE_HDRS)
POSIX_OBJS := $(patsubst port/posix/%.c,$(BUILD)/host/port/posix/%.o,$(POSIX_SRCS))
POSIX_SAN_OBJS := $(patsubst port/posix/%.c,$(BUILD)/san/port/posix/%.o,$(POSIX_SRCS))
POSIX_LIB := $(BUILD)/host/libedgelock_posix.a
POSIX_SAN_LIB := $(BUILD)/san/libedgelock_posix.a
POSIX_INCLUDES := -Icore -Iport/posix -Itests/lib -Itests/port

$(BUILD)/host/port/posix/%.o: port/posix/%.c $(POSIX_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(POSIX_INCLUDES) -c $< -o $@

$(BUILD)/san/port/posix/%.o: port/posix/%.c $(POSIX_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(POSIX_INCLUDES) -c $< -o $@

$(POSIX_LIB): $(POSIX_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@; ar rcs $@ $^

$(POSIX_SAN_LIB): $(POSIX_SAN_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@; ar rcs $@ $^

# Host test programs: tests/port/<name>.c plus the shared helpers.
PORT_TEST_LIB_SRCS := $(sort $(wildcard tests/port/port_test_*.c))
PORT_TEST_DEPS := $(PORT_TEST_LIB_SRCS) $(wildcard tests/port/*.h) tests/lib/el_test.h $(POSIX_HDRS)
PORT_TESTS := test_posix_storage test_posix_crash test_posix_faults test_posix_kill test_posix_power
PORT_TEST_BINS := $(PORT_TESTS:%=$(BUILD)/host/%)
PORT_TEST_SAN_BINS := $(PORT_TESTS:%=$(BUILD)/san/%)

# Storage needs no core object, so these build while the core is in flux;
# only the Raft glue test links the core library.
$(BUILD)/host/test_posix_%: tests/port/test_posix_%.c $(PORT_TEST_DEPS) $(POSIX_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(POSIX_INCLUDES) $< $(PORT_TEST_LIB_SRCS) $(POSIX_LIB) -o $@

$(BUILD)/san/test_posix_%: tests/port/test_posix_%.c $(PORT_TEST_DEPS) $(POSIX_SAN_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(POSIX_INCLUDES) $< $(PORT_TEST_LIB_SRCS) $(POSIX_SAN_LIB) -o $@

# The Raft glue test links the core (el_panic comes from port/posix).
$(BUILD)/host/test_posix_raft: tests/port/test_posix_raft.c $(PORT_TEST_DEPS) $(POSIX_LIB) $(CORE_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(POSIX_INCLUDES) $< $(PORT_TEST_LIB_SRCS) \
		-Wl,--start-group $(POSIX_LIB) $(CORE_LIB) -Wl,--end-group -o $@

$(BUILD)/san/test_posix_raft: tests/port/test_posix_raft.c $(PORT_TEST_DEPS) $(POSIX_SAN_LIB) $(CORE_SAN_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(POSIX_INCLUDES) $< $(PORT_TEST_LIB_SRCS) \
		-Wl,--start-group $(POSIX_SAN_LIB) $(CORE_SAN_LIB) -Wl,--end-group -o $@

# Scratch directories of the tests live under the build directory.
PORT_TEST_TMP := $(BUILD)/tmp
# The sanitizer runs get their own scratch: under make -j2 they run beside the
# plain ones, and the power-cut test keeps fixed names there (power-saved-torn).
PORT_TEST_TMP_SAN := $(BUILD)/tmp/san
KILLS ?= 200

.PHONY: posix test-posix test-posix-san test-posix-raft test-kill cppcheck-posix bench-posix
posix: $(POSIX_LIB)
ALL_TARGETS += $(POSIX_LIB)

test-posix: $(PORT_TEST_BINS)
	@mkdir -p $(PORT_TEST_TMP)
	@tests/run-suite.sh $(BUILD)/results posix-storage $(BUILD)/host/test_posix_storage $(PORT_TEST_TMP)
	@tests/run-suite.sh $(BUILD)/results posix-crash $(BUILD)/host/test_posix_crash $(PORT_TEST_TMP)
	@tests/run-suite.sh $(BUILD)/results posix-faults $(BUILD)/host/test_posix_faults $(PORT_TEST_TMP)
	@tests/run-suite.sh $(BUILD)/results posix-power-cut $(BUILD)/host/test_posix_power $(PORT_TEST_TMP)
	@tests/run-suite.sh $(BUILD)/results posix-kill $(BUILD)/host/test_posix_kill $(PORT_TEST_TMP) $(KILLS)
	@tests/run-suite.sh $(BUILD)/results posix-cppcheck bash -c \
		'$(POSIX_CPPCHECK) port/posix && $(POSIX_CPPCHECK_TESTS) && echo "1 passed, 0 failed"'

test-posix-san: $(PORT_TEST_SAN_BINS)
	@mkdir -p $(PORT_TEST_TMP_SAN)
	@tests/run-suite.sh $(BUILD)/results posix-storage-asan-ubsan $(BUILD)/san/test_posix_storage $(PORT_TEST_TMP_SAN)
	@tests/run-suite.sh $(BUILD)/results posix-crash-asan-ubsan $(BUILD)/san/test_posix_crash $(PORT_TEST_TMP_SAN)
	@tests/run-suite.sh $(BUILD)/results posix-faults-asan-ubsan $(BUILD)/san/test_posix_faults $(PORT_TEST_TMP_SAN)
	@tests/run-suite.sh $(BUILD)/results posix-power-cut-asan-ubsan $(BUILD)/san/test_posix_power $(PORT_TEST_TMP_SAN)

# The glue with the Raft core: a suite of its own, so a core that does not
# build fails only this one.
test-posix-raft: $(BUILD)/host/test_posix_raft $(BUILD)/san/test_posix_raft
	@mkdir -p $(PORT_TEST_TMP) $(PORT_TEST_TMP_SAN)
	@tests/run-suite.sh $(BUILD)/results posix-raft $(BUILD)/host/test_posix_raft $(PORT_TEST_TMP)
	@tests/run-suite.sh $(BUILD)/results posix-raft-asan-ubsan $(BUILD)/san/test_posix_raft $(PORT_TEST_TMP_SAN)

# The long kill/restart run: make test-kill KILLS=2000
test-kill: $(BUILD)/host/test_posix_kill
	@mkdir -p $(PORT_TEST_TMP)
	$(BUILD)/host/test_posix_kill $(PORT_TEST_TMP) $(KILLS)

# The project's command, then again with the headers resolved and the tests
# (both in make test's posix-cppcheck since the second had drifted unrun).
# (-UEL_CONFIG_FILE: cppcheck would otherwise try el_config.h's board hook.)
POSIX_CPPCHECK := cppcheck --enable=warning,style,performance,portability --error-exitcode=1 --std=c11 -q
POSIX_CPPCHECK_TESTS := $(POSIX_CPPCHECK) -UEL_CONFIG_FILE -Icore -Iport/posix -Itests/lib port/posix tests/port
cppcheck-posix:
	$(POSIX_CPPCHECK) port/posix
	$(POSIX_CPPCHECK_TESTS)

TESTS += test-posix test-posix-san test-posix-raft

# Fuzzing recovery (clang's libFuzzer): make test-fuzz-posix (bounded) or
# make fuzz-posix FUZZ_SECONDS=600.
$(BUILD)/fuzz/fuzz_posix_storage: tests/port/fuzz_posix_storage.c $(POSIX_SRCS) $(PORT_TEST_DEPS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(CSTD) $(WARN) -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
		-D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE $(POSIX_INCLUDES) $< \
		$(filter-out port/posix/storage_raft.c,$(POSIX_SRCS)) \
		$(PORT_TEST_LIB_SRCS) -o $@

$(BUILD)/host/gen_posix_corpus: tests/port/gen_posix_corpus.c $(PORT_TEST_DEPS) $(POSIX_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(POSIX_INCLUDES) $< $(PORT_TEST_LIB_SRCS) $(POSIX_LIB) -o $@

.PHONY: test-fuzz-posix fuzz-posix test-posix-mutants
# The planted durability holes of tests/port/mutants/, each shown caught
# (about a minute each; not part of make test).
test-posix-mutants:
	@tests/port/mutants.sh

test-fuzz-posix: $(BUILD)/fuzz/fuzz_posix_storage $(BUILD)/host/gen_posix_corpus
	@tests/run-suite.sh $(BUILD)/results fuzz-posix-recovery tests/port/run_fuzz_posix.sh $(BUILD)
fuzz-posix: $(BUILD)/fuzz/fuzz_posix_storage $(BUILD)/host/gen_posix_corpus
	tests/port/run_fuzz_posix.sh $(BUILD) $(FUZZ_SECONDS)
TESTS += test-fuzz-posix

$(BUILD)/host/bench_posix_wal: tests/port/bench_posix_wal.c $(PORT_TEST_DEPS) $(POSIX_LIB)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(POSIX_INCLUDES) $< $(PORT_TEST_LIB_SRCS) $(POSIX_LIB) -o $@

bench-posix: $(BUILD)/host/bench_posix_wal
	@mkdir -p $(PORT_TEST_TMP)
	$(BUILD)/host/bench_posix_wal $(PORT_TEST_TMP)
BENCHES += bench-posix
