# mk/linux-boards.mk - ARM Linux boards (boards/linux-*): the core's unit
# tests (Raft, lock table, node, codecs, fence kit) cross-compiled with
# Debian's cross compilers and run under qemu-user in `make test`.
#
#   make linux-boards        build them
#   make test-linux-boards   run them (also part of `make test`)
#
# Each boards/linux-NAME/linux.mk sets linux-NAME_CC (the cross compiler),
# linux-NAME_QEMU (the qemu-user binary) and linux-NAME_FLAGS. The unit-test
# binaries are static, so qemu-user needs no target root.
#
# A board that also sets linux-NAME_DAEMON := yes (and linux-NAME_AR) gets
# edgelockd, the edgelock CLI and libedgelock (.a and .so) cross-built under
# build/linux-NAME/ against Debian's multiarch -dev packages of that
# architecture (tools/debian-packages.txt, `pkg:ARCH` lines), dynamically
# linked: qemu-user finds the loader and libraries that libc6:ARCH installs in
# the multiarch paths (or, with linux-NAME_SYSROOT_PKGS, a build-local
# sysroot: see below). Its suite daemon-linux-NAME runs that edgelockd under
# qemu-user beside two x86-64 daemons (tests/daemon/linux_board_test.py).
#
#   make linux-boards-daemon        build them
#   make test-daemon-linux-NAME     run one board's suite (part of `make test`)

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

# A board whose architecture apt cannot add here lists its libraries' Debian
# packages in linux-NAME_SYSROOT_PKGS instead (and linux-NAME_DEB_ARCH): they
# are unpacked into build/linux-NAME/sysroot (tools/deb-sysroot.sh), the
# build links against that copy, and qemu-user finds the loader in the cross
# libc's directory and the libraries in the sysroot (linux-NAME_QEMU_RUN).
define linux_board_sysroot_rules
$(1)_TRIPLE := $(patsubst %-gcc,%,$($(1)_CC))
$(1)_SYSROOT := $(abspath $(BUILD))/$(1)/sysroot
$(1)_STAMP := $(BUILD)/$(1)/sysroot/.unpacked
$(1)_INC := -I$$($(1)_SYSROOT)/usr/include
$(1)_LDDIRS := -L$$($(1)_SYSROOT)/usr/lib/$$($(1)_TRIPLE) \
	-Wl,-rpath-link,$$($(1)_SYSROOT)/usr/lib/$$($(1)_TRIPLE) -Wl,-rpath-link,$$($(1)_SYSROOT)/lib/$$($(1)_TRIPLE)
$(1)_QEMU_RUN := $($(1)_QEMU) -L /usr/$$($(1)_TRIPLE) \
	-E LD_LIBRARY_PATH=$$($(1)_SYSROOT)/usr/lib/$$($(1)_TRIPLE):$$($(1)_SYSROOT)/lib/$$($(1)_TRIPLE)

$$($(1)_STAMP): boards/$(1)/linux.mk tools/deb-sysroot.sh
	$$(call say,DEBS,$$(@D))
	$$(Q)tools/deb-sysroot.sh $($(1)_DEB_ARCH) $$(@D) $($(1)_SYSROOT_PKGS) && touch $$@
endef

# edgelockd, the CLI and libedgelock of a board (linux-NAME_DAEMON := yes).
# The lists of sources come from fragments read later (net.mk, posix.mk):
# recursive variables, and prerequisites expanded a second time ($$$$).
# core/ keeps its freestanding flags; the client library is built
# position-independent once, for both its .a and its .so.
define linux_board_daemon_rules
$(1)_QEMU_RUN ?= $($(1)_QEMU)
$(1)_GW_OBJS = $$(patsubst %.c,$$(BUILD)/$(1)/gw/%.o,$$(CORE_SRCS) $$(POSIX_SRCS) $$(NET_SRCS) \
	$$(EDGELOCKD_SRCS))
$(1)_CLIENT_OBJS = $$(patsubst %.c,$$(BUILD)/$(1)/client/%.o,$$(CLIENT_SRCS))
$(1)_DAEMON_BINS = $$(BUILD)/$(1)/bin/edgelockd $$(BUILD)/$(1)/bin/edgelock \
	$$(BUILD)/$(1)/lib/libedgelock.a $$(BUILD)/$(1)/lib/libedgelock.so

$$(BUILD)/$(1)/gw/core/%.o: core/%.c $$$$(GW_HDRS) boards/$(1)/linux.mk
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$($(1)_CC) $$(CORE_CFLAGS) $$(OPT) $$($(1)_FLAGS) $$(GW_FLAGS) -Icore -c $$< -o $$@
$$(BUILD)/$(1)/gw/%.o: %.c $$$$(GW_HDRS) boards/$(1)/linux.mk | $$($(1)_STAMP)
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$($(1)_CC) $$(HOST_CFLAGS) $$($(1)_FLAGS) $$(GW_FLAGS) $$(POSIX_INCLUDES) -Inet $$($(1)_INC) \
		-c $$< -o $$@
$$(BUILD)/$(1)/client/%.o: %.c $$(CLIENT_HDRS) cmd/edgelockd/el_gateway_config.h boards/$(1)/linux.mk \
		| $$($(1)_STAMP)
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$($(1)_CC) $$(HOST_CFLAGS) $$($(1)_FLAGS) -fPIC $$(CLIENT_FLAGS) $$($(1)_INC) -c $$< -o $$@

$$(BUILD)/$(1)/gen/revision.o: $$(REVISION_C) boards/$(1)/linux.mk | $$($(1)_STAMP)
	@mkdir -p $$(@D)
	$$(call say,CC,$$@)
	$$(Q)$$($(1)_CC) $$(HOST_CFLAGS) $$($(1)_FLAGS) -c $$< -o $$@
$$(BUILD)/$(1)/bin/edgelockd: $$$$($(1)_GW_OBJS) $$(BUILD)/$(1)/gen/revision.o
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)
	$$(Q)$$($(1)_CC) $$^ $$($(1)_LDDIRS) $$(NET_LIBS) -o $$@
$$(BUILD)/$(1)/lib/libedgelock.a: $$$$($(1)_CLIENT_OBJS)
	@mkdir -p $$(@D)
	$$(call say,AR,$$@)
	$$(Q)rm -f $$@ && $$($(1)_AR) rcs $$@ $$^
$$(BUILD)/$(1)/lib/libedgelock.so: $$$$($(1)_CLIENT_OBJS)
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)
	$$(Q)$$($(1)_CC) -shared $$^ $$($(1)_LDDIRS) $$(CLIENT_LIBS) -o $$@
$$(BUILD)/$(1)/bin/edgelock: $$(EDGELOCK_CLI_SRCS) $$(EDGELOCK_CLI_HDRS) \
		$$(BUILD)/$(1)/lib/libedgelock.a $$(CLIENT_HDRS) $$(BUILD)/$(1)/gen/revision.o
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)
	$$(Q)$$($(1)_CC) $$(HOST_CFLAGS) $$($(1)_FLAGS) $$(CLIENT_FLAGS) $$(EDGELOCK_CLI_INC) \
		$$($(1)_INC) $$(EDGELOCK_CLI_SRCS) $$(BUILD)/$(1)/gen/revision.o $$(BUILD)/$(1)/lib/libedgelock.a $$($(1)_LDDIRS) \
		$$(CLIENT_LIBS) -linih -o $$@

# This board's edgelockd under qemu-user in a cluster with two x86-64 nodes,
# driven by the x86-64 CLI and this board's CLI (its libedgelock).
.PHONY: test-daemon-$(1)
test-daemon-$(1): $$$$($(1)_DAEMON_BINS) $$(EDGELOCKD) $$(EDGELOCK_CLI) certs
	@tests/run-suite.sh $$(BUILD)/results daemon-$(1) /usr/bin/python3 \
		tests/daemon/linux_board_test.py $$(BUILD) $(1) $$($(1)_QEMU_RUN)
TESTS += test-daemon-$(1)
SERIAL_TESTS += test-daemon-$(1)
SERIAL_PREREQS += $$($(1)_DAEMON_BINS)
endef

LINUX_DAEMON_BOARDS := $(foreach b,$(LINUX_BOARDS),$(if $(filter yes,$($(b)_DAEMON)),$(b)))
$(foreach b,$(LINUX_DAEMON_BOARDS),$(if $($(b)_SYSROOT_PKGS),$(eval $(call linux_board_sysroot_rules,$(b)))))
$(foreach b,$(LINUX_DAEMON_BOARDS),$(eval $(call linux_board_daemon_rules,$(b))))

.PHONY: linux-boards-daemon
linux-boards-daemon: $(foreach b,$(LINUX_DAEMON_BOARDS),$$($(b)_DAEMON_BINS))
