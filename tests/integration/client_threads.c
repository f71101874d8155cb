/*
 * client_threads.c - libedgelock shared by threads, against real daemons
 * (run by cli_test.py with EDGELOCK_ENDPOINTS / _CA / _CERT set).
 *
 * One client, THREADS threads, a session each, CYCLES lock/unlock cycles
 * each on a name of its own: every call succeeds and every token grows, so
 * a reply read by one thread reaches the thread that asked (the read role
 * of net/client/client.c passes between them). Then a second client only
 * watches a name while the first locks it: each change must arrive while
 * the watcher sends nothing, so its connection's reader thread reads.
 *
 * Prints one line per failure and "client threads: ok" at the end; exit 1
 * on any failure, 2 on a usage error (--help).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgelock.h"

#define THREADS 8
#define CYCLES 40
#define WATCHED 5

static el_client *open_client(const char *name)
{
	const struct el_client_options o = {
		.endpoints = getenv("EDGELOCK_ENDPOINTS"), .ca_file = getenv("EDGELOCK_CA"),
		.cert_key_file = getenv("EDGELOCK_CERT"), .name = name, .timeout_ms = 10000,
	};
	el_client *c = NULL;
	if (el_client_open(&c, &o) != EL_OK) {
		printf("client threads: open %s: %s\n", name, el_client_last_error(NULL));
		return NULL;
	}
	return c;
}

struct worker {
	el_client *c;
	int id;
	int failures;
};

static void *cycle(void *arg)
{
	struct worker *w = arg;
	el_session *s = NULL;
	if (el_session_open(w->c, 60000, &s) != EL_OK) {
		printf("client threads: thread %d: session: %s\n", w->id, el_client_last_error(w->c));
		w->failures++;
		return NULL;
	}
	char name[32];
	snprintf(name, sizeof name, "threads/%d", w->id);
	uint64_t last = 0;
	for (int i = 0; i < CYCLES; i++) {
		uint64_t token = 0;
		const int rc = el_lock(s, name, false, 5000, &token);
		if (rc != EL_OK || token <= last || el_unlock(s, name, token) != EL_OK) {
			printf("client threads: thread %d cycle %d: rc %d token %llu after %llu: %s\n",
			       w->id, i, rc, (unsigned long long)token, (unsigned long long)last,
			       el_client_last_error(w->c));
			w->failures++;
			break;
		}
		last = token;
	}
	el_session_close(s);
	return NULL;
}

/* The watcher's client sends nothing while the changes come. */
static int watch_changes(el_client *c)
{
	el_client *wc = open_client("watcher");
	el_session *ws = NULL, *s = NULL;
	int failures = 0;
	if (wc == NULL || el_session_open(wc, 60000, &ws) != EL_OK ||
	    el_watch(ws, "threads/watched") != EL_OK || el_session_open(c, 60000, &s) != EL_OK) {
		printf("client threads: watcher setup failed\n");
		failures++;
	}
	for (int i = 0; failures == 0 && i < WATCHED; i++) {
		uint64_t token = 0;
		struct el_event ev;
		if (el_lock(s, "threads/watched", false, 5000, &token) != EL_OK ||
		    el_next_event(ws, &ev, 5000) != EL_OK || ev.kind != EL_EVENT_HOLDER_CHANGED ||
		    el_unlock(s, "threads/watched", token) != EL_OK ||
		    el_next_event(ws, &ev, 5000) != EL_OK) {
			printf("client threads: change %d did not reach the watcher\n", i);
			failures++;
		}
	}
	if (s != NULL)
		el_session_close(s);
	if (ws != NULL)
		el_session_close(ws);
	el_client_close(wc);
	return failures;
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		const bool help = strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0;
		fprintf(help ? stdout : stderr,
			"usage: client-threads-test\n"
			"  One libedgelock client shared by %d threads, then a watcher, against\n"
			"  the cluster that EDGELOCK_ENDPOINTS, EDGELOCK_CA and EDGELOCK_CERT name.\n"
			"  Exit 0: every check held; 1: a check failed; 2: usage.\n", THREADS);
		return help ? 0 : 2;
	}
	el_client *c = open_client("threads");
	if (c == NULL)
		return 1;
	struct worker w[THREADS];
	pthread_t t[THREADS];
	int failures = 0;
	for (int i = 0; i < THREADS; i++) {
		w[i] = (struct worker){ .c = c, .id = i };
		if (pthread_create(&t[i], NULL, cycle, &w[i]) != 0)
			return 1;
	}
	for (int i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		failures += w[i].failures;
	}
	failures += watch_changes(c);
	el_client_close(c);
	printf("client threads: %s\n", failures == 0 ? "ok" : "FAILED");
	return failures == 0 ? 0 : 1;
}
