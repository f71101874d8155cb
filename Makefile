# edgelock - the one entry point.
#
#   make            build the core, ports, tools (host)
#   make run        install missing packages, build, start 3 edgelockd on loopback (TLS)
#   make test       install missing packages, build, run every test layer
#   make sim SEED=n | make sim START=s COUNT=n    replay / sweep the simulator
#   make bench      benchmarks (figures, never pass/fail on speed)
#   make size       flash/RAM per board; fails over a board's budget
#   make BOARD=name firmware for one board (see boards/)
#
# Each area adds its own rules in mk/*.mk; a test suite registers itself by
# appending a phony target to TESTS (see mk/README.md).

.DEFAULT_GOAL := all
SHELL := /bin/bash

BUILD ?= build
CC ?= cc
ifeq ($(origin CC),default)
CC := gcc
endif

WARN := -Wall -Wextra -Werror -Wshadow -Wvla -Wpointer-arith -Wstrict-prototypes
CSTD := -std=c11
OPT ?= -O2 -g
SANFLAGS := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
# Host flags for code outside core/ (may use POSIX).
HOST_CFLAGS := $(CSTD) $(WARN) $(OPT) -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE
# core/ is freestanding on every target.
CORE_CFLAGS := $(CSTD) $(WARN) -ffreestanding
INCLUDES := -Icore -Itests/lib

# Quiet builds: one short line per step; `make V=1` prints every command.
# Fragments write recipes as
#	$(call say,CC,$@)
#	$(Q)$(CC) ...
ifeq ($(V),1)
Q :=
say =
else
Q := @
say = @printf '  %-7s %s\n' '$(1)' '$(2)'
endif

TESTS :=
# Suites that wait on real time (daemons, leases, elections, QEMU clusters)
# also go in SERIAL_TESTS, and what their recipes need in SERIAL_PREREQS:
# `make test` builds SERIAL_PREREQS first, then runs these one by one at
# normal priority while the rest builds and runs under nice 19 (see test:),
# so that load from another suite never stretches the times they wait on.
SERIAL_TESTS :=
SERIAL_PREREQS :=
TEST_JOBS ?= $(shell nproc 2>/dev/null || echo 2)
BENCHES :=
ALL_TARGETS :=

# The source revision of this build (tools/revision.sh, net/el_version.h):
# one generated file, rewritten only when the revision changes, so a commit
# relinks the programs that print it and recompiles nothing else.
REVISION_C := $(BUILD)/gen/revision.c
REVISION_O := $(BUILD)/gen/revision.o
# (A temporary file of this shell's own: `make test` runs two makes at once.)
$(REVISION_C): FORCE
	@mkdir -p $(@D)
	@t=$@.$$$$; tools/revision.sh > $$t && { cmp -s $$t $@ && rm -f $$t || mv -f $$t $@; }
$(REVISION_O): $(REVISION_C)
	$(call say,CC,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -c $< -o $@
.PHONY: FORCE
FORCE:

# A libFuzzer target's two rules, for a parser with its own fuzz target:
# test-fuzz-NAME (in make test: a fixed, seeded run of RUNS inputs, started
# from the seeds in the folder SEEDS when given, in a fresh work folder so
# the run is the same every time) and fuzz-NAME (FUZZ_SECONDS of fuzzing,
# part of `make fuzz`; what it finds stays in the work folder, never in
# tests/fuzz/corpus). SUITE names the suite in the results.
#   $(eval $(call fuzz_suite,NAME,BINARY,SUITE,RUNS[,SEEDS]))
define fuzz_suite
.PHONY: test-fuzz-$(1) fuzz-$(1)
test-fuzz-$(1): $(2)
	@rm -rf $$(BUILD)/fuzz/work/$(1) && mkdir -p $$(BUILD)/fuzz/work/$(1)/corpus
	$(if $(5),@cp $(5)/* $$(BUILD)/fuzz/work/$(1)/corpus/)
	@tests/run-suite.sh $$(BUILD)/results $(3) bash -c '$(2) -seed=1 -runs=$(4) \
		-artifact_prefix=$$(BUILD)/fuzz/work/$(1)/ $$(BUILD)/fuzz/work/$(1)/corpus \
		>$$(BUILD)/fuzz/work/$(1)/fuzz.log 2>&1 && echo "1 passed, 0 failed" || \
		{ tail -n 30 $$(BUILD)/fuzz/work/$(1)/fuzz.log; echo "0 passed, 1 failed"; exit 1; }'
fuzz-$(1): $(2)
	@mkdir -p $$(BUILD)/fuzz/work/$(1)/corpus
	$(2) -max_total_time=$$(FUZZ_SECONDS) -artifact_prefix=$$(BUILD)/fuzz/work/$(1)/ \
		$$(BUILD)/fuzz/work/$(1)/corpus $(5)
fuzz: fuzz-$(1)
TESTS += test-fuzz-$(1)
endef

include $(sort $(wildcard mk/*.mk))

.PHONY: all deps test test-suites test-parallel test-serial test-serial-daemon test-serial-rest \
	serial-prereqs bench clean run sim size

all: $(ALL_TARGETS)

deps:
	@tools/deps.sh

# `make test`: first what the serial suites need, TEST_JOBS at a time; then
# three makes at once. Two run SERIAL_TESTS one by one at normal priority,
# in two chains (test-serial-daemon, test-serial-rest); the third, under
# nice 19, builds the rest and runs the other suites TEST_JOBS at a time.
# The serial suites wait on real time but use little CPU (run alone, they
# left the machine 96% idle for 11 minutes); at nice 19 the other make gets
# only what they leave, so its load does not stretch the times they wait on. Every suite writes its closing line to
# $(BUILD)/results; the summary prints the total and fails on any failure.
test: deps
	@rm -rf $(BUILD)/results && mkdir -p $(BUILD)/results
	@$(MAKE) --no-print-directory -k -j$(TEST_JOBS) -Otarget serial-prereqs || \
		echo "build-serial 0 1 2 0" >$(BUILD)/results/build-failed-serial
	@(EL_TEST_ALL=1 nice -n 19 $(MAKE) --no-print-directory -k -j$(TEST_JOBS) -Otarget \
		test-parallel || echo "build 0 1 2 0" >$(BUILD)/results/build-failed) & \
	(EL_TEST_ALL=1 $(MAKE) --no-print-directory -k test-serial-daemon || \
		echo "serial-daemon 0 1 2 0" >$(BUILD)/results/serial-daemon-failed) & \
	EL_TEST_ALL=1 $(MAKE) --no-print-directory -k test-serial-rest || \
		echo "serial 0 1 2 0" >$(BUILD)/results/serial-failed; \
	wait
	@tests/summary.sh $(BUILD)/results

test-suites: $(TESTS)
test-parallel: $(filter-out $(SERIAL_TESTS),$(TESTS)) $(SERIAL_PREREQS)
test-serial: $(SERIAL_TESTS)
# The two chains `make test` runs at once: the daemon suites, and the rest
# (about equal, 7 to 8 minutes each). They wait on real time and leave the
# CPU mostly idle, so two at once stretch none of the times they wait on;
# one chain of both took 12 to 13 of the suite's 14 minutes.
test-serial-daemon: $(filter test-daemon%,$(SERIAL_TESTS))
test-serial-rest: $(filter-out test-daemon%,$(SERIAL_TESTS))
serial-prereqs: $(SERIAL_PREREQS)

bench: $(BENCHES)

# The local three-node cluster: three edgelockd on loopback over TLS, logs
# prefixed by node, Ctrl-C stops them (tools/run-cluster.sh). The firmware
# cluster under QEMU is `make BOARD=mps2-an385 run-firmware`.
run: deps
	@$(MAKE) --no-print-directory all certs
	@tools/run-cluster.sh $(BUILD)

clean:
	rm -rf $(BUILD)
