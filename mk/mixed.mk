# mk/mixed.mk - a mixed cluster: two edgelockd and one firmware node under
# QEMU (mps2-an385), the firmware's UART relayed to the peer network
# (docs/mixed-cluster.md).
#
#   make mixed                 the small-profile edgelockd, the relay, both firmware images
#   make run-mixed             the cluster on loopback in the foreground, Ctrl-C stops it
#   make test-mixed-cluster    the cluster suite (mixed-cluster)
#   make test-mixed-size       the firmware images against the board's node budget
#   make test-mixed-frame      host unit tests of the UART framing (SLIP + CRC-32)
#   make test-fuzz-uart-frame  its fuzz target: seed corpus + a fixed seeded run
#   make fuzz-uart-frame FUZZ_SECONDS=n
#   make test-daemon-table-full  three small-profile daemons, their 16 locks
#                              filled: the leader says the table is full

MIXED_FRAME_SRCS := port/baremetal/el_bm_frame.c
MIXED_FRAME_HDRS := port/baremetal/el_bm_frame.h

$(BUILD)/host/test_uart_frame: tests/mixed/test_frame.c $(MIXED_FRAME_SRCS) $(MIXED_FRAME_HDRS) \
		tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) -Iport/baremetal -Itests/lib \
		tests/mixed/test_frame.c $(MIXED_FRAME_SRCS) -o $@

$(BUILD)/fuzz/fuzz_uart_frame: tests/fuzz/fuzz_uart_frame.c $(MIXED_FRAME_SRCS) $(MIXED_FRAME_HDRS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -Iport/baremetal $< $(MIXED_FRAME_SRCS) -o $@

.PHONY: test-mixed-frame test-fuzz-uart-frame fuzz-uart-frame
test-mixed-frame: $(BUILD)/host/test_uart_frame
	@tests/run-suite.sh $(BUILD)/results mixed-frame $<
test-fuzz-uart-frame: $(BUILD)/fuzz/fuzz_uart_frame
	@FUZZ_TARGETS=uart_frame FUZZ_RUNS=100000 tests/run-suite.sh $(BUILD)/results fuzz-uart-frame \
		tests/fuzz/run.sh $(BUILD)/fuzz
fuzz-uart-frame: $(BUILD)/fuzz/fuzz_uart_frame
	@FUZZ_TARGETS=uart_frame tests/fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS)
fuzz: fuzz-uart-frame
TESTS += test-mixed-frame test-fuzz-uart-frame

# ---- the firmware node (mps2-an385) ----
#   make mixed-firmware   build/boards/mps2-an385/mixed-node.elf
#   make test-mixed-size  its flash and RAM against the board's node budget
MIXED_BOARD := mps2-an385
MIXED_FW := $(BUILD)/boards/$(MIXED_BOARD)/mixed-node.elf
MIXED_UART_SRCS := $(sort $(wildcard port/baremetal/uart/*.c))
MIXED_FW_OBJS = $(BM_CORE_OBJS_$(MIXED_BOARD)) $(BM_PORT_OBJS_$(MIXED_BOARD)) \
	$(patsubst %.c,$(BUILD)/boards/$(MIXED_BOARD)/fs/%.o,$(MIXED_UART_SRCS) \
		examples/firmware/mixed_node_main.c)

$(patsubst %.c,$(BUILD)/boards/$(MIXED_BOARD)/fs/%.o,$(MIXED_UART_SRCS) \
	examples/firmware/mixed_node_main.c): $(wildcard port/baremetal/uart/*.h)

$(MIXED_FW): $$(MIXED_FW_OBJS) boards/$(MIXED_BOARD)/linker.ld
	$(call say,ARMLD,$@)
	$(Q)$(call bm_link,$(MIXED_BOARD),$($(MIXED_BOARD)_STACK),0,$(BM_LIBC_NODE_cortex-m))

# The same node that joins instead of bootstrapping (EL_FW_JOIN=1): how a
# firmware node whose RAM store was lost comes back (docs/mixed-cluster.md).
MIXED_FW_JOIN := $(BUILD)/boards/$(MIXED_BOARD)/mixed-node-join.elf
$(BUILD)/boards/$(MIXED_BOARD)/join/mixed_node_main.o: examples/firmware/mixed_node_main.c \
		$(BM_HDRS) $(wildcard port/baremetal/uart/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(call bm_cc,$(MIXED_BOARD)) $(call bm_cflags,$(MIXED_BOARD)) -ffreestanding -DEL_FW_JOIN=1 \
		$(call BM_INCLUDES,$(MIXED_BOARD)) -c $< -o $@
$(MIXED_FW_JOIN): $$(filter-out %/mixed_node_main.o,$$(MIXED_FW_OBJS)) \
		$(BUILD)/boards/$(MIXED_BOARD)/join/mixed_node_main.o boards/$(MIXED_BOARD)/linker.ld
	$(call say,ARMLD,$@)
	$(Q)$(call bm_link,$(MIXED_BOARD),$($(MIXED_BOARD)_STACK),0,$(BM_LIBC_NODE_cortex-m))

.PHONY: mixed-firmware test-mixed-size
mixed-firmware: $(MIXED_FW) $(MIXED_FW_JOIN)
# Its indirect calls for the stack bound (boards/common/stack-bound.sh): LTO
# inlines the ready loop into the reset handler, so its send hook (the only
# io hook) is called from there; the rest as in node.elf.
MIXED_STACK_INDIRECT := el_reset_handler=hook_send,check_snapshot el_bm_drive_node=hook_send \
	compact_to=el_node__write_snapshot el_raft__handle_snapshot=check_snapshot
test-mixed-size: $(MIXED_FW) $(MIXED_FW_JOIN)
	@EL_STACK_INDIRECT="$(MIXED_STACK_INDIRECT)" tests/run-suite.sh $(BUILD)/results mixed-size \
		boards/common/size-all.sh $(foreach f,$^,"$(MIXED_BOARD) $(f) $($(MIXED_BOARD)_FLASH_BUDGET) \
		$($(MIXED_BOARD)_RAM_BUDGET) $($(MIXED_BOARD)_STACK)")
TESTS += test-mixed-size

# ---- the Linux side: edgelockd with the boards' limits, and the relay ----
# Every member of a mixed cluster runs at the smallest member's limits
# (cmd/edgelockd/el_small_daemon_config.h), so the daemon's core, port/posix
# and net/ are compiled again for that profile under build/small/.
#   build/small/bin/edgelockd, build/small/bin/edgelock-uart-relay
SMALL_FLAGS := -DEL_CONFIG_FILE='"el_small_daemon_config.h"' -Icmd/edgelockd -Iboards/common
SMALL_HDRS = $(GW_HDRS) boards/common/el_small_config.h cmd/edgelockd/el_small_daemon_config.h
SMALL_EDGELOCKD := $(BUILD)/small/bin/edgelockd
UART_RELAY := $(BUILD)/small/bin/edgelock-uart-relay
RELAY_SRCS := $(sort $(wildcard cmd/edgelock-uart-relay/*.c))
SMALL_CORE_OBJS = $(patsubst core/%.c,$(BUILD)/small/core/%.o,$(CORE_SRCS))
SMALL_POSIX_OBJS = $(patsubst port/posix/%.c,$(BUILD)/small/port/posix/%.o,$(POSIX_SRCS))
SMALL_NET_OBJS = $(patsubst net/%.c,$(BUILD)/small/net/%.o,$(NET_SRCS))

$(BUILD)/small/core/%.o: core/%.c $$(SMALL_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(CORE_CFLAGS) $(OPT) $(SMALL_FLAGS) -Icore -c $< -o $@
$(BUILD)/small/port/posix/%.o: port/posix/%.c $$(SMALL_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(SMALL_FLAGS) $(POSIX_INCLUDES) -c $< -o $@
$(BUILD)/small/%.o: %.c $$(SMALL_HDRS) $(MIXED_FRAME_HDRS) $(wildcard cmd/edgelock-uart-relay/*.h)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(SMALL_FLAGS) $(NET_INCLUDES) -Iport/baremetal \
		-Icmd/edgelock-uart-relay -c $< -o $@

$(SMALL_EDGELOCKD): $$(patsubst %.c,$(BUILD)/small/%.o,$$(EDGELOCKD_SRCS)) $$(SMALL_NET_OBJS) \
		$$(SMALL_POSIX_OBJS) $$(SMALL_CORE_OBJS) $(REVISION_O)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $^ $(NET_LIBS) -o $@

$(UART_RELAY): $$(patsubst %.c,$(BUILD)/small/%.o,$(RELAY_SRCS) $(MIXED_FRAME_SRCS)) \
		$$(SMALL_NET_OBJS) $$(SMALL_POSIX_OBJS) $$(SMALL_CORE_OBJS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $^ $(NET_LIBS) -o $@

.PHONY: mixed
mixed: $(SMALL_EDGELOCKD) $(UART_RELAY) $(MIXED_FW) $(MIXED_FW_JOIN)

# The mixed cluster on loopback in the foreground (tools/run-mixed.sh).
.PHONY: run-mixed
run-mixed: deps
	@$(MAKE) --no-print-directory mixed certs $(EDGELOCK_CLI)
	@tools/run-mixed.sh $(BUILD)

# Two daemons and the firmware node: locks through the CLI while a daemon
# and then the firmware are killed, the firmware re-added as a new member
# (tests/mixed/mixed_test.py). One run, with the relay under ASan/UBSan (the
# daemons' code is sanitized by the daemon suites).
UART_RELAY_SAN := $(BUILD)/small-san/bin/edgelock-uart-relay
$(UART_RELAY_SAN): $(RELAY_SRCS) $(MIXED_FRAME_SRCS) $$(NET_SRCS) $$(POSIX_SRCS) $(CORE_SRCS) \
		$$(SMALL_HDRS) $(wildcard cmd/edgelock-uart-relay/*.h)
	@mkdir -p $(@D)
	$(call say,CCLD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(SMALL_FLAGS) $(NET_INCLUDES) $(POSIX_INCLUDES) \
		-Iport/baremetal -Icmd/edgelock-uart-relay $(filter %.c,$^) $(NET_LIBS) -o $@

.PHONY: test-mixed-cluster
test-mixed-cluster: $(SMALL_EDGELOCKD) $(UART_RELAY_SAN) $(MIXED_FW) $(MIXED_FW_JOIN) \
		$$(EDGELOCK_CLI) certs
	@UART_RELAY=$(UART_RELAY_SAN) tests/run-suite.sh $(BUILD)/results mixed-cluster \
		/usr/bin/python3 tests/mixed/mixed_test.py $(BUILD)
TESTS += test-mixed-cluster
SERIAL_TESTS += test-mixed-cluster
SERIAL_PREREQS += $(SMALL_EDGELOCKD) $(UART_RELAY_SAN) $(MIXED_FW) $(MIXED_FW_JOIN)

# A lock table full for everyone is logged and counted
# (tests/daemon/table_full_test.py, about 3 s): the small profile's 16
# locks fill at once where the gateway's 32,768 would take a while.
.PHONY: test-daemon-table-full
test-daemon-table-full: $(SMALL_EDGELOCKD) $(EDGELOCK_CLI) certs
	@tests/run-suite.sh $(BUILD)/results daemon-table-full /usr/bin/python3 \
		tests/daemon/table_full_test.py $(BUILD)
TESTS += test-daemon-table-full
