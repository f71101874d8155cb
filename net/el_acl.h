/*
 * el_acl.h - which client may do what to which lock names.
 *
 * The daemon's config holds one [acl] section; each line grants a set of
 * operations on a set of lock-name prefixes to the clients whose proven
 * identity (the CN of their certificate, net/el_ident.h) matches a pattern:
 *
 *   [acl]
 *   sensor-*  = lock, elect, observe : fleet/sensors/ fleet/leader
 *   ops-admin = lock, elect, observe, admin : *
 *   anonymous = observe : public/
 *
 * Patterns are shell globs (fnmatch(3): *, ?, [..]); the pattern `anonymous`
 * stands for a client that presented no certificate (allowed only when the
 * config makes client certificates optional), and only that line grants to
 * it: no glob, not even `*`, matches a client without a certificate. Prefixes are matched bytewise
 * against the lock name; `*` alone is every name. Operations:
 *   lock     acquire, release (and the session it needs)
 *   elect    campaign, proclaim, resign
 *   observe  query, watch, list locks, status
 *   admin    members add/remove/promote, transfer-leader, snapshot
 * Rules only grant: a request is allowed when any rule whose pattern matches
 * the client allows its operation on a prefix of its lock name. Requests
 * that name no lock (status, admin) need the operation on any prefix.
 * With no [acl] section at all, every client with a proven identity may do
 * everything and an anonymous one nothing (a development default: the
 * daemon logs a warning).
 *
 * Session keepalives and closes are checked against ownership, not the ACL:
 * a client may renew or close only sessions it opened itself (the daemon
 * records the opener's identity in each session's replicated client field:
 * cmd/edgelockd/auth.c).
 */
#ifndef EL_ACL_H
#define EL_ACL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EL_ACL_RULES_MAX 256
#define EL_ACL_PREFIXES_MAX 16
#define EL_ACL_PATTERN_MAX 64
#define EL_ACL_PREFIX_MAX 64
#define EL_ACL_ANONYMOUS "anonymous"

enum el_acl_op {
	EL_ACL_LOCK = 1u << 0,
	EL_ACL_ELECT = 1u << 1,
	EL_ACL_OBSERVE = 1u << 2,
	EL_ACL_ADMIN = 1u << 3,
};

struct el_acl_rule {
	char pattern[EL_ACL_PATTERN_MAX + 1];
	uint32_t ops;
	uint32_t n_prefixes;
	char prefixes[EL_ACL_PREFIXES_MAX][EL_ACL_PREFIX_MAX + 1];
};

struct el_acl {
	bool configured; /* an [acl] section was given (even an empty one) */
	uint32_t n_rules;
	struct el_acl_rule rules[EL_ACL_RULES_MAX];
};

void el_acl_init(struct el_acl *acl);
/* One config line: pattern = "ops : prefixes". 0, or EL_EINVAL with a
 * message in err that says what is wrong (EL_EFULL past the rule limit). */
int el_acl_add(struct el_acl *acl, const char *pattern, const char *value, char *err,
	       size_t err_cap);
/* May identity (NULL: anonymous) do op on lock name (name_len bytes; NULL
 * for a request that names no lock)? */
bool el_acl_allows(const struct el_acl *acl, const char *identity, enum el_acl_op op,
		   const char *name, size_t name_len);
/* The operation's config word ("lock", ...), for error messages. */
const char *el_acl_op_name(enum el_acl_op op);

#endif /* EL_ACL_H */
