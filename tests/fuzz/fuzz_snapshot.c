/*
 * fuzz_snapshot.c - libFuzzer target for the lock table's snapshot decoder
 * (core/lock_snapshot.c): the bytes a leader sends in InstallSnapshot and a
 * backup file `edgelockd restore` reads.
 *
 * Any input: el_lock_snapshot_check and el_lock_restore agree on it; a
 * refused input leaves the table exactly as it was (restore is strict and
 * all-or-nothing); an accepted one restores into a table that passes the
 * invariant check (restore runs it) and writes back to the very same bytes
 * (the encoding is canonical, so one table has one snapshot). Built with
 * small limits (mk/cbor.mk) so a table copy per run stays cheap.
 *
 * With -DEL_FUZZ_GEN it is instead a program that writes the seed corpus:
 * snapshots of tables with sessions, holds, shared holds, waiters, watches,
 * an election value, a lock-delay and remembered opens.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_error.h"
#include "el_lock.h"

static struct el_lock_table table;
static uint8_t out[EL_SNAPSHOT_MAX];

#ifndef EL_FUZZ_GEN
static struct el_lock_table before;

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *in, size_t n)
{
	if (n > EL_SNAPSHOT_MAX)
		return 0;
	memcpy(&before, &table, sizeof(table));
	const int check = el_lock_snapshot_check(in, (uint32_t)n, UINT64_MAX);
	const int rc = el_lock_restore(&table, in, (uint32_t)n);
	if ((check == EL_OK) != (rc == EL_OK))
		abort(); /* the check and the restore disagree */
	if (rc != EL_OK) {
		if (memcmp(&before, &table, sizeof(table)) != 0)
			abort(); /* a refused snapshot changed the table */
		return 0;
	}
	const int len = el_lock_snapshot(&table, out, sizeof(out));
	if (EL_SNAPSHOT_READS_V2 && n >= 2 && in[0] == 0x86 && in[1] == 0x02) {
		/* a version 2 snapshot comes back as version 3: that one must
		 * restore and come back as itself */
		static uint8_t again[EL_SNAPSHOT_MAX];
		if (len <= 0 || el_lock_restore(&table, out, (uint32_t)len) != EL_OK ||
		    el_lock_snapshot(&table, again, sizeof(again)) != len ||
		    memcmp(out, again, (size_t)len) != 0)
			abort();
		return 0;
	}
	if (len != (int)n || memcmp(out, in, n) != 0)
		abort(); /* not the same bytes back: two encodings of one table */
	return 0;
}
#else
static uint64_t idx;

static uint64_t apply(const struct el_lock_cmd *c)
{
	static struct el_lock_result res;
	el_lock_apply_cmd(&table, ++idx, c, &res);
	return res.session;
}

static uint64_t open_s(const char *client, uint64_t nonce)
{
	struct el_lock_cmd c = {.type = EL_CMD_OPEN_SESSION, .ttl_ms = 5000, .nonce = nonce};
	c.client_len = (uint8_t)strlen(client);
	memcpy(c.client, client, c.client_len);
	return apply(&c);
}

static void cmd(uint8_t type, uint64_t s, uint64_t seq, const char *name, uint8_t mode,
		uint32_t wait_ms, uint32_t delay_ms)
{
	struct el_lock_cmd c = {.type = type, .session = s, .seq = seq, .mode = mode,
				.wait_ms = wait_ms, .delay_ms = delay_ms};
	c.name_len = (uint8_t)strlen(name);
	memcpy(c.name, name, c.name_len);
	if (type == EL_CMD_CAMPAIGN) {
		c.value_len = 3;
		memcpy(c.value, "v-1", 3);
	}
	apply(&c);
}

static void write_seed(const char *dir, int k)
{
	char path[512];
	const int len = el_lock_snapshot(&table, out, sizeof(out));
	snprintf(path, sizeof(path), "%s/seed-%d", dir, k);
	FILE *f = fopen(path, "wb");
	if (f == NULL || len <= 0 || fwrite(out, 1, (size_t)len, f) != (size_t)len)
		exit(1);
	fclose(f);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	el_lock_init(&table);
	write_seed(dir, 0); /* empty */
	const uint64_t a = open_s("a", 11), b = open_s("b", 12), c = open_s("c", 0);
	cmd(EL_CMD_ACQUIRE, a, 1, "door", EL_LOCK_EXCLUSIVE, 0, 500);
	cmd(EL_CMD_ACQUIRE, b, 1, "door", EL_LOCK_EXCLUSIVE, 3000, 0);
	cmd(EL_CMD_ACQUIRE, a, 2, "pump", EL_LOCK_SHARED, 0, 0);
	cmd(EL_CMD_ACQUIRE, c, 1, "pump", EL_LOCK_SHARED, 0, 0);
	write_seed(dir, 1); /* holds, a shared lock, a waiter */
	cmd(EL_CMD_WATCH, c, 2, "door", 0, 0, 0);
	cmd(EL_CMD_CAMPAIGN, b, 2, "fleet/leader", EL_LOCK_EXCLUSIVE, 0, 0);
	write_seed(dir, 2); /* a watch and an election value */
	struct el_lock_cmd x = {.type = EL_CMD_EXPIRE_SESSION, .session = a, .token = a};
	apply(&x);
	write_seed(dir, 3); /* a lock-delay, the waiter still queued */
	const uint64_t d = open_s("d", 13), e = open_s("e", 14);
	struct el_lock_cmd sem = {.type = EL_CMD_ACQUIRE, .session = b, .seq = 3, .limit = 2,
				  .delay_ms = 700, .name_len = 7};
	memcpy(sem.name, "rollout", 7);
	apply(&sem);
	sem.session = d;
	sem.seq = 1;
	apply(&sem);
	sem.session = e;
	sem.wait_ms = 4000;
	apply(&sem);
	struct el_lock_cmd y = {.type = EL_CMD_EXPIRE_SESSION, .session = d, .token = d};
	apply(&y);
	write_seed(dir, 4); /* a semaphore: a holder, a delayed permit, a waiter */
	return 0;
}
#endif
