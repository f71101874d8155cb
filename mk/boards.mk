# mk/boards.mk - Cortex-M boards: firmware images, the core's tests under
# QEMU, and the flash/RAM budget check.
#
#   make BOARD=mps2-an385   build that board's firmware (node.elf, cluster.elf)
#   make BOARD=mps2-an385 run-firmware   run the three-node example in QEMU
#   make size               flash/RAM of one node per board; fails over budget
#   make target-tests       only the QEMU suites (also part of `make test`)
#
# Each boards/NAME/board.mk sets NAME_CPU_FLAGS, NAME_FLASH_BUDGET,
# NAME_RAM_BUDGET, NAME_STACK and NAME_QEMU (the machine that runs it, or
# empty). Everything for a board lands in $(BUILD)/boards/NAME/. Firmware and
# target tests are compiled with the board's capacity limits (-include
# boards/NAME/el_board_config.h); the unit-test image keeps the core's default
# limits, which tests/unit is written against.

BM_BOARDS := $(sort $(patsubst boards/%/board.mk,%,$(wildcard boards/*/board.mk)))
include $(wildcard boards/*/board.mk)

BM_CC := arm-none-eabi-gcc
BM_SIZE := arm-none-eabi-size
# The board whose QEMU model runs the target suites.
BM_QEMU_BOARD := mps2-an385
BM_QEMU_SECS := 300
# Where the QEMU suites record their closing lines (see target-tests).
BM_RESULTS ?= $(BUILD)/results

BM_CORE_SRCS := $(sort $(wildcard core/*.c))
BM_PORT_SRCS := $(sort $(wildcard port/baremetal/*.c))
BM_FW_LIB_SRCS := examples/firmware/el_fw_client.c examples/firmware/el_fw_net.c \
	examples/firmware/el_fw_cluster.c
BM_HDRS := $(wildcard core/*.h port/baremetal/*.h boards/*/*.h examples/firmware/*.h \
	tests/lib/*.h tests/target/*.h)
BM_UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
BM_UNIT_NAMES := $(patsubst tests/unit/test_%.c,%,$(BM_UNIT_SRCS))
BM_TARGET_SRCS := $(sort $(wildcard tests/target/test_*.c))
BM_TARGET_NAMES := $(patsubst tests/target/test_%.c,%,$(BM_TARGET_SRCS))

# Flags of board $(1): its CPU, size-optimised, sections for --gc-sections,
# with the board's small config (bm_cflags) or the core's default limits
# (bm_cflags_default: the unit tests are written against those).
bm_cflags_default = $(CSTD) $(WARN) $($(1)_CPU_FLAGS) -Os -g -ffunction-sections -fdata-sections
bm_cflags = $(call bm_cflags_default,$(1)) -include boards/$(1)/el_board_config.h
BM_INCLUDES = -Icore -Iport/baremetal -Iboards/$(1) -Iboards/common -Iexamples/firmware
# Link board $(1) with stack $(2) and heap $(3) bytes and C library $(4).
bm_link = $(BM_CC) $($(1)_CPU_FLAGS) -nostartfiles -T boards/$(1)/linker.ld -Lboards \
	-Wl,--gc-sections -Wl,-Map=$(@:.elf=.map) -Wl,--defsym=__stack_size=$(2) \
	-Wl,--defsym=__heap_size=$(3) $(filter %.o,$^) \
	-Wl,--start-group $(4) -lgcc -Wl,--end-group -o $@

# A main() calling every el_suite_NAME of $(1) (same scheme as mk/core.mk).
define bm_gen_main
	@mkdir -p $(@D)
	@{ echo '#include "el_target.h"'; echo '#include "el_test.h"'; \
	   echo 'EL_TEST_MAIN_DEFINITIONS'; \
	   for n in $(1); do echo "void el_suite_$$n(void);"; done; \
	   echo 'int main(void) {'; echo '  el_target_begin("$(2)");'; \
	   for n in $(1); do echo "  el_suite_$$n();"; done; \
	   echo '  el_target_report();'; \
	   echo '  return el_target_end(el_test_end()); }'; } >$@
endef

define bm_board_rules
BM_DIR_$(1) := $$(BUILD)/boards/$(1)
BM_CORE_OBJS_$(1) := $$(patsubst %.c,$$(BM_DIR_$(1))/fs/%.o,$$(BM_CORE_SRCS))
BM_PORT_OBJS_$(1) := $$(patsubst %.c,$$(BM_DIR_$(1))/fs/%.o,$$(BM_PORT_SRCS) \
	boards/common/cortex_m_reset.c boards/common/cortex_m_vectors.c)
BM_FW_OBJS_$(1) := $$(patsubst %.c,$$(BM_DIR_$(1))/fs/%.o,$$(BM_FW_LIB_SRCS))

# Freestanding: the core, the port, the board and the firmware example.
$$(BM_DIR_$(1))/fs/%.o: %.c $$(BM_HDRS) boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(BM_CC) $$(call bm_cflags,$(1)) -ffreestanding $$(call BM_INCLUDES,$(1)) -c $$< -o $$@

# Hosted on newlib: test code (printf through semihosting).
$$(BM_DIR_$(1))/test/%.o: %.c $$(BM_HDRS) boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(BM_CC) $$(call bm_cflags,$(1)) $$(call BM_INCLUDES,$(1)) -Itests/lib -Itests/target \
		-c $$< -o $$@

# One node: what `make size` measures.
$$(BM_DIR_$(1))/node.elf: $$(BM_CORE_OBJS_$(1)) $$(BM_PORT_OBJS_$(1)) \
		$$(BM_DIR_$(1))/fs/examples/firmware/el_fw_client.o \
		$$(BM_DIR_$(1))/fs/examples/firmware/node_main.o boards/$(1)/linker.ld
	$$(call bm_link,$(1),$$($(1)_STACK),0,-lc_nano)

# The three-node firmware example.
$$(BM_DIR_$(1))/cluster.elf: $$(BM_CORE_OBJS_$(1)) $$(BM_PORT_OBJS_$(1)) $$(BM_FW_OBJS_$(1)) \
		$$(BM_DIR_$(1))/fs/examples/firmware/cluster_main.o boards/$(1)/linker.ld
	$$(call bm_link,$(1),8192,0,-lc_nano)

BM_TEST_LIB_OBJS_$(1) := $$(BM_CORE_OBJS_$(1)) $$(BM_PORT_OBJS_$(1)) \
	$$(BM_DIR_$(1))/test/tests/target/newlib_stubs.o

$$(BM_DIR_$(1))/gen/unit_main.c: $$(BM_UNIT_SRCS) mk/boards.mk
	$$(call bm_gen_main,$$(BM_UNIT_NAMES),unit)
$$(BM_DIR_$(1))/gen/target_main.c: $$(BM_TARGET_SRCS) mk/boards.mk
	$$(call bm_gen_main,$$(BM_TARGET_NAMES),target)

# The core's unit tests (tests/unit), built for the board with the default
# limits, as on the host (the board has 4 MiB of RAM for them).
$$(BM_DIR_$(1))/dfs/%.o: %.c $$(BM_HDRS) boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(BM_CC) $$(call bm_cflags_default,$(1)) -ffreestanding $$(call BM_INCLUDES,$(1)) -c $$< -o $$@
$$(BM_DIR_$(1))/dtest/%.o: %.c $$(BM_HDRS) boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(BM_CC) $$(call bm_cflags_default,$(1)) $$(call BM_INCLUDES,$(1)) -Itests/lib -Itests/target \
		-c $$< -o $$@
$$(BM_DIR_$(1))/dtest/gen/%.o: $$(BM_DIR_$(1))/gen/%.c $$(BM_HDRS)
	@mkdir -p $$(@D)
	$$(BM_CC) $$(call bm_cflags_default,$(1)) $$(call BM_INCLUDES,$(1)) -Itests/lib -Itests/target \
		-c $$< -o $$@
$$(BM_DIR_$(1))/unit.elf: $$(patsubst %.c,$$(BM_DIR_$(1))/dfs/%.o,$$(BM_CORE_SRCS) $$(BM_PORT_SRCS) \
		boards/common/cortex_m_reset.c boards/common/cortex_m_vectors.c) \
		$$(BM_DIR_$(1))/dtest/tests/target/newlib_stubs.o $$(BM_DIR_$(1))/dtest/gen/unit_main.o \
		$$(patsubst %.c,$$(BM_DIR_$(1))/dtest/%.o,$$(BM_UNIT_SRCS)) boards/$(1)/linker.ld
	$$(call bm_link,$(1),0x40000,0x40000,-lc)

# Target-only tests (tests/target): the port, and the cluster.
$$(BM_DIR_$(1))/target.elf: $$(BM_TEST_LIB_OBJS_$(1)) $$(BM_FW_OBJS_$(1)) \
		$$(BM_DIR_$(1))/test/gen/target_main.o \
		$$(patsubst %.c,$$(BM_DIR_$(1))/test/%.o,$$(BM_TARGET_SRCS)) boards/$(1)/linker.ld
	$$(call bm_link,$(1),0x10000,0x10000,-lc)

# Images that must fail in a known way (tests/target/check-harness.sh).
.SECONDARY: $$(patsubst %,$$(BM_DIR_$(1))/test/tests/target/selftest_%.o,fail panic fault)
$$(BM_DIR_$(1))/selftest-%.elf: $$(BM_TEST_LIB_OBJS_$(1)) \
		$$(BM_DIR_$(1))/test/tests/target/selftest_%.o boards/$(1)/linker.ld
	$$(call bm_link,$(1),0x4000,0x4000,-lc)

# The generated mains live under the build dir; compile them from there.
$$(BM_DIR_$(1))/test/gen/%.o: $$(BM_DIR_$(1))/gen/%.c $$(BM_HDRS)
	@mkdir -p $$(@D)
	$$(BM_CC) $$(call bm_cflags,$(1)) $$(call BM_INCLUDES,$(1)) -Itests/lib -Itests/target \
		-c $$< -o $$@

.PHONY: size-$(1)
size-$(1): $$(BM_DIR_$(1))/node.elf
	@boards/common/size-check.sh $(1) $$< $$($(1)_FLASH_BUDGET) $$($(1)_RAM_BUDGET) $$($(1)_STACK)
endef

$(foreach b,$(BM_BOARDS),$(eval $(call bm_board_rules,$(b))))
# Objects made through pattern chains are kept (no rebuild of every image).
.PRECIOUS: $(BUILD)/boards/%.o

# ---- make BOARD=name ----
ifdef BOARD
ifeq ($(filter $(BOARD),$(BM_BOARDS)),)
$(error BOARD=$(BOARD) is not one of: $(BM_BOARDS))
endif
.PHONY: firmware run-firmware
firmware: $(BUILD)/boards/$(BOARD)/node.elf $(BUILD)/boards/$(BOARD)/cluster.elf
	@$(BM_SIZE) $^
ALL_TARGETS += firmware
# The three-node example under QEMU (boards that QEMU models).
run-firmware: $(BUILD)/boards/$(BOARD)/cluster.elf
	@test -n "$($(BOARD)_QEMU)" || { echo "QEMU has no model of $(BOARD)"; exit 1; }
	tests/target/qemu-run.sh $($(BOARD)_QEMU) $< 60
endif

# ---- make size ----
# The sizeof table, then every board (even after one failed); fail if any did.
size:
	@tests/sizes.sh $(BUILD)
	@rc=0; for b in $(BM_BOARDS); do \
		$(MAKE) --no-print-directory size-$$b || rc=1; done; exit $$rc

# ---- QEMU suites ----
BM_Q := $(BUILD)/boards/$(BM_QEMU_BOARD)
BM_QEMU_MACHINE := $($(BM_QEMU_BOARD)_QEMU)

.PHONY: test-target-harness test-target-unit test-target-cluster test-board-size test-baremetal-rules \
	target-tests
test-target-harness: $(BM_Q)/selftest-fail.elf $(BM_Q)/selftest-panic.elf \
		$(BM_Q)/selftest-fault.elf $(BM_Q)/node.elf
	@tests/run-suite.sh $(BM_RESULTS) target-harness \
		tests/target/check-harness.sh $(BM_QEMU_MACHINE) $(BM_Q)
test-target-unit: $(BM_Q)/unit.elf
	@tests/run-suite.sh $(BM_RESULTS) target-unit \
		tests/target/qemu-run.sh $(BM_QEMU_MACHINE) $< $(BM_QEMU_SECS)
test-target-cluster: $(BM_Q)/target.elf
	@tests/run-suite.sh $(BM_RESULTS) target-port-cluster \
		tests/target/qemu-run.sh $(BM_QEMU_MACHINE) $< $(BM_QEMU_SECS)
test-board-size: $(foreach b,$(BM_BOARDS),$(BUILD)/boards/$(b)/node.elf)
	@tests/run-suite.sh $(BM_RESULTS) board-size boards/common/size-all.sh \
		$(foreach b,$(BM_BOARDS),"$(b) $(BUILD)/boards/$(b)/node.elf $($(b)_FLASH_BUDGET) $($(b)_RAM_BUDGET) $($(b)_STACK)")

test-baremetal-rules: $(foreach b,$(BM_BOARDS),$(BUILD)/boards/$(b)/node.elf)
	@tests/run-suite.sh $(BM_RESULTS) baremetal-rules tests/target/check-baremetal.sh $^

BM_SUITES := test-target-harness test-target-unit test-target-cluster test-board-size test-baremetal-rules
# Only the board suites, into their own results directory.
target-tests:
	@rm -rf $(BUILD)/results-target && mkdir -p $(BUILD)/results-target
	@EL_TEST_ALL=1 $(MAKE) --no-print-directory -k BM_RESULTS=$(BUILD)/results-target $(BM_SUITES) || \
		echo "build 0 1 2 0" >$(BUILD)/results-target/build-failed
	@tests/summary.sh $(BUILD)/results-target
TESTS += $(BM_SUITES)
