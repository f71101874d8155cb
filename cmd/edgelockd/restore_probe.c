/*
 * restore_probe.c - before `edgelockd restore`: does any other node of
 * [peers] run?
 *
 * A restore seeds a new incarnation of the cluster from a backup, for a
 * whole cluster that is down: every node restored, then every node
 * started (docs/operations.md, "Backup and restore"). Run on one lost node
 * beside healthy ones, it made a node of a newer incarnation, and the
 * healthy members, hearing it, stopped for good: an outage, with advice
 * that read as "wipe them" (an outside tester). A node that runs listens on
 * its peer address, so a TCP connection accepted there means it runs: the
 * restore is refused before it writes anything, naming the node and the
 * way to bring one lost node back (--join). Nothing is sent on the
 * connection. An address that does not resolve or does not answer within
 * PROBE_MS is taken as down, as it is when the boards are off.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "el_daemon.h"
#include "el_error.h"
#include "el_url.h"

#define PROBE_MS 1500

/* A non-blocking connect to peer's address under way, or -1. */
static int dial(const struct el_dcfg_peer *peer)
{
	char host[EL_CW_ADDR_MAX], port[8];
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	if (el_url_parse(peer->addr, host, sizeof host, port, sizeof port) != EL_OK ||
	    getaddrinfo(host, port, &hints, &ai) != 0)
		return -1;
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	return fd;
}

/* Whether the connect on fd completed (a listener accepted it). */
static bool accepted(int fd)
{
	int err = 0;
	socklen_t len = sizeof err;
	return getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0;
}

int el_d_restore_peers_down(const struct el_dcfg *cfg)
{
	struct pollfd pfd[EL_DCFG_PEERS_MAX];
	const struct el_dcfg_peer *who[EL_DCFG_PEERS_MAX];
	nfds_t n = 0;
	for (uint32_t i = 0; i < cfg->n_peers && n < EL_DCFG_PEERS_MAX; i++) {
		if (cfg->peers[i].id == cfg->id)
			continue;
		const int fd = dial(&cfg->peers[i]);
		if (fd < 0)
			continue;
		pfd[n] = (struct pollfd){ .fd = fd, .events = POLLOUT };
		who[n++] = &cfg->peers[i];
	}
	int answering = 0;
	for (int waited = 0; waited < PROBE_MS && n > 0; waited += 100) {
		if (poll(pfd, n, 100) < 0 && errno != EINTR)
			break;
		for (nfds_t k = 0; k < n; k++) {
			if (pfd[k].fd < 0 || pfd[k].revents == 0)
				continue;
			if (accepted(pfd[k].fd)) {
				answering++;
				el_log(EL_LOG_ERROR, "restore: something accepts connections at node "
				       "%u's address %s (its edgelockd, or another program on that port): "
				       "this cluster is not down; nothing was changed", who[k]->id,
				       who[k]->addr);
			}
			close(pfd[k].fd);
			pfd[k].fd = -1; /* poll skips it from now on */
		}
	}
	for (nfds_t k = 0; k < n; k++)
		if (pfd[k].fd >= 0)
			close(pfd[k].fd);
	if (answering == 0)
		return EL_OK;
	el_log(EL_LOG_ERROR, "restore: a restore is for a whole cluster that is down: stop every "
	       "node of [peers], restore each from one backup, then start them. To bring back one "
	       "lost node of a running cluster, do not restore it: wipe its data_dir, start it "
	       "with --join and run `edgelock members add` (docs/operations.md)");
	return EL_EBUSY;
}
