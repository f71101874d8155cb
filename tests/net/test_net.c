/*
 * test_net.c - the daemon's network layer through its public API alone:
 * net/el_net.h is the contract, and nothing here knows how net/net.c moves
 * bytes, so the same checks hold any implementation of that header to it.
 *
 * Real el_net instances listen on loopback with the identity tests'
 * certificates (tests/net/make-test-certs.sh: a cluster CA, node1, node2,
 * client1, and node1 again from a rogue CA); clients speak through
 * libedgelock's TLS link (net/client/link.c). The wire is TLS, then frames
 * of a 4-byte big-endian length and that many bytes. This thread drives
 * every el_net as the daemon's node thread does: poll() on el_net_fd() with
 * a deadline, el_net_drain(), el_net_item_free() for every item.
 *
 * Covered: client frames both ways (split, coalesced, larger than a TLS
 * record), bad lengths, closes from either side, max_clients, peers dialing
 * and accepting with the "node<N>" name and the cluster CA checked, the
 * handshake before el_net_peer_ready(), order, link loss and redial, peer
 * removal, input pausing, a client's full send queue, the bound on all
 * client queues together (the largest closed), reloading the TLS
 * files, a peer whose name DNS does not answer (stalled_dns.c), a peer
 * whose name does not resolve or that nobody answers for said once at
 * warning (not per redial) and its recovery at info, a peer whose packets
 * are dropped warned of within about 2 s and redialed every ~2 s, and
 * stopping with connections up (ASan reports what leaks).
 *
 *   test_net CERT_DIR
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sanitizer/lsan_interface.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "el_error.h"
#include "el_link.h"
#include "el_net.h"
#include "el_platform.h"
#include "el_test.h"
#include "stalled_dns.h"

EL_TEST_MAIN_DEFINITIONS

#define WAIT_MS 5000u  /* the most an expected event may take */
#define QUIET_MS 1500u /* how long an event that must not come is watched for */
#define CLIENT_FRAME_MAX (32u * 1024u)
#define PEER_FRAME_MAX (1u << 20)
#define ANY_CONN UINT64_MAX

static const char *cert_dir;
static char ca_file[512];
static struct el_link_config link_cfg; /* client1's certificate, the cluster CA */
static char err[300];

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_BOOTTIME, &ts); /* el_link's deadlines count on it */
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void path(char *out, size_t cap, const char *name)
{
	snprintf(out, cap, "%s/%s", cert_dir, name);
}

static void put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static uint32_t get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The bytes of test frame `seed`: every frame's content differs. */
static void fill(uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t k = 0; k < len; k++)
		b[k] = (uint8_t)(k * 31u + seed * 7u + (k >> 8));
}

static bool same(const uint8_t *b, uint32_t len, uint32_t seed)
{
	for (uint32_t k = 0; k < len; k++)
		if (b[k] != (uint8_t)(k * 31u + seed * 7u + (k >> 8)))
			return false;
	return true;
}

/* A port on 127.0.0.1 nobody listens on (the kernel's pick). The socket
 * is closed again, so the kernel may pick the same port twice in a row:
 * the last picks are remembered and skipped, or a node's two ports, or two
 * nodes', could collide ("Address already in use" at el_net_start). */
static int free_port_once(void)
{
	const int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	int port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &alen) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

static int free_port(void)
{
	static int recent[32];
	static unsigned next;
	for (;;) {
		const int port = free_port_once();
		bool seen = false;
		for (unsigned i = 0; i < sizeof recent / sizeof recent[0]; i++)
			seen = seen || (port > 0 && recent[i] == port);
		if (seen)
			continue;
		recent[next++ % (sizeof recent / sizeof recent[0])] = port;
		return port;
	}
}

static int concat(const char *out_name, const char *const parts[], unsigned n)
{
	char p[512];
	path(p, sizeof p, out_name);
	FILE *out = fopen(p, "w");
	if (out == NULL)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		char buf[4096];
		path(p, sizeof p, parts[i]);
		FILE *in = fopen(p, "r");
		if (in == NULL) {
			fclose(out);
			return -1;
		}
		size_t got;
		while ((got = fread(buf, 1, sizeof buf, in)) > 0)
			fwrite(buf, 1, got, out);
		fclose(in);
	}
	return fclose(out);
}

/* cert_dir/net-NAME.pem: NAME's certificate and key in one file. */
static int write_pem(const char *name)
{
	char crt[64], key[64], out[64];
	snprintf(crt, sizeof crt, "%s.crt", name);
	snprintf(key, sizeof key, "%s.key", name);
	snprintf(out, sizeof out, "net-%s.pem", name);
	const char *const parts[] = { crt, key };
	return concat(out, parts, 2);
}

/* ---- Nodes: one el_net each, and the items drained but not yet checked --- */

struct node {
	struct el_net *net;
	struct el_net_config cfg;
	const char *name; /* the name its certificate bears */
	char pem[512];
	int peer_port, client_port; /* 0: picked at the first start */
	char peer_url[64], client_url[64];
	struct el_net_item *head, *tail; /* held: drained, not yet taken */
};

/* At most three nodes and four clients per test; teardown() ends them. */
static struct node node_a, node_b, node_c;

static void node_init(struct node *n, const char *name, const char *pem_file)
{
	memset(n, 0, sizeof *n);
	n->name = name;
	path(n->pem, sizeof n->pem, pem_file);
	n->cfg = (struct el_net_config){
		.peer_listen = n->peer_url,
		.client_listen = n->client_url,
		.ca_file = ca_file,
		.cert_key_file = n->pem,
		.client_cert_required = true,
		.max_clients = 16,
		.peer_frame_max = PEER_FRAME_MAX,
		.client_frame_max = CLIENT_FRAME_MAX,
		.client_sendq_max = 64,
		.peer_sendq_max = 1100,
		.inq_per_conn_max = 64,
	};
}

/* Pick the ports (unless set) and write the URLs. */
static void node_ports(struct node *n)
{
	if (n->peer_port == 0)
		n->peer_port = free_port();
	if (n->client_port == 0)
		n->client_port = free_port();
	snprintf(n->peer_url, sizeof n->peer_url, "tls+tcp://127.0.0.1:%d", n->peer_port);
	snprintf(n->client_url, sizeof n->client_url, "tls+tcp://127.0.0.1:%d", n->client_port);
}

/* Start (again, on the same ports after a stop). */
static bool node_start(struct node *n)
{
	node_ports(n);
	const int rc = el_net_start(&n->net, &n->cfg);
	if (rc != EL_OK) {
		printf("  el_net_start %s: %s\n", n->name, el_strerror(rc));
		n->net = NULL;
	}
	return rc == EL_OK;
}

/* Free every item held (they must all go before el_net_stop). */
static void node_release(struct node *n)
{
	while (n->head != NULL) {
		struct el_net_item *next = n->head->next;
		el_net_item_free(n->net, n->head);
		n->head = next;
	}
	n->tail = NULL;
}

static void node_stop(struct node *n)
{
	if (n->net == NULL)
		return;
	node_release(n);
	el_net_stop(n->net);
	n->net = NULL;
}

/* Wait (until deadline) for n's fd, then drain onto the held list. */
static void pump(struct node *n, uint64_t deadline)
{
	const uint64_t now = now_ms();
	struct pollfd p = { .fd = el_net_fd(n->net), .events = POLLIN };
	if (poll(&p, 1, now >= deadline ? 0 : (int)(deadline - now)) <= 0)
		return;
	for (struct el_net_item *it = el_net_drain(n->net); it != NULL;) {
		struct el_net_item *next = it->next;
		it->next = NULL;
		if (n->tail != NULL)
			n->tail->next = it;
		else
			n->head = it;
		n->tail = it;
		it = next;
	}
}

/* Unlink the first held item of kind (on conn, unless ANY_CONN). */
static struct el_net_item *unlink_first(struct node *n, uint8_t kind, uint64_t conn)
{
	struct el_net_item *prev = NULL;
	for (struct el_net_item *it = n->head; it != NULL; prev = it, it = it->next) {
		if (it->kind != kind || (conn != ANY_CONN && it->conn != conn))
			continue;
		if (prev != NULL)
			prev->next = it->next;
		else
			n->head = it->next;
		if (n->tail == it)
			n->tail = prev;
		it->next = NULL;
		return it;
	}
	return NULL;
}

/* The first item of kind (on conn) held or arriving within ms; NULL when
 * none came. Items of other kinds stay held. The caller frees it. */
static struct el_net_item *take(struct node *n, uint8_t kind, uint64_t conn, uint32_t ms)
{
	const uint64_t deadline = now_ms() + ms;
	for (;;) {
		struct el_net_item *it = unlink_first(n, kind, conn);
		if (it != NULL || now_ms() >= deadline)
			return it;
		pump(n, deadline);
	}
}

/* An item of kind (on conn) comes within WAIT_MS; its connection in *got. */
static bool expect(struct node *n, uint8_t kind, uint64_t conn, uint64_t *got)
{
	struct el_net_item *it = take(n, kind, conn, WAIT_MS);
	if (it == NULL) {
		printf("  %s: no item of kind %u within %u ms\n", n->name, kind, WAIT_MS);
		return false;
	}
	if (got != NULL)
		*got = it->conn;
	el_net_item_free(n->net, it);
	return true;
}

/* No item of kind comes within ms (0: just what is already there). */
static bool quiet(struct node *n, uint8_t kind, uint32_t ms)
{
	struct el_net_item *it = take(n, kind, ANY_CONN, ms);
	if (it == NULL)
		return true;
	printf("  %s: unexpected item of kind %u (peer %u)\n", n->name, kind, (unsigned)it->peer);
	el_net_item_free(n->net, it);
	return false;
}

/* Held items of kind on conn. */
static unsigned held(const struct node *n, uint8_t kind, uint64_t conn)
{
	unsigned count = 0;
	for (const struct el_net_item *it = n->head; it != NULL; it = it->next)
		count += it->kind == kind && it->conn == conn;
	return count;
}

/* A frame of kind on conn comes, len bytes of test frame seed. */
static bool expect_frame(struct node *n, uint8_t kind, uint64_t conn, uint32_t len, uint32_t seed)
{
	struct el_net_item *it = take(n, kind, conn, WAIT_MS);
	if (it == NULL) {
		printf("  %s: no frame of kind %u within %u ms\n", n->name, kind, WAIT_MS);
		return false;
	}
	const bool ok = it->len == len && same(it->data, len, seed);
	if (!ok)
		printf("  %s: frame of %u bytes, %u expected, or other bytes\n", n->name, it->len, len);
	el_net_item_free(n->net, it);
	return ok;
}

static struct el_net_stats stats_of(struct node *n)
{
	struct el_net_stats st;
	el_net_stats(n->net, &st);
	return st;
}

/* ---- Clients: libedgelock's TLS link, frames by hand ------------------- */

struct client {
	struct el_link l;
	bool open;
};

static struct client cli[4];

static bool client_dial(struct client *c, const struct node *n, const char *server_name)
{
	if (el_link_dial(&c->l, &link_cfg, n->client_url, server_name, now_ms() + WAIT_MS, err,
			 sizeof err) != 0) {
		printf("  dial %s: %s\n", n->client_url, err);
		return false;
	}
	c->open = true;
	return true;
}

/* Dial n's client port; n announces the connection (its id in *conn). */
static bool client_connect(struct client *c, struct node *n, uint64_t *conn)
{
	return client_dial(c, n, n->name) && expect(n, EL_NET_CLIENT_OPENED, ANY_CONN, conn);
}

static void client_close(struct client *c)
{
	if (c->open)
		el_link_close(&c->l);
	c->open = false;
}

static bool client_write(struct client *c, const void *bytes, size_t len)
{
	return el_link_write(&c->l, bytes, len, now_ms() + WAIT_MS) == 0;
}

/* One frame of len bytes of test frame seed, in one write. */
static bool client_send_frame(struct client *c, uint32_t len, uint32_t seed)
{
	uint8_t *b = malloc(4 + (size_t)len);
	if (b == NULL)
		return false;
	put_be32(b, len);
	fill(b + 4, len, seed);
	const bool ok = client_write(c, b, 4 + (size_t)len);
	free(b);
	return ok;
}

/* The next frame to the client is len bytes of test frame seed. */
static bool client_expect_frame(struct client *c, uint32_t len, uint32_t seed)
{
	uint8_t h[4];
	if (el_link_read_exact(&c->l, h, 4, now_ms() + WAIT_MS) != 0 || get_be32(h) != len) {
		printf("  client: no frame of %u bytes\n", len);
		return false;
	}
	uint8_t *b = malloc(len);
	const bool ok = b != NULL && el_link_read_exact(&c->l, b, len, now_ms() + WAIT_MS) == 0 &&
			same(b, len, seed);
	free(b);
	return ok;
}

/* The connection ends (after whatever bytes were still on their way). */
static bool client_sees_end(struct client *c)
{
	const uint64_t deadline = now_ms() + WAIT_MS;
	uint8_t b[4096];
	int rc;
	while ((rc = el_link_read(&c->l, b, sizeof b, deadline)) > 0)
		;
	if (rc != EL_EIO)
		printf("  client: read gave %s, not the end\n", el_strerror(rc));
	return rc == EL_EIO;
}

/* A frame from the client reaches n byte-exact; n's reply reaches it so. */
static bool round_trip(struct client *c, struct node *n, uint64_t conn, uint32_t len, uint32_t seed)
{
	if (!client_send_frame(c, len, seed) || !expect_frame(n, EL_NET_CLIENT_FRAME, conn, len, seed))
		return false;
	uint8_t *reply = malloc(len);
	if (reply == NULL)
		return false;
	fill(reply, len, seed + 1);
	const int rc = el_net_client_send(n->net, conn, reply, len, false);
	free(reply);
	return rc == EL_OK && client_expect_frame(c, len, seed + 1);
}

/* ---- Fixtures ------------------------------------------------------------ */

/* ---- The log: el_log writes to stderr; a test may catch it in a file --- */

static int log_saved = -1; /* stderr while caught, else -1 */
static char log_path[600];

static void log_catch(void)
{
	path(log_path, sizeof log_path, "net-log.txt");
	fflush(stderr);
	const int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	log_saved = fd < 0 ? -1 : dup(2);
	if (log_saved >= 0)
		dup2(fd, 2);
	if (fd >= 0)
		close(fd);
}

/* Stop catching; what was caught into out (and to stderr, for the run's
 * own log). */
static void log_release(char *out, size_t cap)
{
	out[0] = '\0';
	if (log_saved < 0)
		return;
	fflush(stderr);
	dup2(log_saved, 2);
	close(log_saved);
	log_saved = -1;
	FILE *f = fopen(log_path, "r");
	const size_t n = f != NULL ? fread(out, 1, cap - 1, f) : 0;
	out[n] = '\0';
	if (f != NULL)
		fclose(f);
	fputs(out, stderr);
}

/* Lines of text holding every one of words (NULL-terminated). */
static unsigned lines_with(const char *text, const char *const words[])
{
	unsigned n = 0;
	for (const char *line = text; *line != '\0';) {
		const char *end = strchr(line, '\n');
		const size_t len = end != NULL ? (size_t)(end - line) : strlen(line);
		char one[1024];
		snprintf(one, sizeof one, "%.*s", (int)len, line);
		bool all = true;
		for (unsigned i = 0; words[i] != NULL && all; i++)
			all = strstr(one, words[i]) != NULL;
		n += all;
		line += len + (end != NULL);
	}
	return n;
}

/* What was caught so far, still catching. */
static void log_peek(char *out, size_t cap)
{
	fflush(stderr);
	FILE *f = fopen(log_path, "r");
	const size_t n = f != NULL ? fread(out, 1, cap - 1, f) : 0;
	out[n] = '\0';
	if (f != NULL)
		fclose(f);
}

/* A port on 127.0.0.1 that drops SYNs (no RST), as a host behind a cut or
 * a firewall does: a listener with a backlog of 0 whose queue is full of
 * connections never accepted (the kernel drops a SYN to a full queue).
 * hole[0] is the listener, the rest its connects; the last one is still
 * connecting when the hole works. */
#define HOLE_FDS 4
static int hole[HOLE_FDS] = { -1, -1, -1, -1 };

static int blackhole(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t alen = sizeof a;
	hole[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (hole[0] < 0 || bind(hole[0], (struct sockaddr *)&a, sizeof a) != 0 ||
	    listen(hole[0], 0) != 0 || getsockname(hole[0], (struct sockaddr *)&a, &alen) != 0)
		return -1;
	for (int k = 1; k < HOLE_FDS; k++) {
		hole[k] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (hole[k] >= 0)
			(void)connect(hole[k], (struct sockaddr *)&a, sizeof a);
	}
	struct pollfd pf = { .fd = hole[HOLE_FDS - 1], .events = POLLOUT };
	return poll(&pf, 1, 300) == 0 ? ntohs(a.sin_port) : -1; /* its SYN unanswered */
}

static void teardown(void)
{
	char rest[4096];
	log_release(rest, sizeof rest); /* a failed check returned with it caught */
	el_log_set_level(EL_LOG_INFO);
	for (int k = 0; k < HOLE_FDS; k++) {
		if (hole[k] >= 0)
			close(hole[k]);
		hole[k] = -1;
	}
	node_stop(&node_a);
	node_stop(&node_b);
	node_stop(&node_c);
	for (unsigned i = 0; i < sizeof cli / sizeof cli[0]; i++)
		client_close(&cli[i]);
}

/* Each test starts what it needs; whatever is still up after it (a failed
 * check returns early) ends here, so the next test starts clean. */
static void run(const char *name, void (*fn)(void))
{
	el_test_run(name, fn);
	teardown();
}
#define RUN(fn) run(#fn, fn)

static bool start_a(void)
{
	node_init(&node_a, "node1", "net-node1.pem");
	return node_start(&node_a);
}

/* ---- Tests: clients ------------------------------------------------------ */

static void test_client_frames_both_ways(void)
{
	uint64_t conn;
	EL_CHECK(start_a());
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	EL_CHECK(round_trip(&cli[0], &node_a, conn, 5, 1));
	EL_CHECK(round_trip(&cli[0], &node_a, conn, 1, 2));
	EL_CHECK(round_trip(&cli[0], &node_a, conn, 20000, 3)); /* more than a TLS record */
	EL_CHECK_EQ(stats_of(&node_a).clients, 1);
}

static void test_client_frames_split_and_coalesced(void)
{
	uint64_t conn;
	EL_CHECK(start_a());
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	/* the largest frame allowed, in three writes a little apart */
	static uint8_t big[4 + CLIENT_FRAME_MAX];
	put_be32(big, CLIENT_FRAME_MAX);
	fill(big + 4, CLIENT_FRAME_MAX, 10);
	EL_CHECK(client_write(&cli[0], big, 3));
	usleep(20 * 1000);
	EL_CHECK(client_write(&cli[0], big + 3, 1000));
	usleep(20 * 1000);
	EL_CHECK(client_write(&cli[0], big + 1003, sizeof big - 1003));
	EL_CHECK(expect_frame(&node_a, EL_NET_CLIENT_FRAME, conn, CLIENT_FRAME_MAX, 10));
	/* three frames in one write: three items, in order */
	static const uint32_t lens[] = { 1, 300, 2000 };
	uint8_t many[3 * 4 + 1 + 300 + 2000], *p = many;
	for (unsigned i = 0; i < 3; i++) {
		put_be32(p, lens[i]);
		fill(p + 4, lens[i], 20 + i);
		p += 4 + lens[i];
	}
	EL_CHECK(client_write(&cli[0], many, sizeof many));
	for (unsigned i = 0; i < 3; i++)
		EL_CHECK(expect_frame(&node_a, EL_NET_CLIENT_FRAME, conn, lens[i], 20 + i));
}

/* A good frame then a bad length: the frame, CLIENT_BAD, and the owner's
 * last word (close_after) reaches the client before the end. */
static bool bad_length_answered(struct client *c, uint32_t bad)
{
	uint64_t conn, closed;
	uint8_t b[4 + 2 + 4];
	put_be32(b, 2);
	fill(b + 4, 2, 30);
	put_be32(b + 6, bad);
	if (!client_connect(c, &node_a, &conn) || !client_write(c, b, sizeof b) ||
	    !expect_frame(&node_a, EL_NET_CLIENT_FRAME, conn, 2, 30) ||
	    !expect(&node_a, EL_NET_CLIENT_BAD, conn, NULL))
		return false;
	uint8_t bye[40];
	fill(bye, sizeof bye, 31);
	if (el_net_client_send(node_a.net, conn, bye, sizeof bye, true) != EL_OK)
		return false;
	return client_expect_frame(c, sizeof bye, 31) && client_sees_end(c) &&
	       expect(&node_a, EL_NET_CLIENT_CLOSED, ANY_CONN, &closed) && closed == conn;
}

static void test_client_bad_length(void)
{
	EL_CHECK(start_a());
	EL_CHECK(bad_length_answered(&cli[0], 0));
	EL_CHECK(bad_length_answered(&cli[1], CLIENT_FRAME_MAX + 1));
	EL_CHECK(bad_length_answered(&cli[2], UINT32_MAX));
	EL_CHECK_EQ(stats_of(&node_a).clients, 0);
}

static void test_close_client(void)
{
	uint64_t conn, other;
	EL_CHECK(start_a());
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	EL_CHECK(client_connect(&cli[1], &node_a, &other));
	EL_CHECK(conn != other);
	el_net_close(node_a.net, conn);
	EL_CHECK(client_sees_end(&cli[0]));
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_CLOSED, conn, NULL));
	uint8_t b[8] = { 0 };
	EL_CHECK_EQ(el_net_client_send(node_a.net, conn, b, sizeof b, false), EL_ENOTFOUND);
	EL_CHECK_EQ(el_net_conn_send(node_a.net, conn, b, sizeof b), EL_ENOTFOUND);
	EL_CHECK(round_trip(&cli[1], &node_a, other, 100, 40)); /* the other one is untouched */
	EL_CHECK_EQ(stats_of(&node_a).clients, 1);
}

static void test_client_disconnect(void)
{
	uint64_t conn, other;
	EL_CHECK(start_a());
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	EL_CHECK(client_connect(&cli[1], &node_a, &other));
	EL_CHECK_EQ(stats_of(&node_a).clients, 2);
	client_close(&cli[0]);
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_CLOSED, conn, NULL));
	EL_CHECK(quiet(&node_a, EL_NET_CLIENT_CLOSED, 0));
	EL_CHECK_EQ(stats_of(&node_a).clients, 1);
	EL_CHECK(round_trip(&cli[1], &node_a, other, 10, 50));
}

/* A client that ends in the middle of a frame larger than the receive
 * buffer (1 KiB for a client): the frame being read held a reference on
 * the connection, and the connection, its buffers and the frame were never
 * freed (up to 20 KiB per connection, anyone could repeat it: an outside
 * review). LeakSanitizer, asked now, finds nothing unreachable. */
static void test_client_gone_mid_frame(void)
{
	uint64_t conn, other;
	EL_CHECK(start_a());
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	EL_CHECK(client_connect(&cli[1], &node_a, &other));
	static uint8_t part[4 + 3000];
	put_be32(part, 8000);
	fill(part + 4, 3000, 60);
	EL_CHECK(client_write(&cli[0], part, sizeof part));
	EL_CHECK(quiet(&node_a, EL_NET_CLIENT_FRAME, 100)); /* 5,000 bytes short */
	client_close(&cli[0]);
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_CLOSED, conn, NULL));
	EL_CHECK(round_trip(&cli[1], &node_a, other, 10, 61));
	EL_CHECK_EQ(stats_of(&node_a).clients, 1);
	EL_CHECK_EQ(__lsan_do_recoverable_leak_check(), 0);
}

/* A client over max_clients: its dial is cut (not left to time out) or its
 * connection ends. */
static bool refused(struct client *c, const struct node *n)
{
	const int rc = el_link_dial(&c->l, &link_cfg, n->client_url, n->name, now_ms() + WAIT_MS,
				    err, sizeof err);
	if (rc != 0) {
		printf("  refused: %s\n", err);
		return rc == EL_EIO;
	}
	c->open = true;
	return client_sees_end(c);
}

static void test_max_clients(void)
{
	uint64_t c0, c1, c3;
	node_init(&node_a, "node1", "net-node1.pem");
	node_a.cfg.max_clients = 2;
	EL_CHECK(node_start(&node_a));
	EL_CHECK(client_connect(&cli[0], &node_a, &c0));
	EL_CHECK(client_connect(&cli[1], &node_a, &c1));
	EL_CHECK_EQ(stats_of(&node_a).clients, 2);
	EL_CHECK(refused(&cli[2], &node_a));
	EL_CHECK(quiet(&node_a, EL_NET_CLIENT_OPENED, 300));
	EL_CHECK_EQ(stats_of(&node_a).clients_refused, 1);
	EL_CHECK_EQ(stats_of(&node_a).clients, 2);
	EL_CHECK(round_trip(&cli[1], &node_a, c1, 10, 60));
	/* one leaves: room for another */
	client_close(&cli[0]);
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_CLOSED, c0, NULL));
	EL_CHECK(client_connect(&cli[3], &node_a, &c3));
	EL_CHECK(round_trip(&cli[3], &node_a, c3, 10, 61));
	EL_CHECK_EQ(stats_of(&node_a).clients, 2);
}

/* Plain TCP connections to the client port that never start TLS count
 * against max_clients from their accept: el_net_stats says so
 * (client_handshakes), so a table full of them does not read as empty;
 * once they close, neither count keeps them. */
static bool handshakes_are(struct node *n, uint32_t want)
{
	for (uint64_t end = now_ms() + WAIT_MS; now_ms() < end; usleep(20 * 1000))
		if (stats_of(n).client_handshakes == want)
			return true;
	printf("  client_handshakes %u, %u expected\n", stats_of(n).client_handshakes, want);
	return false;
}

static void test_handshakes_counted(void)
{
	enum { PLAIN = 3 };
	uint64_t conn;
	EL_CHECK(start_a());
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	struct sockaddr_in to = { .sin_family = AF_INET,
				  .sin_port = htons((uint16_t)node_a.client_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fds[PLAIN];
	for (int i = 0; i < PLAIN; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		EL_CHECK(fds[i] >= 0 && connect(fds[i], (struct sockaddr *)&to, sizeof to) == 0);
	}
	EL_CHECK(handshakes_are(&node_a, PLAIN));
	EL_CHECK_EQ(stats_of(&node_a).clients, 1); /* the TLS one, handed over */
	for (int i = 0; i < PLAIN; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	EL_CHECK(handshakes_are(&node_a, 0));
	EL_CHECK_EQ(stats_of(&node_a).clients, 1);
}

/* 500 small frames in one write while the owner holds what comes: at most
 * inq_per_conn_max wait; as the owner frees them, all 500 come, in order. */
static void test_input_paused_not_lost(void)
{
	enum { FRAMES = 500, SHARE = 8 };
	uint64_t conn;
	node_init(&node_a, "node1", "net-node1.pem");
	node_a.cfg.inq_per_conn_max = SHARE;
	EL_CHECK(node_start(&node_a));
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	static uint8_t b[FRAMES * 8];
	for (uint32_t i = 0; i < FRAMES; i++) {
		put_be32(b + 8 * i, 4);
		put_be32(b + 8 * i + 4, i);
	}
	EL_CHECK(client_write(&cli[0], b, sizeof b));
	EL_CHECK(quiet(&node_a, 0, 300)); /* kind 0 never comes: hold all for 300 ms */
	const unsigned waiting = held(&node_a, EL_NET_CLIENT_FRAME, conn);
	printf("  %u frames waiting while held\n", waiting);
	EL_CHECK(waiting >= 1 && waiting <= SHARE);
	for (uint32_t i = 0; i < FRAMES; i++) {
		struct el_net_item *it = take(&node_a, EL_NET_CLIENT_FRAME, conn, WAIT_MS);
		EL_CHECK(it != NULL);
		const bool in_order = it->len == 4 && get_be32(it->data) == i;
		el_net_item_free(node_a.net, it);
		if (!in_order)
			printf("  frame %u out of order or lost\n", i);
		EL_CHECK(in_order);
	}
	EL_CHECK_EQ(stats_of(&node_a).input_dropped, 0);
	EL_CHECK(round_trip(&cli[0], &node_a, conn, 10, 70)); /* and it reads on */
}

/* A client that never reads: sends fail with EL_EFULL at last (bounded),
 * then the connection is closed and counted. */
static void test_full_client_queue_drops_client(void)
{
	enum { SENDQ = 4, BIG = 64 * 1024, BOUND = 1000 };
	uint64_t conn;
	node_init(&node_a, "node1", "net-node1.pem");
	node_a.cfg.client_sendq_max = SENDQ;
	EL_CHECK(node_start(&node_a));
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	static uint8_t big[BIG];
	fill(big, BIG, 80);
	int rc = EL_OK;
	unsigned sent = 0;
	while (sent < BOUND && (rc = el_net_client_send(node_a.net, conn, big, BIG, false)) == EL_OK)
		sent++;
	printf("  %u frames of %u bytes queued before EL_EFULL\n", sent, (unsigned)BIG);
	EL_CHECK_EQ(rc, EL_EFULL);
	EL_CHECK(sent >= SENDQ);
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_CLOSED, conn, NULL));
	EL_CHECK_EQ(stats_of(&node_a).client_drops, 1);
	EL_CHECK_EQ(stats_of(&node_a).clients, 0);
	EL_CHECK_EQ(el_net_client_send(node_a.net, conn, big, 10, false), EL_ENOTFOUND);
}

/* A client that never reads, sent frames far under client_sendq_max: its
 * queue is bounded in bytes too (the daemon's client_queue_bytes), so it
 * is dropped with fewer than SENDQ frames queued, never more than BYTES
 * of them (the frame count alone let 1,000 such frames, 2 MiB, wait). */
static void test_client_queue_bytes_bound(void)
{
	enum { SENDQ = 1000, BYTES = 64 * 1024, FRAME = 2048, BOUND = 100000 };
	uint64_t conn;
	node_init(&node_a, "node1", "net-node1.pem");
	node_a.cfg.client_sendq_max = SENDQ;
	node_a.cfg.client_sendq_bytes_max = BYTES;
	EL_CHECK(node_start(&node_a));
	EL_CHECK(client_connect(&cli[0], &node_a, &conn));
	static uint8_t frame[FRAME];
	fill(frame, FRAME, 81);
	int rc = EL_OK;
	unsigned sent = 0;
	while (sent < BOUND &&
	       (rc = el_net_client_send(node_a.net, conn, frame, FRAME, false)) == EL_OK)
		sent++;
	uint32_t frames = 0;
	size_t bytes = 0;
	el_net_queued(node_a.net, conn, &frames, &bytes); /* closed, not reaped yet */
	printf("  %u frames of %u bytes sent, %u (%zu bytes) queued at EL_EFULL\n", sent,
	       (unsigned)FRAME, frames, bytes);
	EL_CHECK_EQ(rc, EL_EFULL);
	EL_CHECK(frames > 0 && frames < SENDQ);
	EL_CHECK(bytes <= BYTES && bytes > BYTES - 2 * (FRAME + 4 + 64));
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_CLOSED, conn, NULL));
	EL_CHECK_EQ(stats_of(&node_a).client_drops, 1);
	el_net_queued(node_a.net, conn, &frames, &bytes); /* reaped: gone */
	EL_CHECK(frames == 0 && bytes == 0);
}

/* Send frames of len bytes of test frame seed to conn until at least want
 * bytes wait in its queue (the kernel's socket buffers take theirs first),
 * counting them in *sent; after each, the client queues together hold at
 * most total (*peak: the most seen). The first refused send's code, or
 * EL_OK. */
static int queue_to(struct node *n, uint64_t conn, size_t want, uint32_t len, uint32_t seed,
		    unsigned *sent, size_t total, size_t *peak)
{
	static uint8_t frame[4096];
	fill(frame, len, seed);
	for (unsigned i = 0; i < 100000; i++) {
		uint32_t frames = 0;
		size_t bytes = 0;
		el_net_queued(n->net, conn, &frames, &bytes);
		if (bytes >= want)
			return EL_OK;
		const int rc = el_net_client_send(n->net, conn, frame, len, false);
		const size_t now = (size_t)stats_of(n).client_queued_bytes;
		*peak = now > *peak ? now : *peak;
		if (now > total)
			printf("  %zu bytes in client queues after a send, over %zu\n", now, total);
		if (rc != EL_OK)
			return rc;
		(*sent)++;
	}
	return EL_ETIMEDOUT;
}

/* Client c reads n frames of len bytes of test frame seed, in order, while
 * node nd is pumped (its queue for c goes as c's socket drains). */
static bool client_reads_all(struct client *c, struct node *nd, unsigned n, uint32_t len,
			     uint32_t seed)
{
	static uint8_t b[4 + 4096];
	const uint64_t deadline = now_ms() + 4 * WAIT_MS;
	size_t have = 0;
	unsigned got = 0;
	while (got < n && now_ms() < deadline) {
		pump(nd, now_ms() + 1);
		const int r = el_link_read(&c->l, b + have, 4 + len - have, now_ms() + 10);
		if (r == EL_ETIMEDOUT)
			continue;
		if (r < 0)
			break;
		have += (size_t)r;
		if (have < 4 + len)
			continue;
		if (get_be32(b) != len || !same(b + 4, len, seed))
			break;
		have = 0;
		got++;
	}
	if (got < n)
		printf("  client read %u of %u frames\n", got, n);
	return got == n;
}

/* Clients that never read, each under its own client_sendq_bytes_max: all
 * their queues together stay within client_sendq_total_max. Past it the
 * client with the largest queue is closed: another than the sender when
 * that one's is larger, the sender when its own is; each counted in
 * client_evictions (not client_drops), and the others keep every frame.
 * Without the bound max_clients such connections (1,024 of 128 KiB) could
 * pin 128 MiB. */
static void test_client_queues_total_bound(void)
{
	enum { BYTES = 96 * 1024, TOTAL = 160 * 1024, FRAME = 2048, N = 4, KIB = 1024 };
	uint64_t conn[N];
	unsigned sent[N] = { 0 };
	size_t peak = 0;
	node_init(&node_a, "node1", "net-node1.pem");
	node_a.cfg.client_sendq_max = 1000;
	node_a.cfg.client_sendq_bytes_max = BYTES;
	node_a.cfg.client_sendq_total_max = TOTAL;
	EL_CHECK(node_start(&node_a));
	for (int k = 0; k < N; k++)
		EL_CHECK(client_connect(&cli[k], &node_a, &conn[k]));
	/* 80 + 30 + 20 KiB: under the total, nobody closed */
	EL_CHECK_EQ(queue_to(&node_a, conn[0], 80 * KIB, FRAME, 90, &sent[0], TOTAL, &peak), EL_OK);
	EL_CHECK_EQ(queue_to(&node_a, conn[1], 30 * KIB, FRAME, 91, &sent[1], TOTAL, &peak), EL_OK);
	EL_CHECK_EQ(queue_to(&node_a, conn[2], 20 * KIB, FRAME, 92, &sent[2], TOTAL, &peak), EL_OK);
	EL_CHECK_EQ(stats_of(&node_a).client_evictions, 0);
	/* the fourth, empty at first, passes the total at about 30 KiB: the
	 * first (80 KiB) is closed, not the sender, whose sends all go */
	log_catch();
	EL_CHECK_EQ(queue_to(&node_a, conn[3], 40 * KIB, FRAME, 93, &sent[3], TOTAL, &peak), EL_OK);
	EL_CHECK_EQ(stats_of(&node_a).client_evictions, 1);
	char text[2048], want[64];
	log_release(text, sizeof text);
	snprintf(want, sizeof want, "client conn %llu from ", (unsigned long long)conn[0]);
	const char *said[] = { "warning: net: ", want, "was the largest", "bytes not read",
			       "client_queues_total_bytes = 163840", NULL };
	for (int i = 0; said[i] != NULL; i++)
		EL_CHECK(strstr(text, said[i]) != NULL);
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_CLOSED, conn[0], NULL));
	EL_CHECK(client_sees_end(&cli[0]));
	EL_CHECK_EQ(el_net_client_send(node_a.net, conn[0], (const uint8_t *)"x", 1, false),
		    EL_ENOTFOUND);
	/* now 60 + 20 + 40: the fourth grows past the second and passes the
	 * total at about 80 KiB, under its own 96: the sender is the largest */
	EL_CHECK_EQ(queue_to(&node_a, conn[1], 60 * KIB, FRAME, 91, &sent[1], TOTAL, &peak), EL_OK);
	EL_CHECK_EQ(queue_to(&node_a, conn[3], BYTES, FRAME, 93, &sent[3], TOTAL, &peak),
		    EL_ENOTFOUND);
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_CLOSED, conn[3], NULL));
	const struct el_net_stats st = stats_of(&node_a);
	printf("  %u, %u, %u, %u frames of %u bytes sent; client queues at most %zu bytes "
	       "(bound %u); %llu closed as the largest\n", sent[0], sent[1], sent[2], sent[3],
	       (unsigned)FRAME, peak, (unsigned)TOTAL, (unsigned long long)st.client_evictions);
	EL_CHECK(peak <= TOTAL && peak > TOTAL - 2 * (FRAME + 4 + 64));
	EL_CHECK_EQ(st.client_evictions, 2);
	EL_CHECK_EQ(st.client_drops, 0);
	EL_CHECK_EQ(st.clients, 2);
	/* the other two were never closed: every frame sent reaches them */
	EL_CHECK(client_reads_all(&cli[1], &node_a, sent[1], FRAME, 91));
	EL_CHECK(client_reads_all(&cli[2], &node_a, sent[2], FRAME, 92));
	EL_CHECK_EQ(stats_of(&node_a).client_queued_bytes, 0);
	EL_CHECK(round_trip(&cli[1], &node_a, conn[1], 10, 94));
	EL_CHECK(round_trip(&cli[2], &node_a, conn[2], 10, 95));
}

/* ---- Tests: peers -------------------------------------------------------- */

/* a dials b as peer id: the connection a dialed and the one b accepted. */
static bool dial_peer(struct node *a, struct node *b, el_id_t id, uint64_t *dialed,
		      uint64_t *accepted)
{
	if (el_net_peer_set(a->net, id, b->peer_url) != EL_OK)
		return false;
	struct el_net_item *it = take(a, EL_NET_PEER_DIALED, ANY_CONN, WAIT_MS);
	if (it == NULL) {
		printf("  %s: no PEER_DIALED for %s within %u ms\n", a->name, b->name, WAIT_MS);
		return false;
	}
	const bool ok = it->peer == id;
	*dialed = it->conn;
	el_net_item_free(a->net, it);
	return ok && expect(b, EL_NET_PEER_OPENED, ANY_CONN, accepted);
}

/* The exchange before the first Raft message, both ways, then ready. */
static bool handshake(struct node *a, struct node *b, el_id_t id, uint64_t dialed,
		      uint64_t accepted)
{
	uint8_t hello[64];
	fill(hello, sizeof hello, 90);
	if (el_net_conn_send(a->net, dialed, hello, sizeof hello) != EL_OK ||
	    !expect_frame(b, EL_NET_PEER_FRAME, accepted, sizeof hello, 90))
		return false;
	fill(hello, sizeof hello, 91);
	if (el_net_conn_send(b->net, accepted, hello, sizeof hello) != EL_OK)
		return false;
	struct el_net_item *it = take(a, EL_NET_PEER_OUT_FRAME, dialed, WAIT_MS);
	const bool ok = it != NULL && it->peer == id && it->len == sizeof hello &&
			same(it->data, sizeof hello, 91);
	if (it != NULL)
		el_net_item_free(a->net, it);
	if (ok)
		el_net_peer_ready(a->net, dialed);
	return ok;
}

/* node_a (node1) and node_b (node2) up; a's link to b (peer 2) ready. */
static bool linked_pair(uint64_t *dialed, uint64_t *accepted)
{
	node_init(&node_a, "node1", "net-node1.pem");
	node_init(&node_b, "node2", "net-node2.pem");
	return node_start(&node_a) && node_start(&node_b) &&
	       dial_peer(&node_a, &node_b, 2, dialed, accepted) &&
	       handshake(&node_a, &node_b, 2, *dialed, *accepted);
}

static void test_peer_dial_handshake_ready(void)
{
	uint64_t dialed, accepted;
	uint8_t b[16];
	fill(b, sizeof b, 100);
	node_init(&node_a, "node1", "net-node1.pem");
	node_init(&node_b, "node2", "net-node2.pem");
	EL_CHECK(node_start(&node_a) && node_start(&node_b));
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, sizeof b), EL_ENOTFOUND); /* no such peer */
	EL_CHECK(!el_net_peer_up(node_a.net, 2));
	EL_CHECK(dial_peer(&node_a, &node_b, 2, &dialed, &accepted));
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, sizeof b), EL_ENOTFOUND); /* not ready */
	EL_CHECK(!el_net_peer_up(node_a.net, 2));
	EL_CHECK(handshake(&node_a, &node_b, 2, dialed, accepted));
	EL_CHECK(el_net_peer_up(node_a.net, 2));
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, sizeof b), EL_OK);
	EL_CHECK(expect_frame(&node_b, EL_NET_PEER_FRAME, accepted, sizeof b, 100));
	EL_CHECK_EQ(el_net_peer_set(node_a.net, 2, node_b.peer_url), EL_OK); /* idempotent */
	EL_CHECK(quiet(&node_a, EL_NET_PEER_LINK_LOST, 100));
	EL_CHECK(el_net_peer_up(node_a.net, 2));
}

static void test_peer_frames_in_order(void)
{
	enum { FRAMES = 1000 };
	uint64_t dialed, accepted;
	EL_CHECK(linked_pair(&dialed, &accepted));
	uint8_t b[4 + 64];
	for (uint32_t i = 0; i < FRAMES; i++) {
		put_be32(b, i);
		fill(b + 4, 64, i);
		EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, 4 + i % 64), EL_OK);
	}
	for (uint32_t i = 0; i < FRAMES; i++) {
		struct el_net_item *it = take(&node_b, EL_NET_PEER_FRAME, accepted, WAIT_MS);
		EL_CHECK(it != NULL);
		const bool ok = it->len == 4 + i % 64 && get_be32(it->data) == i &&
				same(it->data + 4, i % 64, i);
		el_net_item_free(node_b.net, it);
		if (!ok)
			printf("  frame %u out of order, lost or changed\n", i);
		EL_CHECK(ok);
	}
	EL_CHECK_EQ(stats_of(&node_a).peer_frames_dropped, 0);
}

/* Frames larger than a TLS record (16 KiB), both ways. */
static void test_peer_large_frames(void)
{
	enum { LARGE = 100 * 1024 };
	uint64_t dialed, accepted;
	EL_CHECK(linked_pair(&dialed, &accepted));
	static uint8_t b[LARGE];
	fill(b, LARGE, 110);
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, LARGE), EL_OK);
	EL_CHECK(expect_frame(&node_b, EL_NET_PEER_FRAME, accepted, LARGE, 110));
	fill(b, LARGE, 111);
	EL_CHECK_EQ(el_net_conn_send(node_b.net, accepted, b, LARGE), EL_OK);
	EL_CHECK(expect_frame(&node_a, EL_NET_PEER_OUT_FRAME, dialed, LARGE, 111));
	fill(b, 17000, 112);
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, 17000), EL_OK);
	EL_CHECK(expect_frame(&node_b, EL_NET_PEER_FRAME, accepted, 17000, 112));
}

/* A peer that stops reading (b's owner never drains: a stopped follower)
 * while a keeps sending it big frames (snapshot chunks): a's queue is
 * bounded in bytes (the daemon's peer_queue_bytes), far under
 * peer_sendq_max frames; past it frames are dropped and counted, the link
 * stays, and what was queued arrives in order once b reads again (the
 * frame count alone let 1,100 such frames, 35 MiB, wait). */
static void test_peer_queue_bytes_bound(void)
{
	enum { BYTES = 256 * 1024, FRAME = 32 * 1024, BOUND = 100000 };
	uint64_t dialed, accepted;
	node_init(&node_a, "node1", "net-node1.pem");
	node_init(&node_b, "node2", "net-node2.pem");
	node_a.cfg.peer_sendq_bytes_max = BYTES;
	EL_CHECK(node_start(&node_a) && node_start(&node_b) &&
		 dial_peer(&node_a, &node_b, 2, &dialed, &accepted) &&
		 handshake(&node_a, &node_b, 2, dialed, accepted));
	static uint8_t frame[FRAME];
	fill(frame, FRAME, 130);
	int rc = EL_OK;
	unsigned sent = 0;
	while (sent < BOUND && (rc = el_net_peer_send(node_a.net, 2, frame, FRAME)) == EL_OK)
		sent++;
	uint32_t frames = 0;
	size_t bytes = 0;
	el_net_peer_queued(node_a.net, 2, &frames, &bytes);
	printf("  %u frames of %u bytes sent, %u (%zu bytes) queued at EL_EFULL\n", sent,
	       (unsigned)FRAME, frames, bytes);
	EL_CHECK_EQ(rc, EL_EFULL);
	EL_CHECK(frames > 0 && frames < node_a.cfg.peer_sendq_max);
	EL_CHECK(bytes <= BYTES && bytes > BYTES - 2 * (FRAME + 4 + 64));
	EL_CHECK_EQ(stats_of(&node_a).peer_frames_dropped, 1);
	EL_CHECK(el_net_peer_up(node_a.net, 2)); /* dropped, not closed */
	unsigned got = 0;
	bool in_order = true;
	const uint64_t end = now_ms() + 10 * WAIT_MS;
	while (got < sent && now_ms() < end) {
		pump(&node_a, now_ms() + 1); /* a writes its queue as b reads */
		struct el_net_item *it = take(&node_b, EL_NET_PEER_FRAME, accepted, 5);
		if (it != NULL) {
			in_order = in_order && it->len == FRAME && same(it->data, FRAME, 130);
			got++;
			el_net_item_free(node_b.net, it);
		}
		node_release(&node_a);
	}
	EL_CHECK_EQ(got, sent);
	EL_CHECK(in_order);
	el_net_peer_queued(node_a.net, 2, &frames, &bytes);
	EL_CHECK(frames == 0 && bytes == 0);
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, frame, FRAME), EL_OK);
	EL_CHECK(expect_frame(&node_b, EL_NET_PEER_FRAME, accepted, FRAME, 130));
}

/* The link breaks (b closes its side): a says so and redials by itself. */
static void test_link_lost_redials(void)
{
	uint64_t dialed, accepted, again, reaccepted;
	EL_CHECK(linked_pair(&dialed, &accepted));
	el_net_close(node_b.net, accepted);
	EL_CHECK(expect(&node_b, EL_NET_PEER_CLOSED, accepted, NULL));
	struct el_net_item *it = take(&node_a, EL_NET_PEER_LINK_LOST, ANY_CONN, WAIT_MS);
	EL_CHECK(it != NULL);
	const el_id_t lost = it->peer;
	el_net_item_free(node_a.net, it);
	EL_CHECK_EQ(lost, 2);
	EL_CHECK(!el_net_peer_up(node_a.net, 2));
	uint8_t b[8] = { 0 };
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, sizeof b), EL_ENOTFOUND);
	it = take(&node_a, EL_NET_PEER_DIALED, ANY_CONN, WAIT_MS);
	EL_CHECK(it != NULL);
	again = it->conn;
	const el_id_t peer = it->peer;
	el_net_item_free(node_a.net, it);
	EL_CHECK_EQ(peer, 2);
	EL_CHECK(again != dialed); /* ids are never reused */
	EL_CHECK(expect(&node_b, EL_NET_PEER_OPENED, ANY_CONN, &reaccepted));
	EL_CHECK(handshake(&node_a, &node_b, 2, again, reaccepted));
	EL_CHECK(el_net_peer_up(node_a.net, 2));
}

/* b stops and starts again on the same port: a redials it. */
static void test_restarted_peer_redialed(void)
{
	uint64_t dialed, accepted, again, reaccepted;
	EL_CHECK(linked_pair(&dialed, &accepted));
	node_stop(&node_b);
	EL_CHECK(expect(&node_a, EL_NET_PEER_LINK_LOST, ANY_CONN, NULL));
	EL_CHECK(quiet(&node_a, EL_NET_PEER_DIALED, 500)); /* nobody there: a keeps trying */
	EL_CHECK(node_start(&node_b));
	EL_CHECK(expect(&node_a, EL_NET_PEER_DIALED, ANY_CONN, &again));
	EL_CHECK(expect(&node_b, EL_NET_PEER_OPENED, ANY_CONN, &reaccepted));
	EL_CHECK(handshake(&node_a, &node_b, 2, again, reaccepted));
	uint8_t b[8];
	fill(b, sizeof b, 120);
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, sizeof b), EL_OK);
	EL_CHECK(expect_frame(&node_b, EL_NET_PEER_FRAME, reaccepted, sizeof b, 120));
}

/* b's owner closes every connection it accepts at once (as a node of
 * another cluster does after the hello): a dials again with the backoff
 * doubling from 50 ms, so the fifth link comes at least 400 ms after the
 * fourth (with no backoff it comes a handshake and 50 ms later). */
static void test_refused_link_backs_off(void)
{
	node_init(&node_a, "node1", "net-node1.pem");
	node_init(&node_b, "node2", "net-node2.pem");
	EL_CHECK(node_start(&node_a) && node_start(&node_b));
	EL_CHECK_EQ(el_net_peer_set(node_a.net, 2, node_b.peer_url), EL_OK);
	uint64_t at[5];
	unsigned links = 0;
	const uint64_t end = now_ms() + 5000;
	while (links < 5 && now_ms() < end) {
		pump(&node_a, now_ms() + 5);
		pump(&node_b, now_ms() + 5);
		struct el_net_item *it;
		while ((it = unlink_first(&node_b, EL_NET_PEER_OPENED, ANY_CONN)) != NULL) {
			el_net_close(node_b.net, it->conn);
			el_net_item_free(node_b.net, it);
		}
		while ((it = unlink_first(&node_a, EL_NET_PEER_DIALED, ANY_CONN)) != NULL) {
			if (links < 5)
				at[links++] = now_ms();
			el_net_item_free(node_a.net, it);
		}
		node_release(&node_a);
		node_release(&node_b);
	}
	EL_CHECK_EQ(links, 5u);
	if (links == 5)
		printf("  links at +%llu, +%llu, +%llu, +%llu ms\n",
		       (unsigned long long)(at[1] - at[0]), (unsigned long long)(at[2] - at[0]),
		       (unsigned long long)(at[3] - at[0]), (unsigned long long)(at[4] - at[0]));
	EL_CHECK(links == 5 && at[4] - at[3] >= 400);
}

/* 80 plain TCP connections to the peer port that never start TLS: at most
 * 64 are kept in their handshake (until its 10 s deadline), the oldest are
 * cut for newer ones, so a real peer links while the 64 are still open (it
 * was refused until they were gone: an outside review). */
static void test_peer_port_bounded(void)
{
	enum { FLOOD = 80, KEPT = 64 };
	node_init(&node_a, "node1", "net-node1.pem");
	node_init(&node_b, "node2", "net-node2.pem");
	EL_CHECK(node_start(&node_a) && node_start(&node_b));
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons((uint16_t)node_b.peer_port),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fds[FLOOD];
	for (int i = 0; i < FLOOD; i++) {
		fds[i] = socket(AF_INET, SOCK_STREAM, 0);
		if (fds[i] >= 0 && connect(fds[i], (struct sockaddr *)&to, sizeof to) != 0) {
			close(fds[i]);
			fds[i] = -1;
		}
	}
	usleep(500 * 1000);
	int ended = 0;
	for (int i = 0; i < FLOOD; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };
		char b;
		if (fds[i] < 0 || (poll(&p, 1, 0) == 1 && recv(fds[i], &b, 1, MSG_DONTWAIT) <= 0))
			ended++;
	}
	printf("  %d of %d plain connections ended at once\n", ended, FLOOD);
	EL_CHECK_EQ(ended, FLOOD - KEPT);
	uint64_t dialed, accepted;
	EL_CHECK(dial_peer(&node_a, &node_b, 2, &dialed, &accepted)); /* beside the flood */
	for (int i = 0; i < FLOOD; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* A dial the certificates must refuse, watched for QUIET_MS with both
 * sides acting as owners: each connection announced would get a hello at
 * once (never el_net_peer_ready). A connection is announced only once its
 * TLS handshake is done, so none may be, and nothing may cross. */
struct refusal {
	unsigned dialed, lost, opened, closed, frames;
};

static void refusal_step(struct node *n, struct refusal *r)
{
	static const uint8_t hello[16] = "hello, refused?";
	pump(n, now_ms() + 10);
	while (n->head != NULL) {
		struct el_net_item *it = n->head;
		n->head = it->next;
		if (n->head == NULL)
			n->tail = NULL;
		if (it->kind == EL_NET_PEER_DIALED || it->kind == EL_NET_PEER_OPENED)
			(void)el_net_conn_send(n->net, it->conn, hello, sizeof hello);
		r->dialed += it->kind == EL_NET_PEER_DIALED;
		r->lost += it->kind == EL_NET_PEER_LINK_LOST;
		r->opened += it->kind == EL_NET_PEER_OPENED;
		r->closed += it->kind == EL_NET_PEER_CLOSED;
		r->frames += it->kind == EL_NET_PEER_FRAME || it->kind == EL_NET_PEER_OUT_FRAME;
		el_net_item_free(n->net, it);
	}
}

static bool refused_through(struct node *dialer, struct node *acceptor, el_id_t id)
{
	struct refusal r = { 0 };
	const uint64_t end = now_ms() + QUIET_MS;
	while (now_ms() < end) {
		refusal_step(dialer, &r);
		refusal_step(acceptor, &r);
	}
	printf("  announced: %u dialed (%u lost), %u opened (%u closed); %u frames crossed\n",
	       r.dialed, r.lost, r.opened, r.closed, r.frames);
	return r.frames == 0 && r.dialed == 0 && r.opened == 0 && r.lost == 0 && r.closed == 0 &&
	       !el_net_peer_up(dialer->net, id);
}

/* a dials "node3" at b's address, where b presents node2's certificate. */
static void test_wrong_server_name_refused(void)
{
	node_init(&node_a, "node1", "net-node1.pem");
	node_init(&node_b, "node2", "net-node2.pem");
	EL_CHECK(node_start(&node_a) && node_start(&node_b));
	EL_CHECK_EQ(el_net_peer_set(node_a.net, 3, node_b.peer_url), EL_OK);
	EL_CHECK(refused_through(&node_a, &node_b, 3));
}

/* node1's name signed by another CA dials b (whose certificate it trusts):
 * b's check of the cluster CA refuses it. */
static void test_foreign_ca_peer_refused(void)
{
	node_init(&node_b, "node2", "net-node2.pem");
	node_init(&node_c, "node1", "net-rogue-node1.pem");
	EL_CHECK(node_start(&node_b) && node_start(&node_c));
	EL_CHECK_EQ(el_net_peer_set(node_c.net, 2, node_b.peer_url), EL_OK);
	EL_CHECK(refused_through(&node_c, &node_b, 2));
}

/* A peer named by a host whose DNS does not answer: the name is looked up
 * beside the handshake thread, which goes on accepting and handshaking
 * clients meanwhile, each well within the lookup's stall. (A
 * lookup on the handshake thread itself held every accept up to the
 * resolver's timeout.) Then the peer's address is set to a real node: the
 * stalled lookup is dropped and the new address linked. */
static void test_stalled_peer_name_keeps_accepting(void)
{
	EL_CHECK(start_a());
	node_init(&node_b, "node2", "net-node2.pem");
	EL_CHECK(node_start(&node_b));
	EL_CHECK_EQ(el_net_peer_set(node_a.net, 2, "tls+tcp://" STALLED_DNS_NAME ":4433"), EL_OK);
	struct timespec nap = { 0, 50 * 1000000L }; /* the first lookup is under way */
	nanosleep(&nap, NULL);
	uint64_t worst = 0;
	for (int i = 0; i < 4; i++) {
		const uint64_t t0 = now_ms();
		uint64_t conn;
		EL_CHECK(client_connect(&cli[i], &node_a, &conn));
		const uint64_t took = now_ms() - t0;
		worst = took > worst ? took : worst;
		nanosleep(&nap, NULL);
	}
	printf("  4 clients accepted while DNS stalls, the slowest in %llu ms\n",
	       (unsigned long long)worst);
	/* held by the lookup, the first would wait most of its 2 s; a loaded
	 * machine took 357 ms unheld, so the bound is half the stall */
	EL_CHECK(worst < STALLED_DNS_MS / 2);
	EL_CHECK(!el_net_peer_up(node_a.net, 2));
	EL_CHECK_EQ(el_net_peer_set(node_a.net, 2, node_b.peer_url), EL_OK);
	struct el_net_item *it = take(&node_a, EL_NET_PEER_DIALED, ANY_CONN, WAIT_MS);
	EL_CHECK(it != NULL && it->peer == 2);
	if (it != NULL)
		el_net_item_free(node_a.net, it);
	EL_CHECK(stalled_dns_wait_idle());
}

/* a's dials of node 2 at url fail for 4.5 s (every ~2 s once the backoff
 * is at its bound); then fix() makes them work. What a logged, at info. */
static void failing_dials(const char *url, void (*fix)(void), char *text, size_t cap)
{
	text[0] = '\0';
	log_catch();
	EL_CHECK_EQ(el_net_peer_set(node_a.net, 2, url), EL_OK);
	EL_CHECK(quiet(&node_a, EL_NET_PEER_DIALED, 4500)); /* 7 dials or so */
	fix();
	struct el_net_item *it = take(&node_a, EL_NET_PEER_DIALED, ANY_CONN, WAIT_MS);
	EL_CHECK(it != NULL && it->peer == 2);
	el_net_item_free(node_a.net, it);
	log_release(text, cap);
}

static void name_added(void)
{
	missing_dns_resolves(true);
}

/* A peer whose name does not resolve ([peers] 2 = tls+tcp://no-such-host
 * .invalid:9142) was said only at debug level, every ~2 s: nothing at info
 * or warning (an outside tester). Now the first failure is a warning, the
 * next ones are quiet, and when the name resolves an info line says so,
 * counting the dials that failed, before the link's own. */
static void test_unresolved_peer_said_once(void)
{
	char url[96], text[8192];
	EL_CHECK(start_a());
	node_init(&node_b, "node2", "net-node2.pem");
	EL_CHECK(node_start(&node_b));
	snprintf(url, sizeof url, "tls+tcp://" MISSING_DNS_NAME ":%d", node_b.peer_port);
	failing_dials(url, name_added, text, sizeof text);
	missing_dns_resolves(false);
	const char *warned[] = { "warning: net: node 2 at ", url, "cannot resolve " MISSING_DNS_NAME,
				 "until it resolves", NULL };
	const char *any[] = { MISSING_DNS_NAME, NULL };
	const char *found[] = { "info: net: node 2 at ", url, "the name resolves now", NULL };
	const char *up[] = { "info: net: connected to node 2 at ", url, NULL };
	EL_CHECK_EQ(lines_with(text, warned), 1u);
	EL_CHECK_EQ(lines_with(text, found), 1u);
	EL_CHECK_EQ(lines_with(text, up), 1u);
	EL_CHECK_EQ(lines_with(text, any), 3u); /* those three, no line per redial */
}

static void peer_started(void)
{
	(void)node_start(&node_b);
}

/* A peer nobody answers for: its first failures are a peer restarting and
 * stay quiet; once they last, one warning says why, then quiet until the
 * link is up, whose line ends it. */
static void test_unreachable_peer_said_once(void)
{
	char text[8192];
	EL_CHECK(start_a());
	node_init(&node_b, "node2", "net-node2.pem");
	node_ports(&node_b); /* its address, nobody there yet */
	failing_dials(node_b.peer_url, peer_started, text, sizeof text);
	EL_CHECK(node_b.net != NULL);
	const char *warned[] = { "warning: net: node 2 at ", node_b.peer_url,
				 "cannot connect: Connection refused", "until it connects", NULL };
	const char *any[] = { node_b.peer_url, NULL };
	const char *up[] = { "info: net: connected to node 2 at ", node_b.peer_url,
			     "failed dial", NULL };
	EL_CHECK_EQ(lines_with(text, warned), 1u);
	EL_CHECK_EQ(lines_with(text, up), 1u);
	EL_CHECK_EQ(lines_with(text, any), 2u);
}

/* A peer whose packets are dropped (no RST): a dial times out in about
 * 2 s, the warning comes with its failure, and redials follow every ~2 s
 * (debug). The kernel's SYN retries, bounded only by the 10 s handshake
 * deadline, made every dial take 10 s: the warning came after five of
 * them, none at all in an 18 s cut (an outside tester). */
static void test_blackholed_peer_warned_soon(void)
{
	char url[64], soon[4096], text[8192];
	const int port = blackhole();
	EL_CHECK(port > 0);
	EL_CHECK(start_a());
	snprintf(url, sizeof url, "tls+tcp://127.0.0.1:%d", port);
	log_catch();
	el_log_set_level(EL_LOG_DEBUG);
	EL_CHECK_EQ(el_net_peer_set(node_a.net, 2, url), EL_OK);
	(void)quiet(&node_a, EL_NET_PEER_DIALED, 3500);
	log_peek(soon, sizeof soon);
	(void)quiet(&node_a, EL_NET_PEER_DIALED, 4000);
	el_log_set_level(EL_LOG_INFO);
	log_release(text, sizeof text);
	const char *warned[] = { "warning: net: node 2 at ", url, "cannot connect: no answer within",
				 "until it connects", NULL };
	const char *redials[] = { "debug: net: node 2 at ", url, "no answer within", NULL };
	EL_CHECK_EQ(lines_with(soon, warned), 1u); /* within 3.5 s (the old dials took 10 s) */
	EL_CHECK_EQ(lines_with(text, warned), 1u); /* once */
	EL_CHECK(lines_with(text, redials) >= 2u); /* the dials of ~2 s and ~4 s failed by 7.5 s */
}

/* Removing a connected peer closes the link and dials no more. */
static void test_peer_remove_stops_dialing(void)
{
	uint64_t dialed, accepted;
	EL_CHECK(linked_pair(&dialed, &accepted));
	el_net_peer_remove(node_a.net, 2);
	EL_CHECK(!el_net_peer_up(node_a.net, 2));
	uint8_t b[8] = { 0 };
	EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, sizeof b), EL_ENOTFOUND);
	EL_CHECK(expect(&node_b, EL_NET_PEER_CLOSED, accepted, NULL));
	EL_CHECK(quiet(&node_a, EL_NET_PEER_DIALED, QUIET_MS));
	EL_CHECK(quiet(&node_b, EL_NET_PEER_OPENED, 0));
}

/* A peer removed while its address answered nothing: when something
 * listens there later, it is not dialed. */
static void test_removed_peer_not_dialed_later(void)
{
	EL_CHECK(start_a());
	node_init(&node_b, "node2", "net-node2.pem");
	node_ports(&node_b); /* its address, nobody there yet */
	EL_CHECK_EQ(el_net_peer_set(node_a.net, 2, node_b.peer_url), EL_OK);
	EL_CHECK(quiet(&node_a, EL_NET_PEER_DIALED, 300)); /* a few dials refused */
	el_net_peer_remove(node_a.net, 2);
	EL_CHECK(node_start(&node_b));
	EL_CHECK(quiet(&node_a, EL_NET_PEER_DIALED, QUIET_MS));
	EL_CHECK(quiet(&node_b, EL_NET_PEER_OPENED, 0));
}

/* ---- Tests: TLS reload, stop --------------------------------------------- */

static const char *const node1_files[] = { "node1.crt", "node1.key" };
static const char *const node2_files[] = { "node2.crt", "node2.key" };

static bool write_garbage(const char *name)
{
	char p[512];
	path(p, sizeof p, name);
	FILE *f = fopen(p, "w");
	return f != NULL && fputs("-----BEGIN CERTIFICATE-----\nnot base64\n", f) >= 0 &&
	       fclose(f) == 0;
}

static void test_reload_tls(void)
{
	uint64_t c0, c1, c2;
	EL_CHECK(concat("net-reload.pem", node1_files, 2) == 0);
	node_init(&node_a, "node1", "net-reload.pem");
	EL_CHECK(node_start(&node_a));
	EL_CHECK(client_connect(&cli[0], &node_a, &c0));
	/* a broken file: refused, everything as it was */
	EL_CHECK(write_garbage("net-reload.pem"));
	EL_CHECK_EQ(el_net_reload_tls(node_a.net), EL_EINVAL);
	EL_CHECK(round_trip(&cli[0], &node_a, c0, 100, 130));
	EL_CHECK(client_connect(&cli[1], &node_a, &c1));
	EL_CHECK(round_trip(&cli[1], &node_a, c1, 100, 131));
	/* node2's files: new handshakes present them, connections up go on */
	EL_CHECK(concat("net-reload.pem", node2_files, 2) == 0);
	EL_CHECK_EQ(el_net_reload_tls(node_a.net), EL_OK);
	EL_CHECK(client_dial(&cli[2], &node_a, "node2"));
	EL_CHECK(expect(&node_a, EL_NET_CLIENT_OPENED, ANY_CONN, &c2));
	EL_CHECK(round_trip(&cli[2], &node_a, c2, 100, 132));
	EL_CHECK(round_trip(&cli[0], &node_a, c0, 100, 133));
	EL_CHECK(round_trip(&cli[1], &node_a, c1, 100, 134));
}

/* Stop both ends with links, clients and frames in flight: it returns, the
 * clients see the end, and ASan finds nothing leaked at exit. */
static void test_stop_with_connections_up(void)
{
	uint64_t dialed, accepted, ca, cb;
	EL_CHECK(linked_pair(&dialed, &accepted));
	EL_CHECK(client_connect(&cli[0], &node_a, &ca));
	EL_CHECK(client_connect(&cli[1], &node_b, &cb));
	static uint8_t b[20000];
	fill(b, sizeof b, 140);
	for (unsigned i = 0; i < 20; i++) {
		EL_CHECK_EQ(el_net_peer_send(node_a.net, 2, b, sizeof b), EL_OK);
		EL_CHECK_EQ(el_net_conn_send(node_b.net, accepted, b, sizeof b), EL_OK);
		EL_CHECK_EQ(el_net_client_send(node_a.net, ca, b, sizeof b, false), EL_OK);
	}
	EL_CHECK(client_send_frame(&cli[1], 1000, 141));
	EL_CHECK(quiet(&node_b, 0, 50)); /* some of it arrives and is held */
	node_stop(&node_a);
	node_stop(&node_b);
	EL_CHECK(client_sees_end(&cli[0]));
	EL_CHECK(client_sees_end(&cli[1]));
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_net CERT_DIR\n");
		return 2;
	}
	cert_dir = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0); /* in order with the log lines on stderr */
	signal(SIGPIPE, SIG_IGN);
	path(ca_file, sizeof ca_file, "ca.crt");
	char client_pem[512];
	path(client_pem, sizeof client_pem, "net-client1.pem");
	if (write_pem("node1") != 0 || write_pem("node2") != 0 || write_pem("rogue-node1") != 0 ||
	    write_pem("client1") != 0 ||
	    el_link_config_init(&link_cfg, ca_file, client_pem, err, sizeof err) != 0) {
		fprintf(stderr, "test_net: setup in %s: %s\n", cert_dir, err);
		return 2;
	}
	RUN(test_client_frames_both_ways);
	RUN(test_client_frames_split_and_coalesced);
	RUN(test_client_bad_length);
	RUN(test_close_client);
	RUN(test_client_disconnect);
	RUN(test_client_gone_mid_frame);
	RUN(test_max_clients);
	RUN(test_handshakes_counted);
	RUN(test_input_paused_not_lost);
	RUN(test_full_client_queue_drops_client);
	RUN(test_client_queue_bytes_bound);
	RUN(test_client_queues_total_bound);
	RUN(test_peer_dial_handshake_ready);
	RUN(test_peer_frames_in_order);
	RUN(test_peer_large_frames);
	RUN(test_peer_queue_bytes_bound);
	RUN(test_link_lost_redials);
	RUN(test_restarted_peer_redialed);
	RUN(test_peer_port_bounded);
	RUN(test_refused_link_backs_off);
	RUN(test_wrong_server_name_refused);
	RUN(test_foreign_ca_peer_refused);
	RUN(test_stalled_peer_name_keeps_accepting);
	RUN(test_unresolved_peer_said_once);
	RUN(test_unreachable_peer_said_once);
	RUN(test_blackholed_peer_warned_soon);
	RUN(test_peer_remove_stops_dialing);
	RUN(test_removed_peer_not_dialed_later);
	RUN(test_reload_tls);
	RUN(test_stop_with_connections_up);
	el_link_config_free(&link_cfg);
	return el_test_end();
}
