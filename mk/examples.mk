# mk/examples.mk - the examples that run on real daemons (examples/*/).
#
#   make fleet-election    run the fleet-election example (also in make test)

FLEET_DEVICE := $(BUILD)/bin/fleet-device

$(FLEET_DEVICE): examples/fleet-election/device.c $(LIBEDGELOCK) $(CLIENT_HDRS) core/fence.c
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) $(CLIENT_FLAGS) $< core/fence.c $(LIBEDGELOCK) $(CLIENT_LIBS) -o $@

.PHONY: fleet-election test-examples
fleet-election: $(FLEET_DEVICE) $(BUILD)/bin/edgelockd certs
	@/usr/bin/python3 examples/fleet-election/run.py $(BUILD)
test-examples: $(FLEET_DEVICE) $(BUILD)/bin/edgelockd certs
	@tests/run-suite.sh $(BUILD)/results example-fleet-election /usr/bin/python3 \
		examples/fleet-election/run.py $(BUILD)
TESTS += test-examples
ALL_TARGETS += $(FLEET_DEVICE)
