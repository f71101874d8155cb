# mk/cmd.mk - cmd/edgelockd (the daemon), dev certificates, `make run`, and
# the tests that start real daemons over TLS on loopback.
#
#   make edgelockd        build/bin/edgelockd
#   make certs            build/certs: a dev CA, node1..5, a client certificate
#   make run              three edgelockd on loopback, logs prefixed, Ctrl-C stops
#   make test-daemon      the three-daemon cluster test and the bad-input test, and the
#                         client identity / session owner / [acl] test (auth_test.py)
#   make test-daemon-certs    expired / revoked (CRL) certificates, SIGHUP reload (certs_test.py)
#   make test-daemon-metrics  Prometheus metrics scraped from a three-daemon cluster
#   make test-daemon-systemd  sd_notify READY/STATUS/WATCHDOG/STOPPING (systemd_test.py)
#   make test-sd-notify, test-fuzz-sd-env  the notify client (sd_notify.c): unit
#                         tests and a fuzz target of the environment values it reads
#   make test-daemon-ops      idle-connection floods under an open-files limit of 1024, a
#                             full disk, a slow disk, a removed node started again, a
#                             removed LOCK file, a node on another node's data_dir (ops_test.py)
#   make test-daemon-peer-queue  a follower stopped mid-snapshot under load: the
#                             leader's queue to it within peer_queue_bytes (peer_queue_test.py)
#   make test-daemon-limits   [limits]: sessions per identity, a connection flood past
#                         max_clients, requests in flight per connection, claims and
#                         watches per identity, the lease bound (limits_test.py)
#
# (The client library and the CLI add their own fragment.)

EDGELOCKD := $(BUILD)/bin/edgelockd

# Prerequisites name variables of fragments read later ($$(VAR)).
.SECONDEXPANSION:
EDGELOCKD_SRCS = $(sort $(wildcard cmd/edgelockd/*.c))
EDGELOCKD_OBJS = $(patsubst cmd/edgelockd/%.c,$(BUILD)/gw/cmd/edgelockd/%.o,$(EDGELOCKD_SRCS))
CERTS := $(BUILD)/certs

$(BUILD)/gw/cmd/edgelockd/%.o: cmd/edgelockd/%.c $$(GW_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(GW_FLAGS) $(NET_INCLUDES) -c $< -o $@

$(EDGELOCKD): $$(EDGELOCKD_OBJS) $$(GW_NET_OBJS) $$(GW_POSIX_OBJS) $$(GW_CORE_OBJS) $(REVISION_O)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $^ $(NET_LIBS) -o $@

EDGELOCKD_SAN := $(BUILD)/san/bin/edgelockd
EDGELOCKD_SAN_OBJS = $(patsubst cmd/edgelockd/%.c,$(BUILD)/gw-san/cmd/edgelockd/%.o,$(EDGELOCKD_SRCS))

$(BUILD)/gw-san/cmd/edgelockd/%.o: cmd/edgelockd/%.c $$(GW_HDRS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(GW_FLAGS) $(NET_INCLUDES) -c $< -o $@

$(EDGELOCKD_SAN): $$(EDGELOCKD_SAN_OBJS) $$(GW_SAN_NET_OBJS) $$(GW_SAN_POSIX_OBJS) $$(GW_SAN_CORE_OBJS) \
		$(REVISION_O)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(SANFLAGS) $^ $(NET_LIBS) -o $@

.PHONY: edgelockd certs run-daemons test-daemon
edgelockd: $(EDGELOCKD)
ALL_TARGETS += $(EDGELOCKD)

# sensor-1..7 for examples/fleet-election's run.py, made here so that no
# suite signs with the CA while another does (make test runs two chains of
# suites at once; each openssl -CAcreateserial rewrites ca.srl)
certs:
	@tools/dev-certs.sh $(CERTS) 5 sensor-1 sensor-2 sensor-3 sensor-4 sensor-5 sensor-6 \
		sensor-7 >/dev/null

run-daemons: $(EDGELOCKD) certs
	@tools/run-cluster.sh $(BUILD)

test-daemon: $(EDGELOCKD) $(EDGELOCKD_SAN) certs
	@tests/run-suite.sh $(BUILD)/results daemon-cluster /usr/bin/python3 tests/daemon/cluster_test.py $(BUILD)
	@EDGELOCKD=$(EDGELOCKD_SAN) EL_TEST_CONNS=300 tests/run-suite.sh $(BUILD)/results \
		daemon-cluster-asan-ubsan /usr/bin/python3 tests/daemon/cluster_test.py $(BUILD)
	@tests/run-suite.sh $(BUILD)/results daemon-auth /usr/bin/python3 tests/daemon/auth_test.py $(BUILD)
	@EDGELOCKD=$(EDGELOCKD_SAN) tests/run-suite.sh $(BUILD)/results \
		daemon-auth-asan-ubsan /usr/bin/python3 tests/daemon/auth_test.py $(BUILD)
# A daemon suite, run against edgelockd's ASan/UBSan build: what the
# release build would show, and memory errors and undefined behaviour on top
# (the release build itself runs under daemon-cluster, daemon-auth, the CLI,
# recovery, example, chaos and board suites). `make test-X PLAIN=1` also
# runs it against the release build first.
# $(1) the suite (target test-$(1)), $(2) its script in tests/daemon/.
define daemon_suite
.PHONY: test-$(1)
test-$(1): $$(EDGELOCKD) $$(EDGELOCKD_SAN) certs
	$$(if $$(PLAIN),@tests/run-suite.sh $$(BUILD)/results $(1) /usr/bin/python3 tests/daemon/$(2) $$(BUILD))
	@EDGELOCKD=$$(EDGELOCKD_SAN) tests/run-suite.sh $$(BUILD)/results \
		$(1)-asan-ubsan /usr/bin/python3 tests/daemon/$(2) $$(BUILD)
TESTS += test-$(1)
SERIAL_TESTS += test-$(1)
endef

# Expired and revoked (CRL) certificates refused, SIGHUP reloads them (issue 12)
$(eval $(call daemon_suite,daemon-certs,certs_test.py))

.PHONY: test-daemon-recovery
test-daemon-recovery: $(EDGELOCKD) $$(EDGELOCK_CLI) certs
	@tests/run-suite.sh $(BUILD)/results daemon-recovery /usr/bin/python3 \
		tests/daemon/recovery_test.py $(BUILD)
TESTS += test-daemon test-daemon-recovery
SERIAL_TESTS += test-daemon test-daemon-recovery
SERIAL_PREREQS += $(EDGELOCKD) $(EDGELOCKD_SAN) certs

# What docs/protocol.md promises a client written from it alone: events,
# errors and closes as the page says them (tests/daemon/protocol_test.py)
$(eval $(call daemon_suite,daemon-protocol,protocol_test.py))

# Prometheus metrics scraped and checked against what the test did
$(eval $(call daemon_suite,daemon-metrics,metrics_test.py))

# edgelockd under a fake systemd: READY/STATUS, the watchdog, STOPPING (notify.c)
$(eval $(call daemon_suite,daemon-systemd,systemd_test.py))

# [limits] under a flood of connections while another client keeps locking
$(eval $(call daemon_suite,daemon-limits,limits_test.py))

# A follower SIGSTOPped while the leader sends it a snapshot, under writes and
# reads: the leader's queue to it stays within peer_queue_bytes (peer_queue_test.py)
$(eval $(call daemon_suite,daemon-peer-queue,peer_queue_test.py))

# What an operator meets: connection floods under a low open-files limit, a
# full disk, a read-only one, a slow disk (an LD_PRELOAD shim delays
# fdatasync, or refuses opens with EROFS), a removed
# node started again, a non-member's refusals logged once, a second daemon
# after `rm DATA_DIR/LOCK`, another node's data_dir (owner.c)
$(eval $(call daemon_suite,daemon-ops,ops_test.py))
SLOW_FSYNC := $(BUILD)/tests/slow_fsync.so
$(SLOW_FSYNC): tests/daemon/slow_fsync.c
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -fPIC -shared $< -ldl -o $@
test-daemon-ops test-daemon: $(SLOW_FSYNC)
SERIAL_PREREQS += $(SLOW_FSYNC)

# Semaphores (issue 17): ten `edgelock lock -n 3` at once, a SIGKILLed holder,
# the limit mismatch's exit code, `edgelock locks` (about 20 s each run)
$(eval $(call daemon_suite,daemon-semaphore,semaphore_test.py))
test-daemon-semaphore: $(EDGELOCK_CLI)

# edgelockd's own systemd notify client (cmd/edgelockd/sd_notify.c): unit
# tests under ASan/UBSan, and a fuzz target of the environment values it parses
$(BUILD)/san/test_sd_notify: tests/daemon/test_sd_notify.c cmd/edgelockd/sd_notify.c \
		cmd/edgelockd/el_sd_notify.h $(TEST_LIB_SRCS) tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) -Icore -Icmd/edgelockd -Itests/lib $< \
		cmd/edgelockd/sd_notify.c $(TEST_LIB_SRCS) -o $@
$(BUILD)/fuzz/fuzz_sd_env: tests/fuzz/fuzz_sd_env.c cmd/edgelockd/sd_notify.c cmd/edgelockd/el_sd_notify.h
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -D_DEFAULT_SOURCE -Icmd/edgelockd $< cmd/edgelockd/sd_notify.c -o $@

.PHONY: test-sd-notify
test-sd-notify: $(BUILD)/san/test_sd_notify
	@tests/run-suite.sh $(BUILD)/results sd-notify $(BUILD)/san/test_sd_notify
TESTS += test-sd-notify
$(eval $(call fuzz_suite,sd-env,$(BUILD)/fuzz/fuzz_sd_env,fuzz-sd-env,100000))

# The metrics server's request parser (cmd/edgelockd/http_request.c): unit
# tests under ASan/UBSan, and a fuzz target of any bytes as a request head
$(BUILD)/san/test_http_request: tests/daemon/test_http_request.c cmd/edgelockd/http_request.c \
		cmd/edgelockd/el_d_http.h $(TEST_LIB_SRCS) tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) -Icore -Icmd/edgelockd -Itests/lib $< \
		cmd/edgelockd/http_request.c $(TEST_LIB_SRCS) -o $@
$(BUILD)/fuzz/fuzz_http: tests/fuzz/fuzz_http.c cmd/edgelockd/http_request.c cmd/edgelockd/el_d_http.h
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -D_GNU_SOURCE -Icmd/edgelockd $< cmd/edgelockd/http_request.c -o $@

.PHONY: test-http-request
test-http-request: $(BUILD)/san/test_http_request
	@tests/run-suite.sh $(BUILD)/results http-request $(BUILD)/san/test_http_request
TESTS += test-http-request
$(eval $(call fuzz_suite,http,$(BUILD)/fuzz/fuzz_http,fuzz-http,200000,tests/fuzz/corpus/http))

# The data directory's small files edgelockd reads at every start
# (incarnation.c, owner.c): any bytes as each; seeds in tests/fuzz/corpus/datadir
DATADIR_FUZZ_SRCS := cmd/edgelockd/incarnation.c cmd/edgelockd/owner.c cmd/edgelockd/dir_file.c \
	port/posix/crc32c.c \
	port/posix/log.c port/posix/random.c
$(BUILD)/fuzz/fuzz_datadir: tests/fuzz/fuzz_datadir.c $(DATADIR_FUZZ_SRCS) cmd/edgelockd/el_daemon.h
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -D_DEFAULT_SOURCE -Icmd/edgelockd -Inet -Icore -Iport/posix $< \
		$(DATADIR_FUZZ_SRCS) -o $@

# A member that lost acknowledged state and voted: the node whose committed
# entries the new leader contradicts says so (tests/daemon/lost_state_test.py,
# about 15 s; with the parallel suites: it waits on elections, with room).
.PHONY: test-daemon-lost-state
test-daemon-lost-state: $(EDGELOCKD) certs
	@tests/run-suite.sh $(BUILD)/results daemon-lost-state /usr/bin/python3 \
		tests/daemon/lost_state_test.py $(BUILD)
TESTS += test-daemon-lost-state

$(eval $(call fuzz_suite,datadir,$(BUILD)/fuzz/fuzz_datadir,fuzz-datadir,10000,tests/fuzz/corpus/datadir))

# el_d_replace_file (dir_file.c), how data_dir's small files are written:
# whole or not at all, and a failure's reason (unit tests, ASan/UBSan)
$(BUILD)/san/test_dir_file: tests/daemon/test_dir_file.c cmd/edgelockd/dir_file.c \
		cmd/edgelockd/el_daemon.h $(TEST_LIB_SRCS) tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) -Icore -Icmd/edgelockd -Inet -Iport/posix -Itests/lib $< \
		cmd/edgelockd/dir_file.c $(TEST_LIB_SRCS) -o $@
.PHONY: test-dir-file
test-dir-file: $(BUILD)/san/test_dir_file
	@tests/run-suite.sh $(BUILD)/results dir-file $(BUILD)/san/test_dir_file
TESTS += test-dir-file

# edgelockd's config file reader (config.c on libinih, with the [acl] parser):
# any bytes as a file; seeds in tests/fuzz/corpus/dcfg. Each run writes and
# reads a file (about 2,000 runs a second): 30,000 in `make test`, longer
# runs with `make fuzz-dcfg`
DCFG_FUZZ_SRCS := cmd/edgelockd/config.c net/acl.c net/url.c net/ini_line.c
$(BUILD)/fuzz/fuzz_dcfg: tests/fuzz/fuzz_dcfg.c $(DCFG_FUZZ_SRCS) cmd/edgelockd/el_daemon_config.h net/el_acl.h
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -D_DEFAULT_SOURCE -Icmd/edgelockd -Inet -Icore -Iport/posix $< \
		$(DCFG_FUZZ_SRCS) -linih -o $@

$(eval $(call fuzz_suite,dcfg,$(BUILD)/fuzz/fuzz_dcfg,fuzz-config,30000,tests/fuzz/corpus/dcfg))
