# mk/examples.mk - the examples that run on real daemons (examples/*/).
#
#   make fleet-election    run the fleet-election example (also in make test)
#   make fenced-resource   run the fenced-resource example (also in make test)
#   make lock-run          run the lock-run example (also in make test)
#   make staged-rollout    run the staged-rollout example (also in make test)
#   make test-examples     all four as suites

FLEET_DEVICE := $(BUILD)/bin/fleet-device
FENCED_RESOURCE := $(BUILD)/bin/fenced-resource
FENCED_CLIENT := $(BUILD)/bin/fenced-client

# An example program: its C files and libedgelock (which holds the fence
# kit, el_fence_*); the fence file (examples/common/fence_file.c) for the
# two that keep a fence.
define example_prog
$(1): $(2) $$(LIBEDGELOCK) $$(CLIENT_HDRS) core/el_fence.h examples/common/fence_file.h
	@mkdir -p $$(@D)
	$$(call say,LD,$$@)
	$$(Q)$$(CC) $$(HOST_CFLAGS) $$(CLIENT_FLAGS) -Iexamples/common $(2) \
		$$(LIBEDGELOCK) $$(CLIENT_LIBS) -o $$@
endef
$(eval $(call example_prog,$(FLEET_DEVICE),examples/fleet-election/device.c examples/common/fence_file.c))
$(eval $(call example_prog,$(FENCED_RESOURCE),examples/fenced-resource/resource.c examples/common/fence_file.c))
$(eval $(call example_prog,$(FENCED_CLIENT),examples/fenced-resource/client.c))

EXAMPLE_DAEMON := $(BUILD)/bin/edgelockd certs

.PHONY: fleet-election fenced-resource lock-run staged-rollout test-examples
fleet-election: $(FLEET_DEVICE) $(EXAMPLE_DAEMON)
	@/usr/bin/python3 examples/fleet-election/run.py $(BUILD)
fenced-resource: $(FENCED_RESOURCE) $(FENCED_CLIENT) $(EXAMPLE_DAEMON)
	@/usr/bin/python3 examples/fenced-resource/run.py $(BUILD)
lock-run: $(EDGELOCK_CLI) $(EXAMPLE_DAEMON)
	@/usr/bin/python3 examples/lock-run/run.py $(BUILD)
staged-rollout: $(EDGELOCK_CLI) $(EXAMPLE_DAEMON)
	@/usr/bin/python3 examples/staged-rollout/run.py $(BUILD)
test-examples: $(FLEET_DEVICE) $(FENCED_RESOURCE) $(FENCED_CLIENT) $(EDGELOCK_CLI) $(EXAMPLE_DAEMON)
	@tests/run-suite.sh $(BUILD)/results example-fleet-election /usr/bin/python3 \
		examples/fleet-election/run.py $(BUILD)
	@tests/run-suite.sh $(BUILD)/results example-fenced-resource /usr/bin/python3 \
		examples/fenced-resource/run.py $(BUILD)
	@tests/run-suite.sh $(BUILD)/results example-lock-run /usr/bin/python3 \
		examples/lock-run/run.py $(BUILD)
	@tests/run-suite.sh $(BUILD)/results example-staged-rollout /usr/bin/python3 \
		examples/staged-rollout/run.py $(BUILD)
TESTS += test-examples
SERIAL_TESTS += test-examples
SERIAL_PREREQS += $(FLEET_DEVICE) $(FENCED_RESOURCE) $(FENCED_CLIENT) $(EDGELOCK_CLI) $(EXAMPLE_DAEMON)
ALL_TARGETS += $(FLEET_DEVICE) $(FENCED_RESOURCE) $(FENCED_CLIENT)
