# mk/client.mk - libedgelock (net/client/, the public header net/edgelock.h)
# and the edgelock CLI (cmd/edgelock), and their tests on real daemons.
#
#   make libedgelock     build/lib/libedgelock.a and libedgelock.so
#   make edgelock        build/bin/edgelock
#   make test-client     the CLI and library against three daemons over TLS
#   make test-lib-fence  a program using el_fence_* links libedgelock.a alone,
#                        and a C++ one using the library (lib-cxx)
#
# The library carries its own copy of the client codec, built with the
# daemon's profile (el_gateway_config.h) so names, values and lists have the
# daemon's limits.

# core/fence.c: the fence kit (core/el_fence.h) is the library's too, so a
# resource server linking libedgelock alone has el_fence_*. A program that
# also links libedgelock_core.a gets one copy: an archive member is pulled
# only for a symbol still undefined.
CLIENT_SRCS := $(sort $(wildcard net/client/*.c)) net/ident.c net/url.c net/bio.c net/resolve.c core/client_wire.c core/cbor.c core/error.c core/fence.c
CLIENT_HDRS = net/edgelock.h $(wildcard net/client/*.h) $(CORE_HDRS)
CLIENT_FLAGS = $(GW_FLAGS) -Icore -Inet -Inet/client
CLIENT_OBJS := $(patsubst %.c,$(BUILD)/client/%.o,$(CLIENT_SRCS))
CLIENT_PIC_OBJS := $(patsubst %.c,$(BUILD)/client-pic/%.o,$(CLIENT_SRCS))
LIBEDGELOCK := $(BUILD)/lib/libedgelock.a
LIBEDGELOCK_SO := $(BUILD)/lib/libedgelock.so
CLIENT_LIBS := -lmbedtls -lmbedx509 -lmbedcrypto -lpthread
EDGELOCK_CLI := $(BUILD)/bin/edgelock

$(BUILD)/client/%.o: %.c $(CLIENT_HDRS) cmd/edgelockd/el_gateway_config.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(CLIENT_FLAGS) -c $< -o $@
$(BUILD)/client-pic/%.o: %.c $(CLIENT_HDRS) cmd/edgelockd/el_gateway_config.h
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -fPIC $(CLIENT_FLAGS) -c $< -o $@

$(LIBEDGELOCK): $(CLIENT_OBJS)
	@mkdir -p $(@D)
	$(call say,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^
$(LIBEDGELOCK_SO): $(CLIENT_PIC_OBJS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) -shared $^ $(CLIENT_LIBS) -o $@

EDGELOCK_CLI_SRCS := $(sort $(wildcard cmd/edgelock/*.c)) net/ini_line.c net/backup.c port/posix/crc32c.c
EDGELOCK_CLI_HDRS = $(wildcard cmd/edgelock/*.h) net/el_ini_line.h net/el_backup.h port/posix/el_crc32c.h
EDGELOCK_CLI_INC := -Icmd/edgelock -Iport/posix
$(EDGELOCK_CLI): $(EDGELOCK_CLI_SRCS) $(EDGELOCK_CLI_HDRS) $(LIBEDGELOCK) \
		$(CLIENT_HDRS) $(REVISION_O)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(CLIENT_FLAGS) $(EDGELOCK_CLI_INC) $(EDGELOCK_CLI_SRCS) $(REVISION_O) $(LIBEDGELOCK) \
		$(CLIENT_LIBS) -linih -o $@

.PHONY: libedgelock edgelock test-client
libedgelock: $(LIBEDGELOCK) $(LIBEDGELOCK_SO)
edgelock: $(EDGELOCK_CLI)
ALL_TARGETS += $(LIBEDGELOCK) $(LIBEDGELOCK_SO) $(EDGELOCK_CLI)

# The CLI and the library on three real daemons over TLS (tests/integration).
# One client shared by threads, and a watcher (run by cli_test.py), with
# the library's sources under ASan/UBSan.
CLIENT_THREADS_TEST := $(BUILD)/bin/client-threads-test
$(CLIENT_THREADS_TEST): tests/integration/client_threads.c $$(CLIENT_SRCS) $$(CLIENT_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(CLIENT_FLAGS) $< $(CLIENT_SRCS) $(CLIENT_LIBS) -o $@

# The library's edges (tests/integration/client_safety.c): lost leases, a
# session shared by threads, deadlines, closing, refused certificates.
CLIENT_SAFETY_TEST := $(BUILD)/bin/client-safety-test
$(CLIENT_SAFETY_TEST): tests/integration/client_safety.c $$(CLIENT_SRCS) $$(CLIENT_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(CLIENT_FLAGS) $< $(CLIENT_SRCS) $(CLIENT_LIBS) -o $@

test-client: $(EDGELOCK_CLI) $(CLIENT_THREADS_TEST) $(CLIENT_SAFETY_TEST) $(BUILD)/bin/edgelockd certs \
		$$(SLOW_FSYNC)
	@tests/run-suite.sh $(BUILD)/results client-cli /usr/bin/python3 tests/integration/cli_test.py $(BUILD)
TESTS += test-client
SERIAL_TESTS += test-client
SERIAL_PREREQS += $(EDGELOCK_CLI) $(CLIENT_THREADS_TEST) $(CLIENT_SAFETY_TEST) $(BUILD)/bin/edgelockd certs

# The CLI and the library's sources under ASan/UBSan, through the steps
# where the CLI's threads and signals meet (cli_test.py, main_sanitized):
# a signal leaves by _exit while a thread is still in the library.
EDGELOCK_CLI_SAN := $(BUILD)/san/bin/edgelock
$(EDGELOCK_CLI_SAN): $(EDGELOCK_CLI_SRCS) $$(CLIENT_SRCS) $(EDGELOCK_CLI_HDRS) $$(CLIENT_HDRS) \
		$(REVISION_O)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(CLIENT_FLAGS) $(EDGELOCK_CLI_INC) \
		$(EDGELOCK_CLI_SRCS) $(CLIENT_SRCS) $(REVISION_O) $(CLIENT_LIBS) -linih -o $@

.PHONY: test-client-san
test-client-san: $(EDGELOCK_CLI_SAN) $(BUILD)/bin/edgelockd certs
	@EDGELOCK_CLI=$(EDGELOCK_CLI_SAN) tests/run-suite.sh $(BUILD)/results client-cli-asan-ubsan \
		/usr/bin/python3 tests/integration/cli_test.py $(BUILD)
TESTS += test-client-san
SERIAL_TESTS += test-client-san
SERIAL_PREREQS += $(EDGELOCK_CLI_SAN)

# The TLS link under the library (net/client/link.c) against a real mbedtls
# server, with the identity tests' certificates; and its endpoint parser's
# fuzz target.
LINK_SRCS := net/client/link.c net/resolve.c net/url.c net/bio.c core/error.c
# stalled_dns.c stands in for getaddrinfo (--wrap) to test el_resolve's deadline.
STALLED_DNS := tests/net/stalled_dns.c -Wl,--wrap=getaddrinfo
$(BUILD)/san/test_link: tests/net/test_link.c $(LINK_SRCS) net/client/el_link.h $(TEST_LIB_SRCS) \
		tests/lib/el_test.h tests/net/stalled_dns.c tests/net/stalled_dns.h net/el_resolve.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) -D_GNU_SOURCE -Icore -Inet -Inet/client -Itests/lib $< \
		$(LINK_SRCS) $(TEST_LIB_SRCS) $(CLIENT_LIBS) $(STALLED_DNS) -o $@
$(BUILD)/fuzz/fuzz_link_url: tests/fuzz/fuzz_link_url.c $(LINK_SRCS) net/client/el_link.h
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -D_GNU_SOURCE -Icore -Inet -Inet/client $< $(LINK_SRCS) \
		$(CLIENT_LIBS) -o $@

# The fence kit as a C user links it: edgelock.h, el_fence.h and
# libedgelock.a alone (a second or so).
LIB_FENCE_TEST := $(BUILD)/host/fence_link
$(LIB_FENCE_TEST): tests/integration/fence_link.c $(LIBEDGELOCK) net/edgelock.h core/el_fence.h \
		tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -Inet -Icore -Itests/lib $< $(LIBEDGELOCK) $(CLIENT_LIBS) -o $@
# The same headers as a C++ program includes them, and libedgelock.a
# linked from C++: the headers' extern "C" guards (without them the link
# fails on C++-mangled names).
LIB_CXX_TEST := $(BUILD)/host/cxx_link
$(LIB_CXX_TEST): tests/integration/cxx_link.cpp $(LIBEDGELOCK) net/edgelock.h core/el_error.h \
		core/el_fence.h tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,CXX,$@)
	$(Q)$(CXX) -std=c++11 -Wall -Wextra -Werror -Inet -Icore -Itests/lib $< $(LIBEDGELOCK) \
		$(CLIENT_LIBS) -o $@
.PHONY: test-lib-fence
test-lib-fence: $(LIB_FENCE_TEST) $(LIB_CXX_TEST)
	@tests/run-suite.sh $(BUILD)/results lib-fence $(LIB_FENCE_TEST)
	@tests/run-suite.sh $(BUILD)/results lib-cxx $(LIB_CXX_TEST)
TESTS += test-lib-fence

.PHONY: test-link
test-link: $(BUILD)/san/test_link $$(IDENT_CERTS)/ca.crt
	@tests/run-suite.sh $(BUILD)/results client-link $(BUILD)/san/test_link $(IDENT_CERTS)
TESTS += test-link
$(eval $(call fuzz_suite,link-url,$(BUILD)/fuzz/fuzz_link_url,fuzz-link-url,200000))
