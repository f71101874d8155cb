/*
 * show.c - the CLI's read and admin commands: status, locks, observe,
 * members, transfer-leader. Each prints a table for people or, with --json,
 * JSON Lines: one JSON object per line and nothing else, an object per
 * endpoint for status (and members list), per lock for locks (no line at
 * all when there are none), per state seen for observe. A reader parses
 * each line; streaming observe could not be one document anyway.
 */
#include <errno.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "el_cli.h"
#include "el_client_wire.h"
#include "el_url.h"

static const char *role_name(uint8_t r)
{
	static const char *const names[] = {"follower", "pre-candidate", "candidate", "leader"};
	return r < 4 ? names[r] : "?";
}

static const char *member_role(uint8_t r)
{
	return r == 1 ? "voter" : r == 2 ? "learner" : r == 3 ? "learner (promoting)" : "?";
}

/* --help for a command (1 when printed). main() has taken the global
 * options (--json...) out of argv already. */
static int help(int argc, char **argv, const char *text)
{
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(text, stdout);
			return 1;
		}
	}
	return 0;
}

/* {"KEY":"what","error":"why"} and a newline, for what could not be read. */
static void json_error(const char *key, const char *what, const char *why)
{
	printf("{\"%s\":", key);
	el_cli_json_str(what, strlen(what));
	fputs(",\"error\":", stdout);
	el_cli_json_str(why, strlen(why));
	fputs("}\n", stdout);
}

static struct el_cw_msg *two_msgs(void)
{
	struct el_cw_msg *m = calloc(2, sizeof(*m));
	if (m == NULL) {
		fprintf(stderr, "edgelock: out of memory\n");
		exit(EL_EXIT_SOFTWARE);
	}
	return m;
}

/* ---- status --------------------------------------------------------------- */

/* A node's log holds all it committed, so last_index < commit is a reply
 * without it (a daemon older than the field; absent decodes as 0): unknown,
 * not 0. The highest last index picks a lost quorum's survivor
 * (docs/operations.md). */
static bool last_known(const struct el_cw_msg *r)
{
	return r->last_index >= r->commit;
}

/* The width of a node id column: at least least, else the widest id r
 * names (ids run to 4294967295). Every node of a cluster names the same
 * members, so the lines of one `status` stay in line with each other. */
static int id_width(const struct el_cw_msg *r, int least)
{
	el_id_t top = r->node > r->leader ? r->node : r->leader;
	for (unsigned i = 0; i < r->n_members; i++)
		top = r->members[i].node > top ? r->members[i].node : top;
	const int w = snprintf(NULL, 0, "%u", (unsigned)top);
	return w > least ? w : least;
}

/* One member in status's JSON; its addresses (members add, or its
 * config) only when its node knows them, as members list's table shows. */
static void print_member_json(const struct el_cw_member *m, bool comma)
{
	printf("%s{\"node\":%u,\"role\":\"%s\",\"reachable\":%s", comma ? "," : "",
	       (unsigned)m->node, member_role(m->role), m->reachable ? "true" : "false");
	if (m->client_addr_len > 0) {
		fputs(",\"client_addr\":", stdout);
		el_cli_json_str((const char *)m->client_addr, m->client_addr_len);
	}
	if (m->peer_addr_len > 0) {
		fputs(",\"peer_addr\":", stdout);
		el_cli_json_str((const char *)m->peer_addr, m->peer_addr_len);
	}
	putchar('}');
}

static void print_status(const struct el_cli *cli, const char *ep, int ep_w,
			 const struct el_cw_msg *r)
{
	if (cli->json) {
		fputs("{\"endpoint\":", stdout);
		el_cli_json_str(ep, strlen(ep));
		printf(",\"node\":%u,\"role\":\"%s\",\"term\":%" PRIu64
		       ",\"leader\":%u,\"commit\":%" PRIu64 ",\"applied\":%" PRIu64,
		       (unsigned)r->node, role_name(r->role), r->term, (unsigned)r->leader, r->commit,
		       r->applied);
		if (last_known(r))
			printf(",\"last_index\":%" PRIu64, r->last_index);
		printf(",\"sessions\":%u,\"locks\":%u,\"members\":[", r->n_sessions, r->n_locks);
		for (unsigned i = 0; i < r->n_members; i++)
			print_member_json(&r->members[i], i > 0);
		printf("]}\n");
		return;
	}
	char last[24] = "?";
	if (last_known(r))
		snprintf(last, sizeof last, "%" PRIu64, r->last_index);
	const int w = id_width(r, 3);
	printf("%-*s node %-*u %-13s term %-5" PRIu64 " leader %-*u commit %-8" PRIu64
	       " applied %-8" PRIu64 " last %-8s sessions %u locks %u\n",
	       ep_w, ep, w, (unsigned)r->node, role_name(r->role), r->term, w, (unsigned)r->leader,
	       r->commit, r->applied, last, r->n_sessions, r->n_locks);
}

/* The members as r's node sees them (the leader's view when it answered). */
static void print_members(const struct el_cw_msg *r)
{
	const int w = id_width(r, 3);
	printf("members (as node %u sees them):\n", (unsigned)r->node);
	for (unsigned i = 0; i < r->n_members; i++)
		printf("  node %-*u %-20s %s%s\n", w, (unsigned)r->members[i].node,
		       member_role(r->members[i].role),
		       r->members[i].reachable ? "reachable" : "unreachable",
		       r->members[i].node == r->leader ? ", leader" : "");
}

/* members list: the membership as r's node sees it, one member a line:
 * its id, role, whether it leads, and its client and peer addresses (from
 * the member's `members add`, or its config; "-" when not known). */
static void print_membership(const struct el_cw_msg *r)
{
	const int w = id_width(r, 4);
	char client[EL_NODES_MAX][4 * EL_CW_ADDR_MAX + 1];
	int cw = 32; /* the client column: the longest address, else 32 */
	for (unsigned i = 0; i < r->n_members; i++) {
		const struct el_cw_member *m = &r->members[i];
		el_cli_text(m->client_addr, m->client_addr_len, client[i], sizeof client[i]);
		cw = (int)strlen(client[i]) > cw ? (int)strlen(client[i]) : cw;
	}
	printf("%-*s %-20s %-6s %-*s %s\n", w, "ID", "ROLE", "LEADER", cw, "CLIENT_ADDR",
	       "PEER_ADDR");
	for (unsigned i = 0; i < r->n_members; i++) {
		const struct el_cw_member *m = &r->members[i];
		char peer[4 * EL_CW_ADDR_MAX + 1];
		el_cli_text(m->peer_addr, m->peer_addr_len, peer, sizeof peer);
		printf("%-*u %-20s %-6s %-*s %s\n", w, (unsigned)m->node, member_role(m->role),
		       m->node == r->leader ? "yes" : "no", cw, client[i][0] ? client[i] : "-",
		       peer[0] ? peer : "-");
	}
	if (r->role != EL_LEADER && r->leader != 0)
		printf("(as node %u sees them: its leader, node %u, is not among the endpoints "
		       "that answered)\n", (unsigned)r->node, (unsigned)r->leader);
	else if (r->role != EL_LEADER)
		printf("(as node %u sees them: it knows no leader)\n", (unsigned)r->node);
}

/* One endpoint asked: what its node said of itself, or that it did not
 * answer at all (no connection, no reply in time: not a refusal, which
 * only a running node gives). */
struct ep_seen {
	const char *ep;
	bool answered, silent;
	el_id_t node, leader;
	uint8_t role;
	char leader_addr[EL_CW_ADDR_MAX + 1]; /* its leader's client_addr in its member list */
};

/* What asking every endpoint for its STATUS found. */
struct asked {
	unsigned up, refused; /* endpoints that answered; that refused (EPERM) */
	unsigned asked, untrusted; /* endpoints asked; whose certificate our CA did not sign */
	bool led;             /* an answer from the leader, or naming one */
	struct el_cw_msg view; /* the leader's answer, else the first one */
	el_id_t leaders[2];   /* two nodes leading one term: two clusters */
	uint64_t leaders_term;
	struct ep_seen seen[16];
};

/* What an answer says of its node and of the leader it names. */
static void note_seen(struct ep_seen *s, const char *ep, const struct el_cw_msg *r)
{
	*s = (struct ep_seen){ .ep = ep, .answered = true, .node = r->node, .leader = r->leader,
			       .role = r->role };
	for (unsigned i = 0; i < r->n_members; i++) {
		const struct el_cw_member *m = &r->members[i];
		if (m->node == r->leader && r->leader != r->node) {
			const size_t n = m->client_addr_len < EL_CW_ADDR_MAX ? m->client_addr_len
									       : EL_CW_ADDR_MAX;
			memcpy(s->leader_addr, m->client_addr, n);
			s->leader_addr[n] = '\0';
		}
	}
}

/* An IP address (IPv4, IPv6 in brackets already taken off by el_url_parse,
 * localhost as 127.0.0.1, an IPv4-mapped IPv6 one as its IPv4) into ip:
 * its length, or 0 for a name (no lookup: a health check must not wait on
 * DNS). */
static size_t ip_of(const char *host, uint8_t ip[16])
{
	if (strcasecmp(host, "localhost") == 0)
		host = "127.0.0.1";
	if (inet_pton(AF_INET, host, ip) == 1)
		return 4;
	if (inet_pton(AF_INET6, host, ip) != 1)
		return 0;
	static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };
	if (memcmp(ip, mapped, sizeof mapped) != 0)
		return 16;
	memmove(ip, ip + 12, 4);
	return 4;
}

/* Whether endpoint a and a member's client address b name one listener:
 * as written (a name case aside), or one port of one IP address, as
 * edgelockd compares members' addresses (config_host.c). */
static bool same_endpoint(const char *a, const char *b)
{
	char ha[EL_CW_ADDR_MAX + 1], hb[EL_CW_ADDR_MAX + 1], pa[8], pb[8];
	uint8_t x[16], y[16];
	if (strcasecmp(a, b) == 0)
		return true;
	if (el_url_parse(a, ha, sizeof ha, pa, sizeof pa) != EL_OK ||
	    el_url_parse(b, hb, sizeof hb, pb, sizeof pb) != EL_OK || atoi(pa) != atoi(pb))
		return false;
	const size_t n = ip_of(ha, x);
	return strcasecmp(ha, hb) == 0 || (n > 0 && n == ip_of(hb, y) && memcmp(x, y, n) == 0);
}

/* Raft elects at most one leader per term: two nodes that both lead one
 * term are two clusters that share names and ports, e.g. bootstrapped with
 * other [peers] lists, each granting the same locks with the same tokens.
 * status showed both leaders and exited 0 (an outside tester). */
static void note_leader(struct asked *a, const struct el_cw_msg *r)
{
	if (r->role != EL_LEADER)
		return;
	if (a->leaders[0] == 0 || r->term > a->leaders_term) {
		a->leaders[0] = r->node;
		a->leaders[1] = 0;
		a->leaders_term = r->term;
	} else if (r->term == a->leaders_term && r->node != a->leaders[0]) {
		a->leaders[1] = r->node;
	}
}

/* STATUS of every endpoint into *a. status prints each answer (and why an
 * endpoint did not give one) on stdout; members list only with --json (its
 * stable form: status's objects), else why one did not answer on stderr. */
static void ask_endpoints(struct el_cli *cli, bool each, struct asked *a)
{
	const char *eps[16];
	const unsigned n = el_client_endpoints(cli->client, eps, 16);
	struct el_cw_msg *m = two_msgs();
	int ep_w = 28; /* the endpoint column: the longest endpoint, else 28 */
	for (unsigned i = 0; i < n && i < 16; i++)
		ep_w = (int)strlen(eps[i]) > ep_w ? (int)strlen(eps[i]) : ep_w;
	for (unsigned i = 0; i < n && i < 16; i++, a->asked++) {
		memset(m, 0, 2 * sizeof(*m));
		m->type = EL_CW_STATUS;
		const int rc_at = el_client_request_at(cli->client, eps[i], m, m + 1);
		if (rc_at == EL_OK && m[1].err == EL_OK) {
			if (each || cli->json)
				print_status(cli, eps[i], ep_w, &m[1]);
			a->led |= m[1].role == EL_LEADER || m[1].leader != 0;
			note_leader(a, &m[1]);
			note_seen(&a->seen[i], eps[i], &m[1]);
			if (a->up++ == 0 || m[1].role == EL_LEADER)
				a->view = m[1];
			continue;
		}
		/* An answer that refuses (the [acl], the certificate) is no
		 * unreachable node: say what it said, and exit 77 for it. */
		const int err = rc_at == EL_OK ? m[1].err : rc_at;
		a->refused += err == EL_EPERM;
		const char *why = rc_at != EL_OK ? el_client_last_error(cli->client)
				  : err == EL_EPERM ? "refused: not allowed by the server's [acl]"
						    : el_strerror(err);
		a->untrusted += rc_at != EL_OK && el_cli_untrusted(why);
		a->seen[i] = (struct ep_seen){ .ep = eps[i], .silent = err != EL_EPERM &&
									!el_cli_untrusted(why) };
		if (cli->json)
			json_error("endpoint", eps[i], why);
		else if (each)
			printf("%-*s %s%s\n", ep_w, eps[i], err == EL_EPERM ? "" : "unreachable: ", why);
		else /* the library's message names the endpoint already */
			fprintf(stderr, "edgelock: %s%s%s%s\n",
				strncmp(why, eps[i], strlen(eps[i])) == 0 ? "" : eps[i],
				strncmp(why, eps[i], strlen(eps[i])) == 0 ? "" : ": ",
				err == EL_EPERM ? "" : "unreachable: ", why);
	}
	free(m);
}

/* "node 2", "nodes 1 and 2", "nodes 1, 2 and 4": the answering nodes that
 * name leader as theirs, into out. */
static void namers(const struct asked *a, el_id_t leader, char *out, size_t cap)
{
	unsigned n = 0, k = 0;
	for (unsigned i = 0; i < a->asked; i++)
		n += a->seen[i].answered && a->seen[i].leader == leader && a->seen[i].node != leader;
	size_t used = (size_t)snprintf(out, cap, "node%s", n == 1 ? "" : "s");
	for (unsigned i = 0; i < a->asked && used < cap; i++) {
		const struct ep_seen *s = &a->seen[i];
		if (!s->answered || s->leader != leader || s->node == leader)
			continue;
		k++;
		used += (size_t)snprintf(out + used, cap - used, "%s%u",
					 k == 1 ? " " : k == n ? " and " : ", ", (unsigned)s->node);
	}
}

/* The endpoint, among those asked, that gave no answer at all and is the
 * client address of the leader s names (as its member list gives it), or
 * NULL: the leader answered, or is not among the endpoints (or its address
 * is not known), and the follower's word stands. */
static const char *silent_leader_ep(const struct asked *a, const struct ep_seen *s)
{
	for (unsigned i = 0; i < a->asked; i++)
		if (a->seen[i].answered && a->seen[i].node == s->leader)
			return NULL;
	for (unsigned i = 0; i < a->asked && s->leader_addr[0] != '\0'; i++)
		if (a->seen[i].silent && same_endpoint(a->seen[i].ep, s->leader_addr))
			return a->seen[i].ep;
	return NULL;
}

/* No node that answered leads, and every one that names a leader names one
 * that is among the endpoints asked and did not answer (SIGKILLed, SIGSTOPped,
 * cut off): its followers still name it until their election timeout, and
 * status exited 0 on their word alone (an outside tester). Said, and true. */
static bool leader_unanswered(const char *command, const struct asked *a)
{
	const struct ep_seen *first = NULL;
	const char *at = NULL;
	for (unsigned i = 0; i < a->asked; i++) {
		const struct ep_seen *s = &a->seen[i];
		if (!s->answered || s->role == EL_LEADER || s->leader == 0)
			continue;
		const char *ep = silent_leader_ep(a, s);
		if (ep == NULL)
			return false;
		if (first == NULL) {
			first = s;
			at = ep;
		}
	}
	if (first == NULL)
		return false;
	char who[160];
	namers(a, first->leader, who, sizeof who);
	fprintf(stderr, "edgelock: %s: node %u, the leader %s name%s, did not answer at %s: it is "
		"stopped, paused or cut off (if it is gone, an election follows within an election "
		"timeout; ask again)\n", command, (unsigned)first->leader, who,
		strncmp(who, "nodes", 5) == 0 ? "" : "s", at);
	return true;
}

/* Followers the leader that answered does not count as such: one its
 * configuration does not list (removed, or a node of another cluster that
 * shares its ids) names it from a state the leader left, which status
 * showed as a healthy follower (an outside tester): said, and the count
 * returned (status exits 1). One it lists but has not heard from within an
 * election timeout (its link refused or cut, or it refuses the leader's
 * messages) is a warning: that may pass. */
static unsigned false_followers(const char *command, const struct asked *a)
{
	const struct el_cw_msg *v = &a->view;
	unsigned bad = 0;
	for (unsigned i = 0; i < a->asked && v->role == EL_LEADER; i++) {
		const struct ep_seen *s = &a->seen[i];
		if (!s->answered || s->role == EL_LEADER || s->leader != v->node)
			continue;
		const struct el_cw_member *m = NULL;
		for (unsigned k = 0; k < v->n_members; k++)
			m = v->members[k].node == s->node ? &v->members[k] : m;
		if (m == NULL) {
			bad++;
			fprintf(stderr, "edgelock: %s: node %u (%s) names node %u its leader, but node "
				"%u's configuration does not list it: no follower of it (removed, or a "
				"node of another cluster or incarnation with that id: its log says; "
				"stop it, or wipe it and `members add` it)\n", command,
				(unsigned)s->node, s->ep, (unsigned)v->node, (unsigned)v->node);
		} else if (!m->reachable) {
			fprintf(stderr, "edgelock: %s: warning: node %u names node %u its leader, but "
				"node %u has not heard from it within an election timeout (their link "
				"refused or cut, or it refuses the leader: both logs say why)\n",
				command, (unsigned)s->node, (unsigned)v->node, (unsigned)v->node);
		}
	}
	return bad;
}

/* A health check's exit code: when no endpoint's certificate is signed by
 * our CA, the CA file is wrong (78), the cluster not down. Nodes that
 * answer without a leader among them
 * (two of three down: the survivor a pre-candidate) serve no lock, and
 * `locks` would exit 69 now. A follower naming its leader is enough when
 * the leader is missing from the endpoint list (requests follow the
 * follower's redirect), not when it is among them and did not answer. */
static int asked_rc(const struct el_cli *cli, const char *command, const struct asked *a)
{
	if (a->asked > 0 && a->untrusted == a->asked)
		return el_cli_untrusted_hint(cli);
	if (a->leaders[1] != 0) {
		fprintf(stderr, "edgelock: %s: nodes %u and %u both lead term %llu: they are two "
			"clusters, each granting the same locks (bootstrapped with other [peers] "
			"lists? their logs say; docs/operations.md, \"Every node bootstrapped must "
			"list the same voters\")\n", command, (unsigned)a->leaders[0],
			(unsigned)a->leaders[1], (unsigned long long)a->leaders_term);
		return EL_EXIT_FAILED;
	}
	if (a->up > 0 && !a->led) {
		fprintf(stderr, "edgelock: %s: no leader: none of the %u node%s that answered "
			"is the leader or knows one (no quorum, or an election under way)\n",
			command, a->up, a->up == 1 ? "" : "s");
		return EL_EXIT_UNAVAILABLE;
	}
	if (a->up > 0 && a->leaders[0] == 0 && leader_unanswered(command, a))
		return EL_EXIT_UNAVAILABLE;
	if (a->up > 0 && false_followers(command, a) > 0)
		return EL_EXIT_FAILED;
	if (a->up == 0 && a->refused > 0)
		return el_cli_nocert_hint(cli);
	return a->up > 0 ? EL_EXIT_OK : EL_EXIT_UNAVAILABLE;
}

/* status and members list: ask, print (the members table, by print_view,
 * unless --json), exit as a health check. */
static int ask_and_print(struct el_cli *cli, const char *command, bool each,
			 void (*print_view)(const struct el_cw_msg *))
{
	int rc = el_cli_connect(cli);
	if (rc != 0)
		return rc;
	struct asked *a = calloc(1, sizeof(*a));
	if (a == NULL) {
		fprintf(stderr, "edgelock: out of memory\n");
		return EL_EXIT_SOFTWARE;
	}
	ask_endpoints(cli, each, a);
	if (a->up > 0 && !cli->json)
		print_view(&a->view);
	rc = asked_rc(cli, command, a);
	free(a);
	return rc;
}

int el_cli_status(struct el_cli *cli, int argc, char **argv)
{
	if (help(argc, argv, "usage: edgelock status [--json]\n"
			     "Ask every endpoint for its own view: node, role, term, leader,\n"
			     "commit, applied and last index (the newest entry in its log; \"?\"\n"
			     "from a daemon that does not say), sessions, locks; then the members\n"
			     "as the leader sees them (else the first node that answered).\n"
			     "reachable: that node has a live link to the member and, on the\n"
			     "leader, heard from it within an election timeout, or, on a node\n"
			     "that knows no leader (no quorum), within 2.5 (its votes go\n"
			     "unanswered): a member cut off or stopped is unreachable there even\n"
			     "while its link stays up. A follower hears from the leader only:\n"
			     "there, the link is all it can tell.\n"
			     "--json: one object per endpoint (with its members), one per line.\n"
			     "Exit 0 when a node that answered is the leader or names one (its\n"
			     "followers do, while they hear from it); 69 when none does (no\n"
			     "quorum, an election under way) or none answered, or when the\n"
			     "leader they name is among the endpoints and did not answer\n"
			     "(stopped, paused, cut off); 77 when refused; 1 when two nodes\n"
			     "lead one term (two clusters, not one), or when a node names a\n"
			     "leader whose configuration does not list it (removed, or of\n"
			     "another cluster). A node the leader lists but has not heard from\n"
			     "is a warning on stderr.\n"))
		return EL_EXIT_OK;
	if (argc > 1)
		return el_cli_bad_arg("status", argv[1]);
	return ask_and_print(cli, "status", true, print_members);
}

/* ---- locks ------------------------------------------------------------------ */

/* A semaphore's holders with their tokens (a QUERY: LIST carries only the
 * newest token): indented lines, or a JSON array closing the lock's object. */
static void permit_holders(struct el_cli *cli, const struct el_cw_lock *l)
{
	struct el_cw_msg *q = two_msgs();
	q->type = EL_CW_QUERY;
	q->name_len = l->name_len;
	memcpy(q->name, l->name, l->name_len);
	const int rc = el_client_request(cli->client, q, q + 1);
	const unsigned n = rc == EL_OK && q[1].err == EL_OK ? q[1].n_holders : 0;
	if (cli->json)
		printf(",\"permit_holders\":[");
	for (unsigned i = 0; i < n; i++) {
		const struct el_cw_holder *h = &q[1].holders[i];
		if (cli->json) {
			printf("%s{\"session\":%" PRIu64 ",\"token\":%" PRIu64 ",\"client\":",
			       i > 0 ? "," : "", h->session, h->token);
			el_cli_json_str(h->client, h->client_len);
			putchar('}');
		} else {
			char who[4 * EL_CLIENT_NAME_MAX + 1];
			printf("  permit %u: %-22s session %-10" PRIu64 " token %" PRIu64 "\n", i + 1,
			       h->client_len > 0 ? el_cli_text(h->client, h->client_len, who,
							       sizeof who) : "-",
			       h->session, h->token);
		}
	}
	if (cli->json)
		printf("]");
	free(q);
}

/* The token a lock in its lock-delay was held by: LIST says 0 (no holder),
 * QUERY's delay_token names it (a semaphore's is a log index instead, and
 * its permit_holders say the rest). l->token when there is none to ask. */
static uint64_t token_shown(struct el_cli *cli, const struct el_cw_lock *l)
{
	if (l->permits > 0 || l->n_holders > 0 || !l->delayed)
		return l->token;
	struct el_cw_msg *q = two_msgs();
	q->type = EL_CW_QUERY;
	q->name_len = l->name_len;
	memcpy(q->name, l->name, l->name_len);
	const int rc = el_client_request(cli->client, q, q + 1);
	const uint64_t token = rc == EL_OK && q[1].err == EL_OK && q[1].delayed
				       ? q[1].delay_token : l->token;
	free(q);
	return token;
}

/* One lock of the listing (a semaphore's MODE is "2/3 held"). */
static void print_lock(struct el_cli *cli, const struct el_cw_lock *l)
{
	const uint64_t token = token_shown(cli, l);
	char mode[16];
	if (l->permits > 0)
		snprintf(mode, sizeof mode, "%u/%u held", l->n_holders, l->permits);
	else
		snprintf(mode, sizeof mode, "%s", l->n_holders == 0 ? (l->delayed ? "delayed" : "free")
						  : l->mode == EL_LOCK_SHARED ? "shared" : "exclusive");
	if (cli->json) {
		fputs("{\"name\":", stdout);
		el_cli_json_str(l->name, l->name_len);
		printf(",\"mode\":\"%s\",\"holders\":%u,\"token\":%" PRIu64 ",\"waiters\":%u,"
		       "\"delayed\":%s", mode, l->n_holders, token, l->n_waiters,
		       l->delayed ? "true" : "false");
		if (l->permits > 0) {
			printf(",\"permits\":%u", l->permits);
			permit_holders(cli, l);
		}
		printf("}\n");
		return;
	}
	char name[4 * EL_NAME_MAX + 1];
	printf("%-32s %-9s %-7u %-10" PRIu64 " %u\n", el_cli_text(l->name, l->name_len, name,
								   sizeof name),
	       mode, l->n_holders, token, l->n_waiters);
	if (l->permits > 0)
		permit_holders(cli, l);
}

int el_cli_locks(struct el_cli *cli, int argc, char **argv)
{
	if (help(argc, argv, "usage: edgelock locks [--json]\n"
			     "Every lock with its mode, holders, newest token and waiters; a\n"
			     "semaphore's mode is \"2/3 held\" (holders/permits), then one line per\n"
			     "permit with its holder and token (--json: permits, permit_holders).\n"
			     "A lock is listed while it is held, waited for or in its lock-delay; a\n"
			     "name only watched (observe, el_watch) is not a lock and is left out.\n"
			     "--json: one object per lock, one per line; no line when there are none.\n"))
		return EL_EXIT_OK;
	if (argc > 1)
		return el_cli_bad_arg("locks", argv[1]);
	int rc = el_cli_connect(cli);
	if (rc != 0)
		return rc;
	struct el_cw_msg *m = two_msgs();
	uint64_t cursor = 0;
	unsigned total = 0;
	do {
		memset(m, 0, 2 * sizeof(*m));
		m->type = EL_CW_LIST;
		m->cursor = cursor;
		rc = el_client_request(cli->client, m, m + 1);
		if (rc == EL_OK && m[1].err != EL_OK) { /* the server's answer, not the library's */
			rc = m[1].err;
			cli->why = rc == EL_EPERM ? "not allowed by the server's [acl]" : el_strerror(rc);
		}
		if (rc != EL_OK) {
			free(m);
			return el_cli_fail(cli, "list locks", rc);
		}
		if (!cli->json && cursor == 0) /* after the first answer: none on an error */
			printf("%-32s %-9s %-7s %-10s %s\n", "NAME", "MODE", "HOLDERS", "TOKEN",
			       "WAITERS");
		for (unsigned i = 0; i < m[1].n_locks_listed; i++) {
			const struct el_cw_lock *l = &m[1].locks[i];
			/* LIST also names what is only watched: no lock (QUERY's view) */
			if (l->n_holders == 0 && l->n_waiters == 0 && !l->delayed)
				continue;
			print_lock(cli, l);
			total++;
		}
		cursor = m[1].cursor;
	} while (cursor != 0);
	if (!cli->json && total == 0)
		printf("(no locks)\n");
	free(m);
	return EL_EXIT_OK;
}

/* ---- observe ------------------------------------------------------------------ */

static volatile sig_atomic_t stop_observing;

static void on_stop(int sig)
{
	(void)sig;
	stop_observing = 1;
	el_cli_wake(); /* the loop's poll, whichever thread took the signal */
}

/* A query that failed says nothing of the holder: an error, never "free"
 * (--json: {"name":...,"error":...} on stdout; else a line on stderr). */
static void print_query_error(const struct el_cli *cli, const char *name)
{
	const char *why = el_client_last_error(cli->client);
	if (cli->json) {
		json_error("name", name, why);
	} else {
		fprintf(stderr, "edgelock: observe: %s\n", why);
	}
	(void)el_cli_flush(EL_EXIT_OK, NULL); /* a failure: said once, ends the loop */
}

/* The state printed last: a re-query after a reconnect that finds it
 * again is not a change, and is not printed twice. */
static struct el_lock_info last_shown;
static bool shown_valid, gap_shown;

static bool same_state(const struct el_lock_info *a, const struct el_lock_info *b)
{
	return a->held == b->held && a->shared == b->shared && a->delayed == b->delayed &&
	       a->n_holders == b->n_holders && a->token == b->token &&
	       a->holder_session == b->holder_session && a->permits == b->permits &&
	       a->value_len == b->value_len && memcmp(a->value, b->value, a->value_len) == 0;
}

/* Events were lost: the library reports the gap when the connection to the
 * leader is lost (a leader change, a cut), before any node answers again,
 * or when events came faster than they were read. The changes until the
 * watch is back cannot be told, only the state then. Said once per gap, so
 * a reader knows the stream is not every change. */
static void print_gap(const struct el_cli *cli, const char *name)
{
	if (gap_shown)
		return;
	gap_shown = true;
	if (cli->json) {
		fputs("{\"name\":", stdout);
		el_cli_json_str(name, strlen(name));
		fputs(",\"gap\":true}\n", stdout);
	} else {
		char shown[4 * EL_NAME_MAX + 1];
		printf("%s: connection to the leader lost (or events came too fast); changes "
		       "may be missed until the watch is back\n",
		       el_cli_text(name, strlen(name), shown, sizeof shown));
	}
	(void)el_cli_flush(EL_EXIT_OK, NULL); /* a failure: said once, ends the loop */
}

/* The human line: names, holders and values escaped (el_cli_text), so a
 * name cannot write to the operator's terminal. */
static void print_holder_text(const char *name_raw, const struct el_lock_info *in)
{
	char name[4 * EL_NAME_MAX + 1], who[4 * sizeof in->holder + 1];
	char value[4 * sizeof in->value + 1];
	el_cli_text(name_raw, strlen(name_raw), name, sizeof name);
	if (in->permits > 0 && in->n_holders == 0 && !in->delayed) {
		printf("%s: free (a semaphore of %u permits)\n", name, in->permits);
	} else if (in->permits > 0) { /* a semaphore: how full, the newest grant */
		printf("%s: %u/%u permits held (newest token %" PRIu64 ")%s\n", name, in->n_holders,
		       in->permits, in->token, in->delayed ? ", one or more in lock-delay" : "");
	} else if (!in->held && in->delayed) { /* not free: no one can take it yet */
		printf("%s: in lock-delay (its holder's session expired, token %" PRIu64 "); free "
		       "once the delay ends\n", name, in->token);
	} else if (in->held) {
		printf("%s: held by %s (session %" PRIu64 ", token %" PRIu64 ")%s%s\n", name,
		       in->holder[0] ? el_cli_text(in->holder, strnlen(in->holder, sizeof in->holder),
						   who, sizeof who) : "a client",
		       in->holder_session, in->token, in->value_len ? ", value " : "",
		       el_cli_text((const char *)in->value, in->value_len, value, sizeof value));
	} else {
		printf("%s: free\n", name);
	}
}

static void print_holder(const struct el_cli *cli, const char *name, int rc,
			 const struct el_lock_info *in)
{
	if (rc != EL_OK) {
		print_query_error(cli, name);
		shown_valid = false;
		return;
	}
	if (shown_valid && same_state(in, &last_shown))
		return;
	last_shown = *in;
	shown_valid = true;
	gap_shown = false;
	if (cli->json) {
		fputs("{\"name\":", stdout);
		el_cli_json_str(name, strlen(name));
		printf(",\"held\":%s,\"token\":%" PRIu64 ",\"holder\":", in->held ? "true" : "false",
		       in->token);
		el_cli_json_str(in->holder, strlen(in->holder));
		fputs(",\"value\":", stdout);
		el_cli_json_str((const char *)in->value, in->value_len);
		printf(",\"permits\":%u,\"holders\":%u,\"delayed\":%s}\n", in->permits,
		       in->n_holders, in->delayed ? "true" : "false");
	} else {
		print_holder_text(name, in);
	}
	(void)el_cli_flush(EL_EXIT_OK, NULL); /* a failure: said once, ends the loop */
}

/* After a gap: watch NAME again (the watch may have been refused or gone
 * unanswered while the connection was down) and print its state now. false
 * when either failed (said on stderr or as an error object): the caller
 * tries again, or the stream would stay silent for good. */
static bool catch_up(struct el_cli *cli, el_session *s, const char *name)
{
	struct el_lock_info info;
	if (el_watch(s, name) != EL_OK) {
		print_query_error(cli, name);
		return false;
	}
	const int rc = el_query(cli->client, name, &info);
	print_holder(cli, name, rc, &info);
	return rc == EL_OK;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* The end of a lock-delay is no event (no holder changed): while the last
 * state shown is "in lock-delay", it is asked for again every second (also
 * after a failed query), so "free" follows within a second of the end. */
static void requery_if_delayed(struct el_cli *cli, const char *name, uint64_t *at)
{
	if (!last_shown.delayed) {
		*at = 0;
		return;
	}
	if (*at == 0)
		*at = mono_ms() + 1000u;
	if (mono_ms() < *at)
		return;
	struct el_lock_info info;
	const int rc = el_query(cli->client, name, &info);
	print_holder(cli, name, rc, &info);
	*at = 0;
}

/* How long the loop may sleep: until the earlier of two timers (0: unset),
 * a second at most (the lease is looked at each time round). It looked
 * every 200 ms: 5 wake-ups a second for as long as it observed. */
static int observe_wait_ms(uint64_t retry_at, uint64_t delayed_at)
{
	const uint64_t now = mono_ms(), timers[2] = { retry_at, delayed_at };
	uint64_t wait = 1000u;
	for (int i = 0; i < 2; i++) {
		const uint64_t left = timers[i] > now ? timers[i] - now : 0;
		if (timers[i] != 0 && left < wait)
			wait = left;
	}
	return (int)wait;
}

/* The events of s until interrupted, the lease lost or stdout failing. */
static void observe_loop(struct el_cli *cli, el_session *s, const char *name, int stop_rfd)
{
	struct pollfd pfd[2] = { { .fd = el_client_event_fd(cli->client), .events = POLLIN },
				 { .fd = stop_rfd, .events = POLLIN } };
	uint64_t retry_at = 0; /* catch_up failed: when to try again; 0 none */
	uint64_t delayed_at = 0; /* when to ask again about a lock in its delay */
	while (!stop_observing && !ferror(stdout) && el_session_state(s, NULL) != EL_LEASE_LOST) {
		if (retry_at != 0 && mono_ms() >= retry_at)
			retry_at = catch_up(cli, s, name) ? 0 : mono_ms() + 1000u;
		requery_if_delayed(cli, name, &delayed_at);
		const nfds_t n = stop_rfd >= 0 ? 2 : 1;
		if (poll(pfd, n, n == 2 ? observe_wait_ms(retry_at, delayed_at) : 200) <= 0 ||
		    (pfd[0].revents & POLLIN) == 0)
			continue; /* a timer, or a signal: looked at above */
		uint64_t drained;
		if (read(pfd[0].fd, &drained, sizeof drained) < 0)
			continue;
		struct el_event ev;
		while (el_next_event(s, &ev, 0) == EL_OK) {
			if (ev.kind == EL_EVENT_GAP) {
				print_gap(cli, name);
				retry_at = catch_up(cli, s, name) ? 0 : mono_ms() + 1000u;
			} else if (ev.kind == EL_EVENT_HOLDER_CHANGED ||
				   ev.kind == EL_EVENT_VALUE_CHANGED) {
				struct el_lock_info info;
				const int rc = el_query(cli->client, name, &info);
				print_holder(cli, name, rc, &info);
			}
		}
	}
}

int el_cli_observe(struct el_cli *cli, int argc, char **argv)
{
	static const char text[] = "usage: edgelock observe NAME [--json]\n"
				   "Print who holds NAME (and an election's value), then every\n"
				   "change, until interrupted (exit 0). When the connection to the\n"
				   "leader is lost (or events came faster than read) it says changes\n"
				   "may be missed (--json: a \"gap\":true object), watches again\n"
				   "once a node answers and prints the state if it changed. A failed\n"
				   "query is an error (stderr; --json: an \"error\" object), not a\n"
				   "state. Exit 69 when no leader answered for the session's 10 s\n"
				   "lease (10-20 s after the last answer, with --timeout), 74 when\n"
				   "writing the output fails.\n";
	if (help(argc, argv, text))
		return EL_EXIT_OK;
	if (argc > 1 && (argc > 2 || argv[1][0] == '-'))
		return el_cli_bad_arg("observe", argv[argc > 2 && argv[1][0] != '-' ? 2 : 1]);
	if (argc != 2)
		return el_cli_usage("observe", "NAME is missing", NULL, text);
	int rc = el_cli_name_ok("observe", argv[1]);
	if (rc != 0 || (rc = el_cli_connect(cli)) != 0)
		return rc;
	const int stop_rfd = el_cli_wake_fd(); /* -1: the loop looks every 200 ms */
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	el_session *s;
	if ((rc = el_session_open(cli->client, 10000, &s)) != EL_OK ||
	    (rc = el_watch(s, argv[1])) != EL_OK)
		return el_cli_fail(cli, "observe", rc);
	struct el_lock_info info;
	rc = el_query(cli->client, argv[1], &info);
	print_holder(cli, argv[1], rc, &info);
	observe_loop(cli, s, argv[1], stop_rfd);
	el_session_close(s);
	if (ferror(stdout))
		return el_cli_flush(EL_EXIT_OK, NULL);
	if (stop_observing)
		return EL_EXIT_OK;
	/* The lease ran out: no leader answered a renewal for a whole TTL. */
	fprintf(stderr, "edgelock: observe %s: no leader reachable, the session was lost\n",
		argv[1]);
	return EL_EXIT_UNAVAILABLE;
}

/* ---- members, transfer-leader -------------------------------------------------- */

/* Why the leader refused a change, in the operator's terms: the reply
 * carries only a generic code (core/raft_membership.c), whose cause depends
 * on the request. A promote is refused as busy until the learner holds every
 * committed entry, which "another change is in progress" alone would hide. */
#define UNSURE_CHANGE " (proposed, but not seen committed: `edgelock members list` shows " \
		      "whether it took effect)"
static const char *admin_hint(uint8_t type, int32_t err)
{
	if (err == EL_EBUSY)
		return type == EL_CW_MEMBER_PROMOTE
			       ? " (not caught up yet, or another change is in progress; try again)"
		       : type == EL_CW_TRANSFER
			       ? " (the leader has not heard from that node lately, or a transfer is "
				 "under way: check `edgelock status`; try again)"
			       : " (another change is in progress; try again)";
	if (err == EL_EFULL)
		return " (the member table or the uncommitted log is full; try again later)";
	if (err == EL_ETIMEDOUT && type != EL_CW_TRANSFER)
		return UNSURE_CHANGE;
	/* a bare "permission denied" left the operator to guess which rule is
	 * missing; snapshot save says so too */
	if (err == EL_EPERM)
		return " (needs the admin operation in the server's [acl]: docs/security.md)";
	if (err != EL_EINVAL)
		return "";
	switch (type) {
	case EL_CW_MEMBER_ADD:
		return " (already a member, an address another member has, PEER_ADDR and "
		       "CLIENT_ADDR one address or swapped (the node's hello says), or one the "
		       "leader refuses: its log says which)";
	case EL_CW_MEMBER_PROMOTE: return " (not a learner of this cluster)";
	case EL_CW_MEMBER_REMOVE: return " (it would leave no voter)";
	case EL_CW_TRANSFER: return " (not another voter)";
	default: return "";
	}
}

/* TRANSFER refused with ENOTFOUND. A follower that knows no leader answers
 * so too (it finds no voter linked to it to hand over to before it would
 * learn it does not lead), so with no quorum the CLI said "not found" and
 * exited 1 (an outside tester). Ask every endpoint: when none that
 * answered is or knows a leader, it is 69, "no leader reachable", as locks
 * and status say; else the leader's refusal, said as such. */
static int transfer_unfound(struct el_cli *cli, const struct el_cw_msg *m, const char *what)
{
	struct asked *a = calloc(1, sizeof(*a));
	if (a == NULL) {
		fprintf(stderr, "edgelock: out of memory\n");
		return EL_EXIT_SOFTWARE;
	}
	ask_endpoints(cli, false, a);
	const bool led = a->led;
	const unsigned up = a->up;
	free(a);
	if (!led) {
		fprintf(stderr, "edgelock: %s: no leader reachable (none of the %u node%s that "
			"answered is the leader or knows one: no quorum, or an election under way)\n",
			what, up, up == 1 ? "" : "s");
		return EL_EXIT_UNAVAILABLE;
	}
	if (m->node != 0)
		fprintf(stderr, "edgelock: %s: %s (node %u is not a member)\n", what,
			el_strerror(EL_ENOTFOUND), (unsigned)m->node);
	else
		fprintf(stderr, "edgelock: %s: %s (no other voter is linked to the leader now: "
			"check `edgelock status`)\n", what, el_strerror(EL_ENOTFOUND));
	return EL_EXIT_FAILED;
}

static int admin(struct el_cli *cli, struct el_cw_msg *m, const char *what)
{
	int rc = el_cli_connect(cli);
	if (rc != 0)
		return rc;
	rc = el_client_request(cli->client, m, m + 1);
	if (rc == EL_OK && m->type == EL_CW_TRANSFER && m[1].err == EL_ENOTFOUND)
		return transfer_unfound(cli, m, what);
	if (rc == EL_OK && m[1].err == EL_ENOTFOUND) /* a bare "not found" named nothing */
		fprintf(stderr, "edgelock: %s: %s (node %u is not a member: `edgelock members "
			"list` shows them)\n", what, el_strerror(m[1].err), (unsigned)m->node);
	else if (rc == EL_OK && m[1].err != EL_OK)
		fprintf(stderr, "edgelock: %s: %s%s\n", what, el_strerror(m[1].err),
			admin_hint(m->type, m[1].err));
	if (rc == EL_OK && m[1].err != EL_OK) {
		return m[1].err == EL_EPERM	   ? el_cli_nocert_hint(cli)
		       : m[1].err == EL_ETIMEDOUT ? EL_EXIT_UNAVAILABLE /* as the library's */
						  : EL_EXIT_FAILED;
	}
	if (rc == EL_ETIMEDOUT && m->type != EL_CW_TRANSFER)
		fprintf(stderr, "edgelock: %s: no answer in time%s\n", what, UNSURE_CHANGE);
	if (rc != EL_OK)
		return el_cli_fail(cli, what, rc);
	if (m->type == EL_CW_TRANSFER) /* no log entry: the node it went to */
		printf("%s: asked node %u to take over\n", what, (unsigned)m[1].node);
	else /* the leader answers once the change commits (edgelockd's admin_wait.c) */
		printf("%s: committed at index %" PRIu64 "\n", what, m[1].index);
	return EL_EXIT_OK;
}

/* A node id as the daemon's config takes it (cmd/edgelockd/config.c): 1 to
 * 4294967295, digits only (strtoull alone would take " 4" or "-4"). 0 is
 * "none" in the Raft core; no other value is reserved. */
static bool node_id(const char *s, el_id_t *id)
{
	char *end;
	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	const unsigned long long v = strtoull(s, &end, 10);
	if (*end != '\0' || errno != 0 || v == 0 || v > UINT32_MAX)
		return false;
	*id = (el_id_t)v;
	return true;
}

/* A new member's address into dst, checked as the leader checks it
 * (member_addr_ok in cmd/edgelockd/serve.c): the leader's refusal is a bare
 * EL_EINVAL, which cannot say which address is wrong, nor why. */
static bool member_addr(const char *what, const char *a, char *dst, uint8_t *len, size_t cap)
{
	char host[EL_CW_ADDR_MAX + 1], port[8];
	const size_t n = strlen(a);
	const bool ok = n == 0 || /* empty: not known yet, as the protocol allows */
			(n <= cap && strncmp(a, "tls+tcp://", 10) == 0 &&
			 el_url_parse(a, host, sizeof host, port, sizeof port) == EL_OK);
	if (!ok) {
		char shown[4 * EL_CW_ADDR_MAX + 1];
		fprintf(stderr, "edgelock: add member: %s %s%s: ", what,
			el_cli_text(a, n < cap ? n : cap, shown, sizeof shown), n > cap ? "..." : "");
		if (n > cap)
			fprintf(stderr, "longer than %zu characters\n", cap);
		else
			fprintf(stderr, "not tls+tcp://HOST:PORT (PORT 1..65535)%s\n",
				el_url_hint(a));
		return false;
	}
	*len = (uint8_t)n;
	memcpy(dst, a, n);
	return true;
}

/* The two addresses as the leader takes them (add_refused in
 * cmd/edgelockd/serve.c): a port each, and no client address without a
 * peer address; said here, since the leader's EL_EINVAL cannot say which.
 * One address spelled two ways (localhost, 127.0.0.1) is the leader's to
 * tell (its log says so). */
static bool member_addrs_apart(const char *peer, const char *client)
{
	char shown[4 * EL_CW_ADDR_MAX + 1]; /* both checked by member_addr: short */
	if (peer[0] == '\0' && client[0] != '\0')
		fprintf(stderr, "edgelock: add member: CLIENT_ADDR %s without PEER_ADDR: give both, "
			"or neither (\"\" \"\": the node's hello gives them)\n",
			el_cli_text(client, strlen(client), shown, sizeof shown));
	else if (peer[0] != '\0' && strcasecmp(peer, client) == 0)
		fprintf(stderr, "edgelock: add member: PEER_ADDR and CLIENT_ADDR are one address, "
			"%s: a node needs a port for each (its [node] peer_addr and client_addr)\n",
			el_cli_text(peer, strlen(peer), shown, sizeof shown));
	else
		return true;
	return false;
}

static const char MEMBERS_USAGE[] =
	"usage: edgelock members list\n"
	"       edgelock members add ID PEER_ADDR CLIENT_ADDR [--learner]\n"
	"       edgelock members remove ID | promote ID\n"
	"Show or change the cluster's members (one change at a time). A new\n"
	"member catches up as a learner and is promoted unless --learner.\n"
	"list: each member's id, role (voter, learner, learner (promoting)),\n"
	"whether it is the leader, and its client and peer addresses, as the\n"
	"leader sees them (else the first node that answered, said below the\n"
	"table); endpoints that did not answer on stderr. --json: as status\n"
	"--json (one object per endpoint, with its members: their roles and\n"
	"the addresses known).\n"
	"Exits as status does: 0 when a node that answered is or names the\n"
	"leader, 69 when none does.\n";

/* An option, not an argument: "-1" is a (bad) ID, named as such. */
static bool is_option(const char *a)
{
	return a[0] == '-' && a[1] != '\0' && (a[1] < '0' || a[1] > '9');
}

/* "unknown option A" or "unexpected argument A", then the usage: EL_EXIT_USAGE. */
static int stray(const char *command, const char *a, const char *usage)
{
	return el_cli_usage(command, is_option(a) ? "unknown option" : "unexpected argument", a,
			    usage);
}

/* ID of `members SUB ID` or `transfer-leader ID` into *id: 0, or a usage
 * error naming the argument. */
static int id_arg(const char *command, const char *a, el_id_t *id, const char *usage)
{
	if (is_option(a))
		return stray(command, a, usage);
	return node_id(a, id) ? 0 : el_cli_usage(command, "ID must be a node id, 1 to 4294967295, "
						 "not", a, usage);
}

/* members add ID PEER_ADDR CLIENT_ADDR [--learner] into m: 0, or the usage
 * error naming what is wrong (or missing). */
static int add_args(int argc, char **argv, struct el_cw_msg *m)
{
	const char *c = "members add";
	int pos = 0, rc = 0;
	const char *at[3] = {NULL, NULL, NULL}; /* ID, PEER_ADDR, CLIENT_ADDR */
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--learner") == 0)
			m->learner = true;
		else if (is_option(argv[i]) || pos == 3)
			return stray(c, argv[i], MEMBERS_USAGE);
		else
			at[pos++] = argv[i];
	}
	if (pos < 3)
		return el_cli_usage(c, pos == 0   ? "ID, PEER_ADDR and CLIENT_ADDR are missing"
				       : pos == 1 ? "PEER_ADDR and CLIENT_ADDR are missing"
						  : "CLIENT_ADDR is missing", NULL, MEMBERS_USAGE);
	if ((rc = id_arg(c, at[0], &m->node, MEMBERS_USAGE)) != 0)
		return rc;
	/* an address says why itself; the usage text would bury it */
	if (!member_addr("PEER_ADDR", at[1], m->peer_addr, &m->peer_addr_len, sizeof m->peer_addr) ||
	    !member_addr("CLIENT_ADDR", at[2], m->client_addr, &m->client_addr_len,
			 sizeof m->client_addr) || !member_addrs_apart(at[1], at[2]))
		return EL_EXIT_USAGE;
	m->type = EL_CW_MEMBER_ADD;
	return 0;
}

/* members remove|promote ID into m: 0, or the usage error. */
static int id_command(int argc, char **argv, struct el_cw_msg *m)
{
	const bool remove = strcmp(argv[1], "remove") == 0;
	const char *c = remove ? "members remove" : "members promote";
	if (argc < 3)
		return el_cli_usage(c, "ID is missing", NULL, MEMBERS_USAGE);
	if (argc > 3)
		return stray(c, argv[3], MEMBERS_USAGE);
	m->type = remove ? EL_CW_MEMBER_REMOVE : EL_CW_MEMBER_PROMOTE;
	return id_arg(c, argv[2], &m->node, MEMBERS_USAGE);
}

int el_cli_members(struct el_cli *cli, int argc, char **argv)
{
	if (help(argc, argv, MEMBERS_USAGE))
		return EL_EXIT_OK;
	if (argc < 2)
		return el_cli_usage("members", "list, add, remove or promote is missing", NULL,
				    MEMBERS_USAGE);
	if (strcmp(argv[1], "list") == 0)
		return argc == 2 ? ask_and_print(cli, "members list", false, print_membership)
				 : stray("members list", argv[2], MEMBERS_USAGE);
	const bool add = strcmp(argv[1], "add") == 0;
	if (!add && strcmp(argv[1], "remove") != 0 && strcmp(argv[1], "promote") != 0)
		return el_cli_usage("members", "unknown subcommand (list, add, remove, promote):",
				    argv[1], MEMBERS_USAGE);
	if (cli->json)
		return el_cli_json_refused(add ? "members add" : argv[1][0] == 'r' ? "members remove"
							    : "members promote");
	struct el_cw_msg *m = two_msgs();
	int rc = add ? add_args(argc, argv, m) : id_command(argc, argv, m);
	if (rc == 0)
		rc = admin(cli, m, m->type == EL_CW_MEMBER_ADD ? "add member"
				   : m->type == EL_CW_MEMBER_REMOVE ? "remove member" : "promote member");
	free(m);
	return rc;
}

int el_cli_transfer(struct el_cli *cli, int argc, char **argv)
{
	static const char text[] = "usage: edgelock transfer-leader [ID]\n"
				   "Hand leadership to node ID, or to the most caught-up voter.\n"
				   "Exit 0 once the leader has begun the handover (it answers at\n"
				   "once; `edgelock status` shows when the new leader leads), 1\n"
				   "refused (the message says why), 69 no leader reachable (no\n"
				   "quorum); no --json.\n";
	if (help(argc, argv, text))
		return EL_EXIT_OK;
	if (argc > 2)
		return stray("transfer-leader", argv[2], text);
	struct el_cw_msg *m = two_msgs();
	m->type = EL_CW_TRANSFER;
	int rc = argc == 2 ? id_arg("transfer-leader", argv[1], &m->node, text) : 0;
	if (rc == 0)
		rc = admin(cli, m, "transfer leadership");
	free(m);
	return rc;
}
