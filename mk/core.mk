# mk/core.mk - the freestanding core: host, sanitizer and Cortex-M3 builds,
# its unit tests, and the checks that keep it freestanding.

CORE_SRCS := $(sort $(wildcard core/*.c))
CORE_HDRS := $(wildcard core/*.h)

# Host (release-like) and sanitizer builds of the core.
CORE_OBJS := $(patsubst core/%.c,$(BUILD)/host/core/%.o,$(CORE_SRCS))
CORE_SAN_OBJS := $(patsubst core/%.c,$(BUILD)/san/core/%.o,$(CORE_SRCS))
CORE_LIB := $(BUILD)/host/libedgelock_core.a
CORE_SAN_LIB := $(BUILD)/san/libedgelock_core.a

$(BUILD)/host/core/%.o: core/%.c $(CORE_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(CORE_CFLAGS) $(OPT) $(CORE_EXTRA) -Icore -c $< -o $@

$(BUILD)/san/core/%.o: core/%.c $(CORE_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(CORE_CFLAGS) -O1 -g $(SANFLAGS) $(CORE_EXTRA) -Icore -c $< -o $@

$(CORE_LIB): $(CORE_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@; ar rcs $@ $^

$(CORE_SAN_LIB): $(CORE_SAN_OBJS)
	$(call say,AR,$@)
	$(Q)rm -f $@; ar rcs $@ $^

# Cortex-M3, freestanding, the flags of the Raft core issue.
ARM_CC := arm-none-eabi-gcc
ARM_CORE_CFLAGS := $(CORE_CFLAGS) -mcpu=cortex-m3 -mthumb -Os -g -ffunction-sections -fdata-sections
CORE_ARM_OBJS := $(patsubst core/%.c,$(BUILD)/arm/core/%.o,$(CORE_SRCS))

$(BUILD)/arm/core/%.o: core/%.c $(CORE_HDRS)
	@mkdir -p $(@D)
	$(call say,ARMCC,$@)
	$(Q)$(ARM_CC) $(ARM_CORE_CFLAGS) $(ARM_CORE_EXTRA) -Icore -c $< -o $@

# The two other microcontroller families, to prove the core needs nothing
# more there: Armv6-M (Cortex-M0+) and RV32IMAC (with picolibc's headers).
CORE_M0_OBJS := $(patsubst core/%.c,$(BUILD)/m0plus/core/%.o,$(CORE_SRCS))
CORE_RV32_OBJS := $(patsubst core/%.c,$(BUILD)/rv32/core/%.o,$(CORE_SRCS))

$(BUILD)/m0plus/core/%.o: core/%.c $(CORE_HDRS)
	@mkdir -p $(@D)
	$(call say,ARMCC,$@)
	$(Q)$(ARM_CC) $(CORE_CFLAGS) -mcpu=cortex-m0plus -mthumb -Os -ffunction-sections -fdata-sections \
		-Icore -c $< -o $@

$(BUILD)/rv32/core/%.o: core/%.c $(CORE_HDRS)
	@mkdir -p $(@D)
	$(call say,RVCC,$@)
	$(Q)riscv64-unknown-elf-gcc --specs=picolibc.specs $(CORE_CFLAGS) -march=rv32imac -mabi=ilp32 -Os \
		-ffunction-sections -fdata-sections -Icore -c $< -o $@

.PHONY: core core-arm check-core
core: $(CORE_LIB)
core-arm: $(CORE_ARM_OBJS) $(CORE_M0_OBJS) $(CORE_RV32_OBJS)
ALL_TARGETS += core

# Unit tests: every tests/unit/test_NAME.c defines `void el_suite_NAME(void)`;
# the main that calls them all is generated, so adding a module adds no edit.
UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
UNIT_NAMES := $(patsubst tests/unit/test_%.c,%,$(UNIT_SRCS))
UNIT_MAIN := $(BUILD)/gen/unit_main.c
TEST_LIB_SRCS := tests/lib/panic_host.c

$(UNIT_MAIN): $(UNIT_SRCS)
	@mkdir -p $(@D)
	@{ echo '#include "el_test.h"'; echo 'EL_TEST_MAIN_DEFINITIONS'; \
	   for n in $(UNIT_NAMES); do echo "void el_suite_$$n(void);"; done; \
	   echo 'int main(void) {'; \
	   for n in $(UNIT_NAMES); do echo "  el_suite_$$n();"; done; \
	   echo '  return el_test_end(); }'; } >$@

$(BUILD)/host/unit: $(UNIT_SRCS) $(UNIT_MAIN) $(TEST_LIB_SRCS) $(CORE_LIB) tests/lib/el_test.h
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(INCLUDES) $(UNIT_SRCS) $(UNIT_MAIN) $(TEST_LIB_SRCS) $(CORE_LIB) -o $@

$(BUILD)/san/unit: $(UNIT_SRCS) $(UNIT_MAIN) $(TEST_LIB_SRCS) $(CORE_SAN_LIB) tests/lib/el_test.h
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(INCLUDES) $(UNIT_SRCS) $(UNIT_MAIN) $(TEST_LIB_SRCS) $(CORE_SAN_LIB) -o $@

ALL_TARGETS += $(BUILD)/host/unit

# The same unit tests against the core built with EL_INDEXED=0 (the scans
# the microcontroller config keeps instead of indexes), and with 32-bit slot
# indexes (the gateway's width at the default limits).
$(BUILD)/host/unit-linear: $(UNIT_SRCS) $(UNIT_MAIN) $(TEST_LIB_SRCS) $(CORE_SRCS) $(CORE_HDRS) tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -DEL_INDEXED=0 $(INCLUDES) $(CORE_SRCS) $(UNIT_SRCS) $(UNIT_MAIN) $(TEST_LIB_SRCS) -o $@
$(BUILD)/host/unit-wide: $(UNIT_SRCS) $(UNIT_MAIN) $(TEST_LIB_SRCS) $(CORE_SRCS) $(CORE_HDRS) tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(SANFLAGS) -DEL_SLOT_BITS=32 -DEL_SNAPSHOT_MAX=131072 $(INCLUDES) $(CORE_SRCS) $(UNIT_SRCS) $(UNIT_MAIN) $(TEST_LIB_SRCS) -o $@
ALL_TARGETS += $(BUILD)/host/unit-linear $(BUILD)/host/unit-wide

# A gateway-profile node's memory follows its use (tests/memory).
$(BUILD)/host/gw_memory_test: tests/memory/gw_memory_test.c $(TEST_LIB_SRCS) $(CORE_SRCS) $(CORE_HDRS) \
		cmd/edgelockd/el_gateway_config.h port/posix/log_ring.c port/posix/el_log_ring.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O2 $(GW_FLAGS) $(INCLUDES) -Iport/posix $(CORE_SRCS) \
		tests/memory/gw_memory_test.c port/posix/log_ring.c $(TEST_LIB_SRCS) -o $@
ALL_TARGETS += $(BUILD)/host/gw_memory_test
.PHONY: test-gateway-memory
test-gateway-memory: $(BUILD)/host/gw_memory_test
	@tests/run-suite.sh $(BUILD)/results gateway-memory $(BUILD)/host/gw_memory_test
TESTS += test-gateway-memory

.PHONY: test-unit-linear test-unit-wide
test-unit-linear: $(BUILD)/host/unit-linear
	@tests/run-suite.sh $(BUILD)/results unit-linear $(BUILD)/host/unit-linear
test-unit-wide: $(BUILD)/host/unit-wide
	@tests/run-suite.sh $(BUILD)/results unit-wide-asan-ubsan $(BUILD)/host/unit-wide
TESTS += test-unit-linear test-unit-wide

.PHONY: test-unit test-unit-san test-core-freestanding
test-unit: $(BUILD)/host/unit
	@tests/run-suite.sh $(BUILD)/results unit $(BUILD)/host/unit
test-unit-san: $(BUILD)/san/unit
	@tests/run-suite.sh $(BUILD)/results unit-asan-ubsan $(BUILD)/san/unit
test-core-freestanding: $(CORE_OBJS) $(CORE_ARM_OBJS) $(CORE_M0_OBJS) $(CORE_RV32_OBJS)
	@tests/run-suite.sh $(BUILD)/results core-freestanding tests/check-core.sh $(BUILD)
TESTS += test-core-freestanding test-unit test-unit-san

# The core's naming and layout rules: el_ symbols, internals in *_internal.h,
# limits in el_config.h, role names in the lock code.
.PHONY: test-core-conventions
test-core-conventions: $(CORE_OBJS)
	@tests/run-suite.sh $(BUILD)/results core-conventions tests/check-conventions.sh $(BUILD)
TESTS += test-core-conventions

# The lock table's invariant check catches each kind of broken table (host
# only: each corruption is checked in a child process).
$(BUILD)/host/lock_check_test: tests/lockcheck/lock_check_test.c $(TEST_LIB_SRCS) $(CORE_LIB) tests/lib/el_test.h
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(INCLUDES) $< $(TEST_LIB_SRCS) $(CORE_LIB) -o $@

.PHONY: test-lock-check
test-lock-check: $(BUILD)/host/lock_check_test
	@tests/run-suite.sh $(BUILD)/results lock-check $(BUILD)/host/lock_check_test
TESTS += test-lock-check

# el_config.h refuses every configuration outside the no-op room rule.
.PHONY: test-config-rules
test-config-rules:
	@tests/run-suite.sh $(BUILD)/results config-rules tests/config-rules.sh $(CC)
TESTS += test-config-rules

# sizeof(struct el_node) (or el_raft until the node exists) per config.
.PHONY: sizes
sizes:
	@tests/sizes.sh $(BUILD)

# Static analysis of everything we ship: core/ and port/ today; net/ and cmd/
# join the list by themselves once those folders exist.
CPPCHECK_DIRS := $(wildcard core port net cmd examples)
.PHONY: test-cppcheck
test-cppcheck:
	@tests/run-suite.sh $(BUILD)/results cppcheck tests/cppcheck.sh $(CPPCHECK_DIRS)
TESTS += test-cppcheck
