/*
 * main.c - edgelock-uart-relay: flags, then one loop over the peer network
 * and the board's UART (el_relay.h). SIGINT/SIGTERM stop it.
 *
 *   edgelock-uart-relay --id 3 --cluster dev --ca ca.pem --cert node3.pem \
 *       --listen tls+tcp://127.0.0.1:7303 --peer 1=tls+tcp://127.0.0.1:7301 \
 *       --peer 2=tls+tcp://127.0.0.1:7302 --uart unix:/tmp/node3.uart
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_error.h"
#include "el_peer_hello.h"
#include "el_platform.h"
#include "el_relay.h"

#define RECONNECT_MS 200
#define STATS_MS 5000

static volatile sig_atomic_t stop;
static struct el_relay relay; /* large (UART buffers): static */

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static const char USAGE[] =
	"usage: edgelock-uart-relay --id N --cluster NAME --ca CA.pem --cert NODE.pem\n"
	"         --listen tls+tcp://HOST:PORT --peer ID=tls+tcp://HOST:PORT ...\n"
	"         --uart unix:PATH | tcp:HOST:PORT | /dev/ttyX [--crl CRL]\n"
	"Joins the peer network as node N (NODE.pem: its certificate and key) and\n"
	"relays Raft messages to and from that node's board over its UART.\n"
	"Exit: 0 stopped (SIGINT, SIGTERM) or --help; 1 usage; 2 a start failure.\n";

/* A usage error, named (a bare usage text left one guessing which flag was
 * wrong or missing), then the usage: exit 1, as edgelockd's. */
static int usage(const char *why, const char *what)
{
	fprintf(stderr, "edgelock-uart-relay: %s%s\n%s", why, what, USAGE);
	return 1;
}

struct args {
	const char *ca, *cert, *cluster, *crl;
};

/* One flag and its value into relay or a; 0, or a usage error's exit. */
static int flag(const char *k, const char *v, struct args *a)
{
	if (strcmp(k, "--id") == 0)
		relay.id = (el_id_t)strtoul(v, NULL, 10);
	else if (strcmp(k, "--cluster") == 0)
		a->cluster = v;
	else if (strcmp(k, "--ca") == 0)
		a->ca = v;
	else if (strcmp(k, "--cert") == 0)
		a->cert = v;
	else if (strcmp(k, "--crl") == 0)
		a->crl = v;
	else if (strcmp(k, "--listen") == 0)
		relay.peer_addr = v;
	else if (strcmp(k, "--uart") == 0)
		relay.uart = v;
	else if (strcmp(k, "--peer") != 0)
		return usage("unknown option ", k);
	else if (strchr(v, '=') == NULL)
		return usage("--peer takes ID=tls+tcp://HOST:PORT, not ", v);
	else if (relay.n_peers == EL_RELAY_PEERS_MAX)
		return usage("too many --peer (at most the cluster's other members): ", v);
	else {
		relay.peer_id[relay.n_peers] = (el_id_t)strtoul(v, NULL, 10);
		relay.peer_dial[relay.n_peers++] = strchr(v, '=') + 1;
	}
	return 0;
}

/* The flags; 0, -1 for --help (said on stdout), or a usage error's exit. */
static int parse(int argc, char **argv, struct args *a)
{
	for (int i = 1; i < argc; i += 2) {
		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			fputs(USAGE, stdout);
			return -1;
		}
		if (i + 1 == argc)
			return usage("a value is missing after ", argv[i]);
		const int rc = flag(argv[i], argv[i + 1], a);
		if (rc != 0)
			return rc;
	}
	const char *missing = relay.id == 0 ? "--id (1 or more)" : a->cluster == NULL ? "--cluster"
			      : a->ca == NULL ? "--ca" : a->cert == NULL ? "--cert"
			      : relay.peer_addr == NULL ? "--listen" : relay.uart == NULL ? "--uart"
			      : relay.n_peers == 0 ? "--peer" : NULL;
	return missing != NULL ? usage("missing ", missing) : 0;
}

static int start(const struct args *a)
{
	char err[512], tag[32];
	snprintf(tag, sizeof tag, "relay%u", relay.id);
	el_log_set_tag(tag);
	if (el_ident_load_crl(&relay.ident, a->ca, a->cert, NULL, a->crl, err, sizeof err) !=
	    EL_OK) {
		el_log(EL_LOG_ERROR, "relay: %s", err);
		return 2;
	}
	/* The board's peers check that the hello's node is the proven name's:
	 * another node's certificate would be refused on every link, for
	 * ever, with only "board connected" here (an outside tester). */
	char want[32];
	snprintf(want, sizeof want, "node%u", relay.id);
	if (el_ident_role_of(relay.ident) != EL_IDENT_NODE ||
	    strcmp(el_ident_name(relay.ident), want) != 0) {
		el_log(EL_LOG_ERROR, "relay: --cert %s: node %u needs a certificate with OU=node "
		       "and CN=%s, this one is CN=%s", a->cert, relay.id, want,
		       el_ident_name(relay.ident));
		return 2;
	}
	const struct el_net_config nc = {
		.peer_listen = relay.peer_addr, .client_listen = NULL, .ca_file = a->ca,
		.cert_key_file = a->cert, .peer_frame_max = EL_WIRE_MSG_MAX,
		.peer_sendq_max = 256, .inq_per_conn_max = 256,
	};
	if (el_net_start(&relay.net, &nc) != EL_OK)
		return 2; /* the peers are dialed once the board's UART is up */
	relay.cluster = el_peer_digest(a->cluster);
	relay.uart_fd = -1;
	el_bm_deframer_init(&relay.rx, relay.rx_buf, sizeof relay.rx_buf);
	return 0;
}

static void log_stats(void)
{
	const struct el_bm_frame_stats *f = &relay.rx.st;
	el_log(EL_LOG_INFO, "relay: to board %llu, from board %llu, dropped to board %llu, "
	       "refused %llu; frames from board: %u good, %u bad CRC, %u too long, %u bad escape, "
	       "%u too short, %u cut",
	       (unsigned long long)relay.st.to_uart, (unsigned long long)relay.st.from_uart,
	       (unsigned long long)relay.st.uart_dropped, (unsigned long long)relay.st.refused,
	       f->frames, f->bad_crc, f->too_long, f->bad_escape, f->too_short, f->cut);
}

static void turn(uint64_t *retry_ms, uint64_t *stats_ms)
{
	struct pollfd p[2] = { { .fd = el_net_fd(relay.net), .events = POLLIN },
			       { .fd = relay.uart_fd,
				 .events = (short)(POLLIN | (relay.tx_len > 0 ? POLLOUT : 0)) } };
	int n = poll(p, relay.uart_fd >= 0 ? 2 : 1, 100);
	if (n < 0 && errno != EINTR)
		stop = 1;
	const uint64_t now = el_now_ms();
	if (relay.uart_fd < 0 && now >= *retry_ms) {
		el_relay_uart_connect(&relay);
		*retry_ms = now + RECONNECT_MS;
	}
	if (relay.uart_fd >= 0 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0 &&
	    !el_relay_uart_read(&relay))
		el_relay_uart_close(&relay, "closed");
	for (struct el_net_item *it = el_net_drain(relay.net), *next; it != NULL; it = next) {
		next = it->next;
		el_relay_net_item(&relay, it);
		el_net_item_free(relay.net, it);
	}
	el_relay_uart_flush(&relay);
	if (now >= *stats_ms) {
		log_stats();
		*stats_ms = now + STATS_MS;
	}
}

int main(int argc, char **argv)
{
	struct args a = { 0 };
	int rc = parse(argc, argv, &a);
	if (rc != 0)
		return rc < 0 ? 0 : rc;
	rc = start(&a);
	if (rc != 0)
		return rc;
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	el_log(EL_LOG_INFO, "relay: node %u's board on %s, peers dial it at %s", relay.id,
	       relay.uart, relay.peer_addr);
	uint64_t retry_ms = 0, stats_ms = el_now_ms() + STATS_MS;
	while (!stop)
		turn(&retry_ms, &stats_ms);
	log_stats();
	el_relay_uart_close(&relay, "stopping");
	el_net_stop(relay.net);
	el_ident_free(relay.ident);
	return 0;
}
