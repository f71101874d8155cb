# mk/linux-boards.mk - ARM Linux boards (boards/linux-*): the core's unit
# tests (Raft, lock table, node, codecs, fence kit) cross-compiled with
# Debian's cross compilers and run under qemu-user in `make test`.
#
#   make linux-boards        build them
#   make test-linux-boards   run them (also part of `make test`)
#
# Each boards/linux-NAME/linux.mk sets linux-NAME_CC (the cross compiler),
# linux-NAME_QEMU (the qemu-user binary) and linux-NAME_FLAGS. Binaries are
# static, so qemu-user needs no target root.

LINUX_BOARDS := $(sort $(patsubst boards/%/linux.mk,%,$(wildcard boards/*/linux.mk)))
include $(wildcard boards/*/linux.mk)

define linux_board_rules
$$(BUILD)/$(1)/unit: $$(CORE_SRCS) $$(CORE_HDRS) $$(UNIT_SRCS) $$(UNIT_MAIN) $$(TEST_LIB_SRCS) \
		tests/lib/el_test.h boards/$(1)/linux.mk
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)
	$$(Q)$$($(1)_CC) $$(HOST_CFLAGS) $$($(1)_FLAGS) -static $$(INCLUDES) \
		$$(CORE_SRCS) $$(UNIT_SRCS) $$(UNIT_MAIN) $$(TEST_LIB_SRCS) -o $$@

.PHONY: test-unit-$(1)
test-unit-$(1): $$(BUILD)/$(1)/unit
	@tests/run-suite.sh $$(BUILD)/results unit-$(1) $$($(1)_QEMU) $$<
TESTS += test-unit-$(1)
endef

$(foreach b,$(LINUX_BOARDS),$(eval $(call linux_board_rules,$(b))))

.PHONY: linux-boards test-linux-boards
linux-boards: $(foreach b,$(LINUX_BOARDS),$(BUILD)/$(b)/unit)
test-linux-boards: $(foreach b,$(LINUX_BOARDS),test-unit-$(b))
