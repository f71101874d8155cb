/*
 * acl.c - the client ACL (el_acl.h): parsing [acl] lines and answering
 * "may this identity do this operation on this name".
 */
#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "el_acl.h"
#include "el_error.h"

static const struct {
	const char *word;
	enum el_acl_op op;
} OPS[] = {
	{"lock", EL_ACL_LOCK},
	{"elect", EL_ACL_ELECT},
	{"observe", EL_ACL_OBSERVE},
	{"admin", EL_ACL_ADMIN},
};
#define N_OPS (sizeof(OPS) / sizeof(OPS[0]))

static int fail(char *err, size_t cap, const char *fmt, ...)
{
	if (err != NULL && cap > 0) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, cap, fmt, ap);
		va_end(ap);
	}
	return EL_EINVAL;
}

void el_acl_init(struct el_acl *acl)
{
	memset(acl, 0, sizeof(*acl));
}

const char *el_acl_op_name(enum el_acl_op op)
{
	for (size_t i = 0; i < N_OPS; i++)
		if (OPS[i].op == op)
			return OPS[i].word;
	return "?";
}

/* The next word of s (separated by spaces, tabs or commas) into out. */
static const char *next_word(const char *s, const char *end, char *out, size_t cap, size_t *len)
{
	while (s < end && (*s == ' ' || *s == '\t' || *s == ','))
		s++;
	size_t n = 0;
	while (s < end && *s != ' ' && *s != '\t' && *s != ',') {
		if (n < cap)
			out[n] = *s;
		n++;
		s++;
	}
	*len = n;
	if (n < cap)
		out[n] = '\0';
	return s;
}

static int parse_ops(struct el_acl_rule *r, const char *s, const char *end, char *err, size_t cap)
{
	char word[16];
	size_t n;
	while ((s = next_word(s, end, word, sizeof(word), &n)), n > 0) {
		size_t i = 0;
		while (i < N_OPS && (n >= sizeof(word) || strcmp(word, OPS[i].word) != 0))
			i++;
		if (i == N_OPS)
			return fail(err, cap, "unknown operation '%.*s' (lock, elect, observe, admin)",
				    (int)(n < 40 ? n : 40), s - n);
		r->ops |= (uint32_t)OPS[i].op;
	}
	return r->ops != 0 ? 0 : fail(err, cap, "no operation before ':'");
}

static int parse_prefixes(struct el_acl_rule *r, const char *s, const char *end, char *err,
			  size_t cap)
{
	size_t n;
	for (;;) {
		char *slot = r->prefixes[r->n_prefixes < EL_ACL_PREFIXES_MAX ? r->n_prefixes : 0];
		s = next_word(s, end, slot, EL_ACL_PREFIX_MAX + 1, &n);
		if (n == 0)
			break;
		if (r->n_prefixes == EL_ACL_PREFIXES_MAX)
			return fail(err, cap, "more than %d prefixes", EL_ACL_PREFIXES_MAX);
		if (n > EL_ACL_PREFIX_MAX)
			return fail(err, cap, "a prefix longer than %d bytes", EL_ACL_PREFIX_MAX);
		r->n_prefixes++;
	}
	return r->n_prefixes != 0 ? 0 : fail(err, cap, "no lock-name prefix after ':' (use * for all)");
}

int el_acl_add(struct el_acl *acl, const char *pattern, const char *value, char *err,
	       size_t err_cap)
{
	acl->configured = true;
	const size_t plen = strlen(pattern);
	if (plen == 0 || plen > EL_ACL_PATTERN_MAX)
		return fail(err, err_cap, "identity pattern must be 1 to %d bytes", EL_ACL_PATTERN_MAX);
	const char *colon = strchr(value, ':');
	if (colon == NULL)
		return fail(err, err_cap, "expected 'operations : prefixes', e.g. 'lock, observe : fleet/'");
	if (acl->n_rules == EL_ACL_RULES_MAX) {
		fail(err, err_cap, "more than %d ACL rules", EL_ACL_RULES_MAX);
		return EL_EFULL;
	}
	struct el_acl_rule *r = &acl->rules[acl->n_rules];
	memset(r, 0, sizeof(*r));
	memcpy(r->pattern, pattern, plen + 1);
	int rc = parse_ops(r, value, colon, err, err_cap);
	if (rc == 0)
		rc = parse_prefixes(r, colon + 1, value + strlen(value), err, err_cap);
	if (rc != 0)
		return rc; /* the slot stays unused: nothing changed */
	acl->n_rules++;
	return 0;
}

static bool prefix_allows(const struct el_acl_rule *r, const char *name, size_t name_len)
{
	for (uint32_t i = 0; i < r->n_prefixes; i++) {
		const char *p = r->prefixes[i];
		const size_t pl = strlen(p);
		if (strcmp(p, "*") == 0 || name == NULL)
			return true;
		if (pl <= name_len && memcmp(name, p, pl) == 0)
			return true;
	}
	return false;
}

bool el_acl_allows(const struct el_acl *acl, const char *identity, enum el_acl_op op,
		   const char *name, size_t name_len)
{
	if (!acl->configured)
		return identity != NULL;
	for (uint32_t i = 0; i < acl->n_rules; i++) {
		const struct el_acl_rule *r = &acl->rules[i];
		/* `anonymous` is only ever the client without a certificate, and
		 * a glob such as `*` never grants to it. */
		const bool anon_rule = strcmp(r->pattern, EL_ACL_ANONYMOUS) == 0;
		if (!(r->ops & (uint32_t)op))
			continue;
		if (identity == NULL ? !anon_rule : (anon_rule || fnmatch(r->pattern, identity, 0) != 0))
			continue;
		if (prefix_allows(r, name, name_len))
			return true;
	}
	return false;
}
