# mk/chaos.mk - the chaos suite (tests/chaos/): real edgelockd in network
# namespaces under random faults, clients doing read-modify-writes on a
# fenced resource, and a checker of the recorded history. Needs root (ip
# netns, nft, a tmpfs mount).
#
#   make chaos                       CHAOS_SECONDS (default 600) of faults; the
#                                    history and verdict in build/chaos/run-PID/;
#                                    exits non-zero on any violation
#   make chaos CHAOS_FENCING=off     the control: the resource ignores tokens,
#                                    the checker must find lost updates
#   make test-chaos                  suite chaos-short (in make test, ~1 min):
#                                    22 s fenced, zero violations; a 15 s control
#                                    (client pauses), lost updates found
#   make test-rejoin                 suite chaos-rejoin (in make test, ~35 s): a
#                                    leader cut off 30 s rejoins within 8 s

# Prerequisites name variables of fragments read later ($$(VAR)).
.SECONDEXPANSION:
CHAOS_SECONDS ?= 600
CHAOS_FENCING ?= on
CHAOS_WORKER := $(BUILD)/bin/chaos-worker
# The daemon with the power-cut seam (crashpoint.c): SIGUSR2 arms it.
CHAOS_EDGELOCKD := $(BUILD)/chaos/edgelockd
CHAOS_DEPS = $(CHAOS_WORKER) $(CHAOS_EDGELOCKD) $$(FENCED_RESOURCE) $$(EDGELOCK_CLI) certs

# The worker and libedgelock's sources under ASan/UBSan: a client library
# bug shows as a report in RUN/PROC.err (the checker's client-crashed).
$(CHAOS_WORKER): tests/chaos/worker.c $$(CLIENT_SRCS) $$(CLIENT_HDRS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(CLIENT_FLAGS) $< $(CLIENT_SRCS) $(CLIENT_LIBS) -o $@

$(CHAOS_EDGELOCKD): tests/chaos/crashpoint.c $$(EDGELOCKD_OBJS) $$(GW_NET_OBJS) $$(GW_POSIX_OBJS) $$(GW_CORE_OBJS) \
		$(REVISION_O)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(GW_FLAGS) -Iport/posix $^ $(NET_LIBS) -o $@

.PHONY: chaos test-chaos
chaos: $(CHAOS_DEPS)
	@/usr/bin/python3 tests/chaos/chaos.py $(BUILD) --seconds $(CHAOS_SECONDS) --fencing $(CHAOS_FENCING)

test-chaos: $(CHAOS_DEPS)
	@tests/run-suite.sh $(BUILD)/results chaos-short /usr/bin/python3 tests/chaos/short.py $(BUILD)
TESTS += test-chaos
SERIAL_TESTS += test-chaos

# A leader cut off by dropped packets for 30 s rejoins within 8 s of the
# heal (TCP_USER_TIMEOUT on peer links); needs root, ~35 s. Not serial: it
# mostly waits, and its bound (8 s; measured 0.4 s, 2.8 s beside a build at
# -j2, 26 s without the fix) leaves room for the parallel suites' load.
.PHONY: test-rejoin
test-rejoin: $(CHAOS_DEPS)
	@tests/run-suite.sh $(BUILD)/results chaos-rejoin /usr/bin/python3 tests/chaos/rejoin.py $(BUILD)
TESTS += test-rejoin
SERIAL_PREREQS += $(CHAOS_DEPS)
ALL_TARGETS += $(CHAOS_WORKER) $(CHAOS_EDGELOCKD)
