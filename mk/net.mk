# mk/net.mk - net/ (the TLS transport over epoll and mbedtls, the peer hello) and the daemon's
# gateway build of the core and port/posix; the client-protocol and peer
# decoders' fuzz targets.
#
#   make edgelockd                 build/bin/edgelockd
#   make test-net                  the network layer through el_net.h (suite net-transport)
#   make test-fuzz-net             seed corpora + a fixed seeded run of each target
#   make fuzz-net FUZZ_SECONDS=n   fuzz the client/peer decoders for n s each
#
# The daemon's capacity profile (cmd/edgelockd/el_gateway_config.h) changes
# struct layouts, so the core, port/posix and net/ are compiled again for it
# under build/gw/.

GW_FLAGS := -DEL_CONFIG_FILE='"el_gateway_config.h"' -Icmd/edgelockd
NET_SRCS := $(sort $(wildcard net/*.c))
NET_HDRS := $(wildcard net/*.h)
NET_INCLUDES := -Icore -Iport/posix -Inet
NET_LIBS := -linih -lmbedtls -lmbedx509 -lmbedcrypto -lpthread

GW_CORE_OBJS = $(patsubst core/%.c,$(BUILD)/gw/core/%.o,$(CORE_SRCS))
GW_POSIX_OBJS = $(patsubst port/posix/%.c,$(BUILD)/gw/port/posix/%.o,$(POSIX_SRCS))
GW_NET_OBJS = $(patsubst net/%.c,$(BUILD)/gw/net/%.o,$(NET_SRCS))
GW_HDRS = $(CORE_HDRS) $(POSIX_HDRS) $(NET_HDRS) $(wildcard cmd/edgelockd/*.h)

$(BUILD)/gw/core/%.o: core/%.c $$(CORE_HDRS) cmd/edgelockd/el_gateway_config.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(CORE_CFLAGS) $(OPT) $(GW_FLAGS) -Icore -c $< -o $@

$(BUILD)/gw/port/posix/%.o: port/posix/%.c $$(GW_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(GW_FLAGS) $(POSIX_INCLUDES) -c $< -o $@

$(BUILD)/gw/net/%.o: net/%.c $$(GW_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(GW_FLAGS) $(NET_INCLUDES) -c $< -o $@

# Fuzzing the decoders of everything a client or a peer sends: the client
# protocol, the peer hello (Raft messages: fuzz_wire of mk/cbor.mk).
NET_FUZZ := $(BUILD)/fuzz/fuzz_client_wire $(BUILD)/fuzz/fuzz_peer_hello $(BUILD)/fuzz/fuzz_backup
$(BUILD)/fuzz/fuzz_client_wire: tests/fuzz/fuzz_client_wire.c core/cbor.c core/client_wire.c \
		$(CORE_HDRS) $(TEST_LIB_SRCS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(INCLUDES) $< core/cbor.c core/client_wire.c $(TEST_LIB_SRCS) -o $@
$(BUILD)/fuzz/fuzz_peer_hello: tests/fuzz/fuzz_peer_hello.c core/cbor.c net/peer_hello.c \
		$(CORE_HDRS) $(NET_HDRS) $(TEST_LIB_SRCS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(INCLUDES) -Inet $< core/cbor.c net/peer_hello.c $(TEST_LIB_SRCS) -o $@
# ... and the backup file's header, which `edgelockd restore` reads.
$(BUILD)/fuzz/fuzz_backup: tests/fuzz/fuzz_backup.c net/backup.c port/posix/crc32c.c net/el_backup.h
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) $(INCLUDES) -Inet -Iport/posix $< net/backup.c \
		port/posix/crc32c.c -lpthread -o $@

.PHONY: test-fuzz-net fuzz-net
test-fuzz-net: $(NET_FUZZ)
	@FUZZ_TARGETS="client_wire peer_hello backup" tests/run-suite.sh $(BUILD)/results fuzz-client-peer \
		tests/fuzz/run.sh $(BUILD)/fuzz
fuzz-net: $(NET_FUZZ)
	@FUZZ_TARGETS="client_wire peer_hello backup" tests/fuzz/run.sh $(BUILD)/fuzz $(FUZZ_SECONDS)
fuzz: fuzz-net
TESTS += test-fuzz-net

# The same under ASan/UBSan, for the daemon test's sanitizer run.
GW_SAN_CORE_OBJS = $(patsubst core/%.c,$(BUILD)/gw-san/core/%.o,$(CORE_SRCS))
GW_SAN_POSIX_OBJS = $(patsubst port/posix/%.c,$(BUILD)/gw-san/port/posix/%.o,$(POSIX_SRCS))
GW_SAN_NET_OBJS = $(patsubst net/%.c,$(BUILD)/gw-san/net/%.o,$(NET_SRCS))

$(BUILD)/gw-san/core/%.o: core/%.c $$(CORE_HDRS) cmd/edgelockd/el_gateway_config.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(CORE_CFLAGS) -O1 -g $(SANFLAGS) $(GW_FLAGS) -Icore -c $< -o $@

$(BUILD)/gw-san/port/posix/%.o: port/posix/%.c $$(GW_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(GW_FLAGS) $(POSIX_INCLUDES) -c $< -o $@

$(BUILD)/gw-san/net/%.o: net/%.c $$(GW_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(GW_FLAGS) $(NET_INCLUDES) -c $< -o $@

# The network layer through its public API alone (tests/net/test_net.c):
# el_net instances on loopback with the identity tests' certificates,
# clients through libedgelock's TLS link, under ASan/UBSan. NET_TEST_LINK is
# what net/ needs (mbedtls, el_log and el_now_ms of port/posix, el_strerror).
NET_TEST_LINK := net/net.c net/net_hs.c net/net_tls.c net/url.c net/bio.c net/resolve.c port/posix/log.c \
	port/posix/clock.c core/error.c -lmbedtls -lmbedx509 -lmbedcrypto -lpthread
NET_TEST_SRCS = $(sort $(filter %.c,$(NET_TEST_LINK)) $(LINK_SRCS) $(TEST_LIB_SRCS))
$(BUILD)/san/test_net: tests/net/test_net.c $$(NET_TEST_SRCS) $(NET_HDRS) $(CORE_HDRS) \
		net/client/el_link.h port/posix/el_platform.h tests/lib/el_test.h \
		tests/net/stalled_dns.c tests/net/stalled_dns.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) -D_GNU_SOURCE $(GW_FLAGS) -Icore -Iport/posix -Inet \
		-Inet/client -Itests/lib $< $(NET_TEST_SRCS) $(filter-out %.c,$(NET_TEST_LINK)) $(STALLED_DNS) -o $@

.PHONY: test-net
test-net: $(BUILD)/san/test_net $(IDENT_CERTS)/ca.crt
	@tests/run-suite.sh $(BUILD)/results net-transport $(BUILD)/san/test_net $(IDENT_CERTS)
TESTS += test-net
SERIAL_TESTS += test-net
SERIAL_PREREQS += $(BUILD)/san/test_net $(IDENT_CERTS)/ca.crt
