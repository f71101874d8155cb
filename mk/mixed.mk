# mk/mixed.mk - a mixed cluster: two edgelockd and one firmware node under
# QEMU (mps2-an385), the firmware's UART relayed to the peer network
# (docs/mixed-cluster.md).
#
#   make test-mixed-frame        host unit tests of the UART framing (SLIP + CRC-32)
#   make test-fuzz-uart-frame    its fuzz target: seed corpus + a fixed seeded run
#   make fuzz-uart-frame FUZZ_SECONDS=n

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
	@FUZZ_TARGETS=uart_frame tests/run-suite.sh $(BUILD)/results fuzz-uart-frame \
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

.PHONY: mixed-firmware test-mixed-size
mixed-firmware: $(MIXED_FW)
ALL_TARGETS += $(MIXED_FW)
# Its indirect calls for the stack bound (boards/common/stack-bound.sh): LTO
# inlines the ready loop into the reset handler, so its send hook (the only
# io hook) is called from there; the rest as in node.elf.
MIXED_STACK_INDIRECT := el_reset_handler=hook_send,check_snapshot el_bm_drive_node=hook_send \
	compact_to=el_node__write_snapshot el_raft__handle_snapshot=check_snapshot
test-mixed-size: $(MIXED_FW)
	@EL_STACK_INDIRECT="$(MIXED_STACK_INDIRECT)" tests/run-suite.sh $(BUILD)/results mixed-size boards/common/size-all.sh \
		"$(MIXED_BOARD) $(MIXED_FW) $($(MIXED_BOARD)_FLASH_BUDGET) $($(MIXED_BOARD)_RAM_BUDGET) $($(MIXED_BOARD)_STACK)"
TESTS += test-mixed-size
