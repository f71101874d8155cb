/*
 * fuzz_dcfg.c - libFuzzer target for edgelockd's config file reader
 * (cmd/edgelockd/config.c on Debian's libinih): any bytes as a config file.
 *
 * Whatever the file holds, el_dcfg_load and el_dcfg_check must return (no
 * crash, no sanitizer report), every string setting must stay a terminated
 * string within its field, every number within the range its key allows, the
 * peers within the member bound with unique ids and well-formed addresses, and
 * loading the same bytes again must give the same settings byte for byte,
 * and the same lines commented out must set nothing.
 * The reader's messages go to /dev/null (glibc's stderr is assignable; the
 * sanitizers and libFuzzer write to the descriptor itself).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "el_daemon_config.h"
#include "el_error.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int file_fd = -1;
static char file_path[64];
static struct el_dcfg cfg, again; /* 280 KiB each: static, zeroed per run */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	file_fd = memfd_create("edgelockd.conf", 0);
	if (file_fd < 0)
		abort();
	snprintf(file_path, sizeof file_path, "/proc/self/fd/%d", file_fd);
	FILE *sink = fopen("/dev/null", "w");
	if (sink == NULL)
		abort();
	stderr = sink;
	return 0;
}

static void expect(int ok)
{
	if (!ok)
		abort();
}

static void expect_string(const char *s, size_t cap)
{
	expect(memchr(s, '\0', cap) != NULL);
}

static void expect_in(uint32_t v, uint32_t lo, uint32_t hi)
{
	expect(v >= lo && v <= hi);
}

static void check_strings(const struct el_dcfg *c)
{
	expect_string(c->data_dir, sizeof c->data_dir);
	expect_string(c->peer_addr, sizeof c->peer_addr);
	expect_string(c->client_addr, sizeof c->client_addr);
	expect_string(c->cluster, sizeof c->cluster);
	expect_string(c->metrics, sizeof c->metrics);
	expect_string(c->ca_file, sizeof c->ca_file);
	expect_string(c->cert_key_file, sizeof c->cert_key_file);
	expect_string(c->crl_file, sizeof c->crl_file);
	expect(c->cluster[0] != '\0'); /* a default, replaced only by a name */
	expect(c->peer_addr[0] == '\0' || strncmp(c->peer_addr, "tls+tcp://", 10) == 0);
	expect(c->client_addr[0] == '\0' || strncmp(c->client_addr, "tls+tcp://", 10) == 0);
	expect(c->metrics[0] == '\0' || strncmp(c->metrics, "http://", 7) == 0);
}

/* Every number holds a default or a value its key accepts (config.c). */
static void check_numbers(const struct el_dcfg *c)
{
	expect_in(c->election_ms, 50, 60000);
	expect_in(c->heartbeat_ms, 5, 10000);
	expect_in(c->max_clients, 1, 65000);
	expect_in(c->client_queue, 16, 1000000);
	expect_in(c->client_queue_bytes, 16384, UINT32_MAX);
	/* unset, the bound on all client queues lets one full queue fit */
	expect(c->client_queues_total_given ||
	       el_dcfg_client_queues_total(c) >= c->client_queue_bytes);
	expect_in(c->peer_queue, 16, 1000000);
	expect_in(c->peer_queue_bytes, 65536, UINT32_MAX);
	expect_in(c->sessions_per_client, 0, 1000000);
	expect_in(c->connections_per_client, 0, 65000);
	expect_in(c->requests_per_client, 1, 65000);
	expect_in(c->claims_per_client, 0, 1000000);
	expect_in(c->watches_per_client, 0, 1000000);
	expect_in(c->max_session_ttl_ms, 1000, UINT32_MAX);
	expect(c->net_threads == 0 || (c->net_threads >= 2 && c->net_threads <= 64));
	expect(c->log_level >= 0 && c->log_level <= 3);
}

static void check_peers(const struct el_dcfg *c)
{
	expect(c->n_peers <= EL_NODES_MAX && c->n_peers <= EL_DCFG_PEERS_MAX);
	for (uint32_t i = 0; i < c->n_peers; i++) {
		expect(c->peers[i].id != 0);
		expect_string(c->peers[i].addr, sizeof c->peers[i].addr);
		expect(strncmp(c->peers[i].addr, "tls+tcp://", 10) == 0);
		for (uint32_t j = 0; j < i; j++)
			expect(c->peers[j].id != c->peers[i].id);
	}
}

static int load(struct el_dcfg *c)
{
	memset(c, 0, sizeof *c);
	el_dcfg_defaults(c);
	return el_dcfg_load(c, file_path);
}

static void write_file(const uint8_t *data, size_t size)
{
	expect(ftruncate(file_fd, 0) == 0);
	expect(pwrite(file_fd, data, size, 0) == (ssize_t)size);
}

/* The same lines commented out set nothing, however long: no part of a
 * comment is ever read as a key (libinih splits a line longer than its
 * buffer; config.c refuses such a line whole). */
static void check_commented(const uint8_t *data, size_t size)
{
	static uint8_t text[3 * 8192 + 2];
	size_t n = 0;
	bool line_start = true;
	for (size_t i = 0; i < size; i++) {
		if (line_start) {
			text[n++] = ';';
			text[n++] = ' ';
		}
		text[n++] = data[i];
		line_start = data[i] == '\n';
	}
	write_file(text, n);
	const int rc = load(&cfg);
	expect(rc == 0 || rc == EL_EINVAL || rc == EL_EIO); /* EIO: cut at a bad line */
	memset(&again, 0, sizeof again);
	el_dcfg_defaults(&again);
	expect(memcmp(&cfg, &again, sizeof cfg) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 8192)
		return 0;
	write_file(data, size);
	const int rc = load(&cfg);
	expect(rc == 0 || rc == EL_EINVAL || rc == EL_EIO); /* EIO: cut at a bad line */
	check_strings(&cfg);
	check_numbers(&cfg);
	check_peers(&cfg);
	/* a bound on all client queues under one queue's is refused */
	const uint32_t total = el_dcfg_client_queues_total(&cfg);
	expect(el_dcfg_check(&cfg, "fuzz") != EL_OK || total == 0 ||
	       total >= cfg.client_queue_bytes);
	expect(load(&again) == rc);
	expect(memcmp(&cfg, &again, sizeof cfg) == 0);
	check_commented(data, size);
	return 0;
}
