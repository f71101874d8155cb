# mk/ident.mk - who a client or peer is and what it may do (issue 12): the
# signed-challenge identity proof of net/ident.c, tested with real
# certificates (made by tests/net/make-test-certs.sh with the openssl CLI),
# and the client ACL of net/acl.c; each under ASan/UBSan with a libFuzzer
# target for its parser.
#
#   make test-ident        the tests
#   make fuzz-ident FUZZ_SECONDS=n   fuzz the CHALLENGE/PROOF decoders

IDENT_SRCS := net/ident.c core/cbor.c core/error.c
IDENT_HDRS := net/el_ident.h core/el_cbor.h core/el_error.h
IDENT_LIBS := -lmbedx509 -lmbedcrypto
IDENT_CERTS := $(BUILD)/tmp/ident-certs

$(IDENT_CERTS)/ca.crt: tests/net/make-test-certs.sh
	@rm -rf $(IDENT_CERTS)
	@tests/net/make-test-certs.sh $(IDENT_CERTS)

$(BUILD)/san/test_ident: tests/net/test_ident.c $(IDENT_SRCS) $(IDENT_HDRS) $(TEST_LIB_SRCS) tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) -D_GNU_SOURCE -Icore -Inet -Itests/lib $< $(IDENT_SRCS) \
		$(TEST_LIB_SRCS) $(IDENT_LIBS) -o $@

$(BUILD)/fuzz/fuzz_ident: tests/fuzz/fuzz_ident.c $(IDENT_SRCS) $(IDENT_HDRS) $(TEST_LIB_SRCS)
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -D_DEFAULT_SOURCE -Icore -Inet $< $(IDENT_SRCS) $(TEST_LIB_SRCS) \
		$(IDENT_LIBS) -o $@

IDENT_FUZZ_RUN = mkdir -p $(BUILD)/fuzz/work/ident/corpus && \
	$(BUILD)/san/test_ident $(IDENT_CERTS) --write-seeds $(BUILD)/fuzz/work/ident/corpus && \
	EL_IDENT_CERTS=$(IDENT_CERTS) $(BUILD)/fuzz/fuzz_ident -max_len=6000 \
		-artifact_prefix=$(BUILD)/fuzz/work/ident/ $(BUILD)/fuzz/work/ident/corpus

.PHONY: test-ident test-fuzz-ident fuzz-ident
test-ident: $(BUILD)/san/test_ident $(IDENT_CERTS)/ca.crt
	@tests/run-suite.sh $(BUILD)/results ident $(BUILD)/san/test_ident $(IDENT_CERTS)
# A fixed, seeded run in make test; the closing line comes from the script.
test-fuzz-ident: $(BUILD)/fuzz/fuzz_ident $(BUILD)/san/test_ident $(IDENT_CERTS)/ca.crt
	@tests/run-suite.sh $(BUILD)/results fuzz-ident bash -c '$(IDENT_FUZZ_RUN) -seed=1 -runs=20000 \
		>$(BUILD)/fuzz/work/ident/fuzz.log 2>&1 && echo "1 passed, 0 failed" || \
		{ tail -n 30 $(BUILD)/fuzz/work/ident/fuzz.log; echo "0 passed, 1 failed"; exit 1; }'
fuzz-ident: $(BUILD)/fuzz/fuzz_ident $(BUILD)/san/test_ident $(IDENT_CERTS)/ca.crt
	@$(IDENT_FUZZ_RUN) -max_total_time=$(FUZZ_SECONDS)
TESTS += test-ident test-fuzz-ident

# The client ACL (net/acl.c): tests and the config-line parser's fuzz target.
$(BUILD)/san/test_acl: tests/net/test_acl.c net/acl.c net/el_acl.h $(TEST_LIB_SRCS) tests/lib/el_test.h
	@mkdir -p $(@D)
	$(call say,LD,$@)
	$(Q)$(CC) $(HOST_CFLAGS) -O1 $(SANFLAGS) -Icore -Inet -Itests/lib $< net/acl.c core/error.c \
		$(TEST_LIB_SRCS) -o $@
$(BUILD)/fuzz/fuzz_acl: tests/fuzz/fuzz_acl.c net/acl.c net/el_acl.h
	@mkdir -p $(@D)
	$(call say,FUZZCC,$@)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -D_DEFAULT_SOURCE -Icore -Inet $< net/acl.c core/error.c -o $@

.PHONY: test-acl
test-acl: $(BUILD)/san/test_acl
	@tests/run-suite.sh $(BUILD)/results acl $(BUILD)/san/test_acl
TESTS += test-acl
$(eval $(call fuzz_suite,acl,$(BUILD)/fuzz/fuzz_acl,fuzz-acl,100000))
