# mk/sim.mk - the deterministic cluster simulator (tests/sim).
#
#   make sim SEED=n              replay one seed (V=1 prints its trace)
#   make sim START=s COUNT=n     run n seeds from s
#   make test-sim-matrix         the configuration matrix, SIM_MATRIX_SEEDS each
#   make test-sim-linear         SIM_LINEAR_SEEDS seeds with -DEL_INDEXED=0 (the
#                                firmware's linear lookups), --names SIM_NAMES
#   make test-sim-gateway        SIM_GATEWAY_SEEDS seeds at the gateway's table
#                                widths and limits (32-bit slots, indexed
#                                lookups), --names SIM_NAMES
#   make test-sim-audit          SIM_AUDIT_SEEDS seeds, --names SIM_NAMES, with
#                                the whole table's invariants (indexes, bitmaps
#                                and lists against the records) checked after
#                                every command (-DEL_LOCK_AUDIT=1): 8 locks in
#                                16 buckets, so names collide, and locks come
#                                and go through a run
#   make sim-sweep               1,000,000 seeds, then the matrix at 5,000 each
#
# The simulator builds the core with small limits so that window-full,
# compaction and chunked snapshots happen in every run.

SIM_CONFIG := -DEL_LOG_WINDOW=64 -DEL_ENTRY_DATA_MAX=112 -DEL_MSG_ENTRIES_MAX=4 \
	-DEL_SNAPSHOT_MAX=4096 -DEL_SNAPSHOT_CHUNK=256 -DEL_INFLIGHT_MAX=4 \
	-DEL_COMPACT_THRESHOLD=24 -DEL_READS_MAX=8 -DEL_SESSIONS_MAX=24 -DEL_LOCKS_MAX=8 \
	-DEL_HOLDERS_MAX=6 -DEL_HOLDS_MAX=24 -DEL_WAITERS_MAX=16 -DEL_WATCHES_MAX=8 \
	-DEL_VALUES_MAX=8 -DEL_LOCK_EVENTS_MAX=24 -DEL_NAME_MAX=16 -DEL_VALUE_MAX=16 \
	-DEL_CLIENT_NAME_MAX=8 -DEL_PENDING_MAX=24 -DEL_OPENS_MAX=8
SIM_CORE_SRCS := $(CORE_SRCS)
SIM_SRCS := $(sort $(wildcard tests/sim/*.c))
SIM_DEPS := $(SIM_CORE_SRCS) $(SIM_SRCS) $(wildcard tests/sim/*.h) $(CORE_HDRS)
SIM_SEEDS ?= 10000
SIM_SAN_SEEDS ?= 1000
SIM_BUGS := $(basename $(notdir $(sort $(wildcard tests/sim/bugs/*.patch))))

$(BUILD)/sim/sim: $(SIM_DEPS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O2 $(SIM_CONFIG) -Icore -Itests/sim $(SIM_CORE_SRCS) $(SIM_SRCS) -o $@

$(BUILD)/sim-san/sim: $(SIM_DEPS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) $(SIM_CONFIG) -Icore -Itests/sim $(SIM_CORE_SRCS) $(SIM_SRCS) -o $@

# The self-test's bugs live outside core/: each tests/sim/bugs/NN-name.patch
# is applied to a copy of core/ under the build directory, and a simulator is
# built from that copy (a patch that no longer applies fails the build).
# These and the matrix's 32 simulators are built -O1 without -g
# (SIM_QUICK_CFLAGS): 4 s a build instead of 7, for the same run time; a
# seed to debug is replayed on build/sim/sim or a matrix cell rebuilt -g.
SIM_QUICK_CFLAGS := $(filter-out -O% -g,$(HOST_CFLAGS)) -O1
$(BUILD)/sim-bug/%/sim: tests/sim/bugs/%.patch $(SIM_DEPS)
	@rm -rf $(@D) && mkdir -p $(@D) && cp -r core $(@D)/core
	@patch -s -p1 --no-backup-if-mismatch -d $(@D) -i $(abspath $<)
	$(call say,LD,$@)
	$(Q)$(CC) $(SIM_QUICK_CFLAGS) $(SIM_CONFIG) -I$(@D)/core -Itests/sim $(@D)/core/*.c $(SIM_SRCS) -o $@

ALL_TARGETS += $(BUILD)/sim/sim

# The configuration matrix (issue 19): the same simulator at other limits a
# board may choose, every other limit as above. W-T-E-I = log window,
# compaction threshold (the smallest and the largest el_config.h allows: 1
# and half the window), entries per message, appends in flight.
SIM_MATRIX_WT := 8-1 8-4 16-1 16-8 32-1 32-16 512-1 512-256
SIM_MATRIX := $(foreach wt,$(SIM_MATRIX_WT),$(foreach e,1 4,$(foreach i,1 4,$(wt)-$(e)-$(i))))
SIM_MATRIX_SEEDS ?= 300
SIM_LIMITS_VARIED := -DEL_LOG_WINDOW=% -DEL_COMPACT_THRESHOLD=% -DEL_MSG_ENTRIES_MAX=% -DEL_INFLIGHT_MAX=%
sim_cfg = $(word $(1),$(subst -, ,$(2)))
$(BUILD)/sim-matrix/%/sim: $(SIM_DEPS)
	@mkdir -p $(@D)
	$(call say,CC,$@)
	$(Q)$(CC) $(SIM_QUICK_CFLAGS) $(filter-out $(SIM_LIMITS_VARIED),$(SIM_CONFIG)) \
		-DEL_LOG_WINDOW=$(call sim_cfg,1,$*) -DEL_COMPACT_THRESHOLD=$(call sim_cfg,2,$*) \
		-DEL_MSG_ENTRIES_MAX=$(call sim_cfg,3,$*) -DEL_INFLIGHT_MAX=$(call sim_cfg,4,$*) \
		-Icore -Itests/sim $(SIM_CORE_SRCS) $(SIM_SRCS) -o $@

# The lookup paths (core-scale issue). EL_INDEXED selects hash indexes,
# bitmaps and a timer heap (1) or the linear scans a microcontroller keeps
# (0, boards/common/el_small_config.h); EL_SLOT_BITS the width of the lock
# table's slot indexes (32 on the gateway). A core without these knobs
# ignores them. Both suites draw their locks from SIM_NAMES names instead of
# the default three, so that lock records are created, deleted and their
# slots reused all along (sessions already are: clients restart and expire).
SIM_NAMES ?= 200
SIM_LINEAR_SEEDS ?= 2000
SIM_LINEAR_CONFIG := $(SIM_CONFIG) -DEL_INDEXED=0
$(BUILD)/sim-linear/sim: $(SIM_DEPS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O2 $(SIM_LINEAR_CONFIG) -Icore -Itests/sim $(SIM_CORE_SRCS) $(SIM_SRCS) -o $@

# The gateway profile's lock table (cmd/edgelockd/el_gateway_config.h) with
# 32-bit slots, under the Raft limits above (small window, compaction and
# chunked snapshots in every run). The claim pool (EL_HOLDS_MAX +
# EL_WAITERS_MAX) is made larger than 65536 so that slot indexes past 16
# bits exist. A core that still links its tables by 16-bit slots (no
# EL_SLOT_BITS in core/) cannot hold that pool: there the suite keeps the
# largest pool 16-bit slots can index (the gateway's 32766 holds, as today).
# EL_SNAPSHOT_MAX must cover EL_LOCK_SNAPSHOT_BOUND (core/el_lock.h), about
# 5.2 MiB at these limits; each replica holds a few copies (table, disk
# snapshot, snapshot buffers): about 180 MB for the process. A run's cost
# grows with the tables: every replica's table is serialized after each
# apply to compare them, and a linear core's timers scan every session,
# claim and lock whenever the simulator asks a node for its next deadline
# (70% of the time on the 16-bit core). Hence the smaller seed count: about
# 60 s on one core (two processes at once run no faster: they contend for
# the cache and memory), less once the timers are a heap.
SIM_GATEWAY_SEEDS ?= 130
SIM_SLOT32 := $(if $(shell grep -l EL_SLOT_BITS $(CORE_HDRS) 2>/dev/null),1)
SIM_GATEWAY_CONFIG := $(filter-out -DEL_SESSIONS_MAX=% -DEL_LOCKS_MAX=% -DEL_HOLDS_MAX=% \
	-DEL_WAITERS_MAX=% -DEL_WATCHES_MAX=% -DEL_VALUES_MAX=% -DEL_SNAPSHOT_MAX=%,$(SIM_CONFIG)) \
	-DEL_SLOT_BITS=32 -DEL_INDEXED=1 -DEL_SESSIONS_MAX=8192 -DEL_LOCKS_MAX=32768 \
	-DEL_HOLDS_MAX=$(if $(SIM_SLOT32),40960,32766) -DEL_WAITERS_MAX=32768 \
	-DEL_WATCHES_MAX=8192 -DEL_VALUES_MAX=2048 -DEL_SNAPSHOT_MAX=8388608
$(BUILD)/sim-gateway/sim: $(SIM_DEPS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O2 $(SIM_GATEWAY_CONFIG) -Icore -Itests/sim $(SIM_CORE_SRCS) $(SIM_SRCS) -o $@

.PHONY: sim test-sim test-sim-san test-sim-bugs test-sim-matrix sim-sweep
.PHONY: test-sim-linear test-sim-gateway
sim: $(BUILD)/sim/sim
ifdef SEED
	$(BUILD)/sim/sim --seed $(SEED) $(if $(V),-v)
else
	$(BUILD)/sim/sim --start $(or $(START),1) --count $(or $(COUNT),100) $(if $(V),-v)
endif

test-sim: $(BUILD)/sim/sim
	@tests/run-suite.sh $(BUILD)/results sim $(BUILD)/sim/sim --start 1 --count $(SIM_SEEDS)
test-sim-san: $(BUILD)/sim-san/sim
	@tests/run-suite.sh $(BUILD)/results sim-asan-ubsan $(BUILD)/sim-san/sim --start 100001 --count $(SIM_SAN_SEEDS)
test-sim-bugs: $(foreach b,$(SIM_BUGS),$(BUILD)/sim-bug/$(b)/sim)
	@tests/run-suite.sh $(BUILD)/results sim-catches-bugs tests/sim/bugs.sh $(BUILD) $(SIM_BUGS)
test-sim-matrix: $(foreach c,$(SIM_MATRIX),$(BUILD)/sim-matrix/$(c)/sim)
	@SEEDS_FILE=tests/sim/matrix-seeds.txt tests/run-suite.sh $(BUILD)/results sim-matrix \
		tests/sim/matrix.sh $(BUILD) 200001 $(SIM_MATRIX_SEEDS) $(SIM_MATRIX)
test-sim-linear: $(BUILD)/sim-linear/sim
	@tests/run-suite.sh $(BUILD)/results sim-linear $(BUILD)/sim-linear/sim --start 300001 \
		--count $(SIM_LINEAR_SEEDS) --names $(SIM_NAMES)
test-sim-gateway: $(BUILD)/sim-gateway/sim
	@tests/run-suite.sh $(BUILD)/results sim-gateway $(BUILD)/sim-gateway/sim --start 400001 \
		--count $(SIM_GATEWAY_SEEDS) --names $(SIM_NAMES)
SIM_AUDIT_SEEDS ?= 2000
$(BUILD)/sim-audit/sim: $(SIM_DEPS)
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O2 $(SIM_CONFIG) -DEL_LOCK_AUDIT=1 -Icore -Itests/sim \
		$(SIM_CORE_SRCS) $(SIM_SRCS) -o $@
.PHONY: test-sim-audit
test-sim-audit: $(BUILD)/sim-audit/sim
	@tests/run-suite.sh $(BUILD)/results sim-audit $(BUILD)/sim-audit/sim --start 500001 \
		--count $(SIM_AUDIT_SEEDS) --names $(SIM_NAMES)
TESTS += test-sim test-sim-san test-sim-bugs test-sim-matrix test-sim-linear test-sim-gateway \
	test-sim-audit

# The long sweep (not in make test): SWEEP_SEEDS seeds of the shipped
# configuration, then the whole matrix with SWEEP_MATRIX_SEEDS seeds each.
SWEEP_SEEDS ?= 1000000
SWEEP_MATRIX_SEEDS ?= 5000
sim-sweep: $(BUILD)/sim/sim $(foreach c,$(SIM_MATRIX),$(BUILD)/sim-matrix/$(c)/sim)
	tests/sim/sweep.sh $(BUILD)/sim/sim 1 $(SWEEP_SEEDS)
	tests/sim/matrix.sh $(BUILD) 1000001 $(SWEEP_MATRIX_SEEDS) $(SIM_MATRIX)
