/*
 * test_acl.c - the client ACL (net/acl.c): parsing [acl] lines and their
 * errors, prefixes, globs, operations, anonymous clients, requests naming
 * no lock, the unconfigured default and the rule limit.
 */
#include <stdio.h>
#include <string.h>

#include "el_acl.h"
#include "el_error.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

static struct el_acl acl;

static bool allows(const char *who, enum el_acl_op op, const char *name)
{
	return el_acl_allows(&acl, who, op, name, name != NULL ? strlen(name) : 0);
}

static void fleet_acl(void)
{
	char err[160];
	el_acl_init(&acl);
	EL_CHECK_EQ(el_acl_add(&acl, "sensor-*", "lock, elect observe : fleet/sensors/ fleet/leader", err,
			       sizeof(err)), 0);
	EL_CHECK_EQ(el_acl_add(&acl, "ops-admin", "lock,elect,observe,admin:*", err, sizeof(err)), 0);
	EL_CHECK_EQ(el_acl_add(&acl, "anonymous", "observe : public/", err, sizeof(err)), 0);
	EL_CHECK_EQ(el_acl_add(&acl, "*", "observe : status/", err, sizeof(err)), 0);
}

static void test_prefix_and_operation(void)
{
	fleet_acl();
	EL_CHECK(allows("sensor-7", EL_ACL_LOCK, "fleet/sensors/a"));
	EL_CHECK(allows("sensor-7", EL_ACL_ELECT, "fleet/leader"));
	EL_CHECK(!allows("sensor-7", EL_ACL_LOCK, "fleet/pumps/a")); /* outside its prefixes */
	EL_CHECK(!allows("sensor-7", EL_ACL_LOCK, "fleet/sensor")); /* shorter than the prefix */
	EL_CHECK(!allows("sensor-7", EL_ACL_ADMIN, NULL));          /* not its operation */
	EL_CHECK(!allows("pump-1", EL_ACL_LOCK, "fleet/sensors/a"));  /* no pattern matches */
	EL_CHECK(allows("ops-admin", EL_ACL_ADMIN, NULL));
	EL_CHECK(allows("ops-admin", EL_ACL_LOCK, "anything/at/all"));
}

static void test_rules_add_up(void)
{
	fleet_acl();
	/* sensor-7 matches "sensor-*" and "*": observe on either's prefixes. */
	EL_CHECK(allows("sensor-7", EL_ACL_OBSERVE, "status/x"));
	EL_CHECK(allows("sensor-7", EL_ACL_OBSERVE, "fleet/sensors/b"));
	EL_CHECK(!allows("sensor-7", EL_ACL_LOCK, "status/x"));
	/* A request naming no lock needs the operation on some prefix. */
	EL_CHECK(allows("pump-1", EL_ACL_OBSERVE, NULL));
}

static void test_anonymous_only_by_its_own_line(void)
{
	fleet_acl();
	EL_CHECK(allows(NULL, EL_ACL_OBSERVE, "public/board"));
	EL_CHECK(!allows(NULL, EL_ACL_OBSERVE, "status/x")); /* "*" does not grant to it */
	EL_CHECK(!allows(NULL, EL_ACL_LOCK, "public/board"));
	/* A certificate named "anonymous" is a proven client, not the anonymous one. */
	EL_CHECK(!allows("anonymous", EL_ACL_OBSERVE, "public/board"));
	EL_CHECK(allows("anonymous", EL_ACL_OBSERVE, "status/x"));
}

static void test_unconfigured_default(void)
{
	el_acl_init(&acl);
	EL_CHECK(allows("anyone", EL_ACL_ADMIN, NULL));
	EL_CHECK(allows("anyone", EL_ACL_LOCK, "x"));
	EL_CHECK(!allows(NULL, EL_ACL_OBSERVE, "x"));
	/* An [acl] section, even with no line that parsed, is a configured ACL. */
	char err[160];
	EL_CHECK_EQ(el_acl_add(&acl, "x", "bogus : *", err, sizeof(err)), EL_EINVAL);
	EL_CHECK(!allows("anyone", EL_ACL_LOCK, "x"));
}

static void test_parse_errors_say_what(void)
{
	char err[160];
	el_acl_init(&acl);
	EL_CHECK_EQ(el_acl_add(&acl, "a", "lock fleet/", err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "operations : prefixes") != NULL);
	EL_CHECK_EQ(el_acl_add(&acl, "a", "lock, write : fleet/", err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "unknown operation 'write'") != NULL);
	EL_CHECK_EQ(el_acl_add(&acl, "a", " : fleet/", err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "no operation") != NULL);
	EL_CHECK_EQ(el_acl_add(&acl, "a", "lock :  ", err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "no lock-name prefix") != NULL);
	EL_CHECK_EQ(el_acl_add(&acl, "", "lock : x", err, sizeof(err)), EL_EINVAL);
	char longp[EL_ACL_PREFIX_MAX + 8];
	memset(longp, 'p', sizeof(longp) - 1);
	longp[sizeof(longp) - 1] = '\0';
	char value[EL_ACL_PREFIX_MAX + 32];
	snprintf(value, sizeof(value), "lock : %s", longp);
	EL_CHECK_EQ(el_acl_add(&acl, "a", value, err, sizeof(err)), EL_EINVAL);
	EL_CHECK(strstr(err, "longer than") != NULL);
	EL_CHECK_EQ(acl.n_rules, 0); /* nothing half-added */
}

static void test_rule_limit(void)
{
	char err[160];
	el_acl_init(&acl);
	for (int i = 0; i < EL_ACL_RULES_MAX; i++)
		EL_CHECK_EQ(el_acl_add(&acl, "c", "lock : x/", err, sizeof(err)), 0);
	EL_CHECK_EQ(el_acl_add(&acl, "c", "lock : x/", err, sizeof(err)), EL_EFULL);
	EL_CHECK_EQ(acl.n_rules, EL_ACL_RULES_MAX);
	EL_CHECK(allows("c", EL_ACL_LOCK, "x/1"));
}

int main(void)
{
	EL_RUN(test_prefix_and_operation);
	EL_RUN(test_rules_add_up);
	EL_RUN(test_anonymous_only_by_its_own_line);
	EL_RUN(test_unconfigured_default);
	EL_RUN(test_parse_errors_say_what);
	EL_RUN(test_rule_limit);
	return el_test_end();
}
