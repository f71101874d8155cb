# mk/boards.mk - microcontroller boards (Cortex-M and RISC-V): firmware
# images, the core's tests under QEMU, and the flash/RAM budget check.
#
#   make BOARD=mps2-an385   build that board's firmware (node.elf, cluster.elf)
#   make BOARD=mps2-an385 run-firmware   run the three-node example in QEMU
#   make size               flash/RAM of one node per board; fails over budget
#   make target-tests       only the QEMU suites (also part of `make test`)
#
# Each boards/NAME/board.mk sets NAME_CPU_FLAGS, NAME_FLASH_BUDGET,
# NAME_RAM_BUDGET, NAME_STACK, NAME_QEMU (the machine that runs it, or
# empty) and, for a board that is not a Cortex-M, NAME_ARCH (riscv). Everything for a board lands in $(BUILD)/boards/NAME/. Firmware and
# target tests are compiled with the board's capacity limits (-include
# boards/NAME/el_board_config.h); the unit-test image keeps the core's default
# limits, which tests/unit is written against.

BM_BOARDS := $(sort $(patsubst boards/%/board.mk,%,$(wildcard boards/*/board.mk)))
include $(wildcard boards/*/board.mk)

# Per architecture (a board's NAME_ARCH, cortex-m unless it says): the
# compiler, its size tool, the startup code, the port's own files, the C
# libraries of a node image and of a test image, the test images' libc glue
# and the QEMU that runs it.
bm_arch = $(or $($(1)_ARCH),cortex-m)
BM_CC_cortex-m := arm-none-eabi-gcc
BM_SIZE_cortex-m := arm-none-eabi-size
BM_START_cortex-m := boards/common/cortex_m_reset.c boards/common/cortex_m_vectors.c
BM_LIBC_NODE_cortex-m := -lc_nano
BM_LIBC_TEST_cortex-m := -lc
BM_STUBS_cortex-m := tests/target/newlib_stubs.c
BM_QEMU_BIN_cortex-m := qemu-system-arm
BM_ARCH_FLAGS_cortex-m :=
BM_CC_riscv := riscv64-unknown-elf-gcc
BM_SIZE_riscv := riscv64-unknown-elf-size
BM_START_riscv := boards/common/riscv_start.S boards/common/riscv_reset.c
BM_LIBC_NODE_riscv := -lc
BM_LIBC_TEST_riscv := -lc
BM_STUBS_riscv := tests/target/picolibc_stubs.c
BM_QEMU_BIN_riscv := qemu-system-riscv32
BM_ARCH_FLAGS_riscv := --specs=picolibc.specs
bm_cc = $(BM_CC_$(call bm_arch,$(1)))
# The QEMU machine of board $(1) as qemu-run.sh takes it: BINARY:MACHINE.
bm_qemu = $(BM_QEMU_BIN_$(call bm_arch,$(1))):$($(1)_QEMU)
BM_QEMU_SECS := 300
# Where the QEMU suites record their closing lines (see target-tests).
BM_RESULTS ?= $(BUILD)/results

BM_CORE_SRCS := $(sort $(wildcard core/*.c))
BM_PORT_SRCS := $(sort $(wildcard port/baremetal/*.c))
bm_port_srcs = $(BM_PORT_SRCS) $(sort $(wildcard port/baremetal/$(call bm_arch,$(1))/*.c)) \
	$(BM_START_$(call bm_arch,$(1))) boards/common/board_ram.c
BM_FW_LIB_SRCS := examples/firmware/el_fw_client.c examples/firmware/el_fw_net.c \
	examples/firmware/el_fw_cluster.c
BM_HDRS := $(wildcard core/*.h port/baremetal/*.h boards/*/*.h examples/firmware/*.h \
	tests/lib/*.h tests/target/*.h)
BM_UNIT_SRCS := $(sort $(wildcard tests/unit/test_*.c))
BM_UNIT_NAMES := $(patsubst tests/unit/test_%.c,%,$(BM_UNIT_SRCS))
BM_TARGET_SRCS := $(sort $(wildcard tests/target/test_*.c))
BM_TARGET_NAMES := $(patsubst tests/target/test_%.c,%,$(BM_TARGET_SRCS))

# Link-time optimisation: across the core's files GCC drops and folds far
# more (a fifth of the flash), but inlining whole call chains would merge
# their frames and deepen the stack; the two limits keep any inlining from
# growing a frame past 64 bytes, so the static stack bound stays below the
# separately compiled one (boards/README.md has the figures).
BM_LTO := -flto=auto --param large-stack-frame=64 --param large-stack-frame-growth=100
# The C library's hooks (_write, _exit, stdout) are referenced only from
# libc.a, which LTO does not see: compiled without it, they stay linkable.
%_stubs.o: BM_LTO :=

# Flags of board $(1): its CPU, size-optimised, sections for --gc-sections,
# with the board's small config (bm_cflags) or the core's default limits
# (bm_cflags_default: the unit tests are written against those).
bm_cflags_default = $(CSTD) $(WARN) $($(1)_CPU_FLAGS) $(BM_ARCH_FLAGS_$(call bm_arch,$(1))) -Os -g \
	-ffunction-sections -fdata-sections $(BM_LTO)
bm_cflags = $(call bm_cflags_default,$(1)) -include boards/$(1)/el_board_config.h
BM_INCLUDES = -Icore -Iport/baremetal -Iboards/$(1) -Iboards/common -Iexamples/firmware
# Link board $(1) with stack $(2) and heap $(3) bytes and C library $(4).
# The unit-test image (the core's default limits) may use a board's larger
# memory: boards/NAME/linker-unit.ld when there is one.
bm_ld = $(if $(and $(filter unit.elf,$(@F)),$(wildcard boards/$(1)/linker-unit.ld)),boards/$(1)/linker-unit.ld,boards/$(1)/linker.ld)
bm_link = $(call bm_cc,$(1)) $($(1)_CPU_FLAGS) $(BM_ARCH_FLAGS_$(call bm_arch,$(1))) -Os $(BM_LTO) -nostartfiles -T $(call bm_ld,$(1)) -Lboards \
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
BM_PORT_OBJS_$(1) := $$(patsubst %.S,$$(BM_DIR_$(1))/fs/%.o,$$(patsubst %.c,$$(BM_DIR_$(1))/fs/%.o,\
	$$(call bm_port_srcs,$(1))))
BM_FW_OBJS_$(1) := $$(patsubst %.c,$$(BM_DIR_$(1))/fs/%.o,$$(BM_FW_LIB_SRCS))

# Freestanding: the core, the port, the board and the firmware example.
$$(BM_DIR_$(1))/fs/%.o: %.c $$(BM_HDRS) boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$(call bm_cc,$(1)) $$(call bm_cflags,$(1)) -ffreestanding $$(call BM_INCLUDES,$(1)) -c $$< -o $$@

# Assembly (a RISC-V board's entry), the same for every image of the board.
# Two rules: a pattern rule with two targets would be one recipe making both.
$$(BM_DIR_$(1))/fs/%.o: %.S boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$(call bm_cc,$(1)) $$($(1)_CPU_FLAGS) -g -c $$< -o $$@
$$(BM_DIR_$(1))/dfs/%.o: %.S boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$(call bm_cc,$(1)) $$($(1)_CPU_FLAGS) -g -c $$< -o $$@

# Hosted on the C library: test code (printf through semihosting).
$$(BM_DIR_$(1))/test/%.o: %.c $$(BM_HDRS) boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$(call bm_cc,$(1)) $$(call bm_cflags,$(1)) $$(call BM_INCLUDES,$(1)) -Itests/lib -Itests/target \
		-c $$< -o $$@

# One node: what `make size` measures.
$$(BM_DIR_$(1))/node.elf: $$(BM_CORE_OBJS_$(1)) $$(BM_PORT_OBJS_$(1)) \
		$$(BM_DIR_$(1))/fs/examples/firmware/el_fw_client.o \
		$$(BM_DIR_$(1))/fs/examples/firmware/node_main.o boards/$(1)/linker.ld
	$$(call say,ARMLD,$$@)
	$$(Q)$$(call bm_link,$(1),$$($(1)_STACK),0,$$(BM_LIBC_NODE_$$(call bm_arch,$(1))))

# The three-node firmware example.
$$(BM_DIR_$(1))/cluster.elf: $$(BM_CORE_OBJS_$(1)) $$(BM_PORT_OBJS_$(1)) $$(BM_FW_OBJS_$(1)) \
		$$(BM_DIR_$(1))/fs/examples/firmware/cluster_main.o boards/$(1)/linker.ld
	$$(call say,ARMLD,$$@)
	$$(Q)$$(call bm_link,$(1),8192,0,$$(BM_LIBC_NODE_$$(call bm_arch,$(1))))

BM_TEST_LIB_OBJS_$(1) := $$(BM_CORE_OBJS_$(1)) $$(BM_PORT_OBJS_$(1)) \
	$$(patsubst %.c,$$(BM_DIR_$(1))/test/%.o,tests/target/target_common.c $$(BM_STUBS_$$(call bm_arch,$(1))))

$$(BM_DIR_$(1))/gen/unit_main.c: $$(BM_UNIT_SRCS) mk/boards.mk
	$$(call bm_gen_main,$$(BM_UNIT_NAMES),unit)
$$(BM_DIR_$(1))/gen/target_main.c: $$(BM_TARGET_SRCS) mk/boards.mk
	$$(call bm_gen_main,$$(BM_TARGET_NAMES),target)

# The core's unit tests (tests/unit), built for the board with the default
# limits, as on the host (the board has 4 MiB of RAM for them).
$$(BM_DIR_$(1))/dfs/%.o: %.c $$(BM_HDRS) boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$(call bm_cc,$(1)) $$(call bm_cflags_default,$(1)) -ffreestanding $$(call BM_INCLUDES,$(1)) -c $$< -o $$@
$$(BM_DIR_$(1))/dtest/%.o: %.c $$(BM_HDRS) boards/$(1)/board.mk
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$(call bm_cc,$(1)) $$(call bm_cflags_default,$(1)) $$(call BM_INCLUDES,$(1)) -Itests/lib -Itests/target \
		-c $$< -o $$@
$$(BM_DIR_$(1))/dtest/gen/%.o: $$(BM_DIR_$(1))/gen/%.c $$(BM_HDRS)
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$(call bm_cc,$(1)) $$(call bm_cflags_default,$(1)) $$(call BM_INCLUDES,$(1)) -Itests/lib -Itests/target \
		-c $$< -o $$@
$$(BM_DIR_$(1))/unit.elf: $$(patsubst %.S,$$(BM_DIR_$(1))/dfs/%.o,$$(patsubst %.c,$$(BM_DIR_$(1))/dfs/%.o,\
		$$(BM_CORE_SRCS) $$(call bm_port_srcs,$(1)))) \
		$$(patsubst %.c,$$(BM_DIR_$(1))/dtest/%.o,tests/target/target_common.c $$(BM_STUBS_$$(call bm_arch,$(1)))) \
		$$(BM_DIR_$(1))/dtest/gen/unit_main.o \
		$$(patsubst %.c,$$(BM_DIR_$(1))/dtest/%.o,$$(BM_UNIT_SRCS)) boards/$(1)/linker.ld
	$$(call say,ARMLD,$$@)
	$$(Q)$$(call bm_link,$(1),0x40000,0x40000,$$(BM_LIBC_TEST_$$(call bm_arch,$(1))))

# Target-only tests (tests/target): the port, and the cluster.
$$(BM_DIR_$(1))/target.elf: $$(BM_TEST_LIB_OBJS_$(1)) $$(BM_FW_OBJS_$(1)) \
		$$(BM_DIR_$(1))/test/gen/target_main.o \
		$$(patsubst %.c,$$(BM_DIR_$(1))/test/%.o,$$(BM_TARGET_SRCS)) boards/$(1)/linker.ld
	$$(call say,ARMLD,$$@)
	$$(Q)$$(call bm_link,$(1),0x10000,0x10000,$$(BM_LIBC_TEST_$$(call bm_arch,$(1))))

# Images that must fail in a known way (tests/target/check-harness.sh).
.SECONDARY: $$(patsubst %,$$(BM_DIR_$(1))/test/tests/target/selftest_%.o,fail panic fault unaligned)
$$(BM_DIR_$(1))/selftest-%.elf: $$(BM_TEST_LIB_OBJS_$(1)) \
		$$(BM_DIR_$(1))/test/tests/target/selftest_%.o boards/$(1)/linker.ld
	$$(call say,ARMLD,$$@)
	$$(Q)$$(call bm_link,$(1),0x4000,0x4000,$$(BM_LIBC_TEST_$$(call bm_arch,$(1))))

# The generated mains live under the build dir; compile them from there.
$$(BM_DIR_$(1))/test/gen/%.o: $$(BM_DIR_$(1))/gen/%.c $$(BM_HDRS)
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$(call bm_cc,$(1)) $$(call bm_cflags,$(1)) $$(call BM_INCLUDES,$(1)) -Itests/lib -Itests/target \
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
	@$(BM_SIZE_$(call bm_arch,$(BOARD))) $^
ALL_TARGETS += firmware
# The three-node example under QEMU (boards that QEMU models).
run-firmware: $(BUILD)/boards/$(BOARD)/cluster.elf
	@test -n "$($(BOARD)_QEMU)" || { echo "QEMU has no model of $(BOARD)"; exit 1; }
	tests/target/qemu-run.sh $(call bm_qemu,$(BOARD)) $< 60
else
.PHONY: run-firmware
run-firmware:
	@echo "make run-firmware needs a board: make BOARD=NAME run-firmware, NAME one of:" \
		"$(BM_BOARDS) (QEMU models: $(strip $(foreach b,$(BM_BOARDS),$(if $($(b)_QEMU),$(b)))))"; exit 2
endif

# ---- make size ----
# The sizeof table, then every board (even after one failed); fail if any did.
size:
	@tests/sizes.sh $(BUILD)
	@rc=0; for b in $(BM_BOARDS); do \
		$(MAKE) --no-print-directory size-$$b || rc=1; done; exit $$rc

# ---- QEMU suites ----
# Every board QEMU models runs the core's unit tests and the target suites
# (port and three-node cluster); the harness self-tests prove, per
# architecture, that a failure, a panic and a fault end the run visibly.
# mps2-an385 keeps the suites' plain names; other boards add their own.
BM_QEMU_BOARDS := $(foreach b,$(BM_BOARDS),$(if $($(b)_QEMU),$(b)))
bm_suffix = $(if $(filter mps2-an385,$(1)),,-$(1))

define bm_qemu_rules
.PHONY: test-target-harness$(call bm_suffix,$(1)) test-target-unit$(call bm_suffix,$(1)) \
	test-target-cluster$(call bm_suffix,$(1))
test-target-harness$(call bm_suffix,$(1)): $$(patsubst %,$$(BUILD)/boards/$(1)/%.elf,\
		selftest-fail selftest-panic selftest-fault selftest-unaligned node)
	@tests/run-suite.sh $$(BM_RESULTS) target-harness$(call bm_suffix,$(1)) \
		tests/target/check-harness.sh $(call bm_qemu,$(1)) $$(BUILD)/boards/$(1)
test-target-unit$(call bm_suffix,$(1)): $$(BUILD)/boards/$(1)/unit.elf
	@tests/run-suite.sh $$(BM_RESULTS) target-unit$(call bm_suffix,$(1)) \
		tests/target/qemu-run.sh $(call bm_qemu,$(1)) $$< $$(BM_QEMU_SECS)
test-target-cluster$(call bm_suffix,$(1)): $$(BUILD)/boards/$(1)/target.elf
	@tests/run-suite.sh $$(BM_RESULTS) target-port-cluster$(call bm_suffix,$(1)) \
		tests/target/qemu-run.sh $(call bm_qemu,$(1)) $$< $$(BM_QEMU_SECS)
BM_SUITES += test-target-harness$(call bm_suffix,$(1)) test-target-unit$(call bm_suffix,$(1)) \
	test-target-cluster$(call bm_suffix,$(1))
SERIAL_TESTS += test-target-cluster$(call bm_suffix,$(1))
SERIAL_PREREQS += $$(BUILD)/boards/$(1)/target.elf
endef
BM_SUITES :=
$(foreach b,$(BM_QEMU_BOARDS),$(eval $(call bm_qemu_rules,$(b))))

.PHONY: test-board-size test-baremetal-rules target-tests
test-board-size: $(foreach b,$(BM_BOARDS),$(BUILD)/boards/$(b)/node.elf)
	@tests/run-suite.sh $(BM_RESULTS) board-size boards/common/size-all.sh \
		$(foreach b,$(BM_BOARDS),"$(b) $(BUILD)/boards/$(b)/node.elf $($(b)_FLASH_BUDGET) $($(b)_RAM_BUDGET) $($(b)_STACK)")

test-baremetal-rules: $(foreach b,$(BM_BOARDS),$(BUILD)/boards/$(b)/node.elf)
	@tests/run-suite.sh $(BM_RESULTS) baremetal-rules tests/target/check-baremetal.sh $^

BM_SUITES += test-board-size test-baremetal-rules
# Only the board suites, into their own results directory.
target-tests:
	@rm -rf $(BUILD)/results-target && mkdir -p $(BUILD)/results-target
	@EL_TEST_ALL=1 $(MAKE) --no-print-directory -k BM_RESULTS=$(BUILD)/results-target $(BM_SUITES) || \
		echo "build 0 1 2 0" >$(BUILD)/results-target/build-failed
	@tests/summary.sh $(BUILD)/results-target
TESTS += $(BM_SUITES)
