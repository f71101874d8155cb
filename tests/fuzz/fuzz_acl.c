/*
 * fuzz_acl.c - libFuzzer target for the ACL's config-line parser
 * (net/acl.c): the input, split at its first NUL into a pattern and a value,
 * must be added or refused with a message, never crash, and a refused line
 * must leave the rule count as it was.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "el_acl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct el_acl acl;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[512];
	if (size >= sizeof(buf))
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	const char *pattern = buf;
	const char *value = memchr(buf, '\0', size) != NULL ? buf + strlen(buf) + 1 : "";
	if (value > buf + size)
		value = "";
	el_acl_init(&acl);
	char err[160];
	const int rc = el_acl_add(&acl, pattern, value, err, sizeof(err));
	if ((rc == 0) != (acl.n_rules == 1))
		abort();
	(void)el_acl_allows(&acl, "sensor-1", EL_ACL_LOCK, "fleet/a", 7);
	(void)el_acl_allows(&acl, NULL, EL_ACL_OBSERVE, NULL, 0);
	return 0;
}
