/*
 * gen_corpus.c - writes the seed corpus of the fuzz targets:
 *   gen_corpus DIR   -> DIR/wire/  one message of every type, small and full
 *                       DIR/cbor/  RFC 8949 vectors and nested items
 * The committed tests/fuzz/corpus/ came from it; rerun it after a change of
 * the wire format.
 */
#include <stdio.h>
#include <string.h>

#include "el_cbor.h"
#include "el_wire.h"

static struct el_entry entries[EL_MSG_ENTRIES_MAX];
static uint8_t chunk[EL_SNAPSHOT_CHUNK];
static uint8_t buf[EL_WIRE_MSG_MAX];

static int write_file(const char *dir, const char *name, const uint8_t *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n) {
		perror(path);
		return 1;
	}
	return fclose(f) != 0;
}

static void build(struct el_msg *m, uint8_t type, bool full)
{
	uint32_t i, n = full ? EL_MSG_ENTRIES_MAX : 2;

	memset(m, 0, sizeof(*m));
	m->type = type;
	m->from = 1;
	m->to = full ? 0xfffffff0u : 2;
	m->term = full ? 0x123456789aull : 3;
	m->index = 10;
	m->log_term = 2;
	m->commit = full ? 300 : 9;
	m->flags = full ? 1 : 0;
	if (type == 1) {
		m->n_entries = n;
		m->entries = entries;
		for (i = 0; i < n; i++) {
			entries[i] = (struct el_entry){.term = 3, .index = 11 + i, .type = (uint8_t)(i % 3),
						       .len = (uint16_t)(full ? EL_ENTRY_DATA_MAX : 5)};
			memset(entries[i].data, 'a' + (int)i % 26, entries[i].len);
		}
	}
	if (type == 9) {
		m->offset = 0;
		m->total = 5000;
		m->data_len = full ? EL_SNAPSHOT_CHUNK : 16;
		m->data = chunk;
		memset(chunk, 0x5a, sizeof(chunk));
		m->conf.n = 3;
		for (i = 0; i < 3; i++)
			m->conf.m[i] = (struct el_member){.id = i + 1, .role = (uint8_t)(1 + i)};
	}
}

static int write_cbor(const char *dir)
{
	static const char *const hex[] = {
		"00", "17", "1818", "1903e8", "1a000f4240", "1bffffffffffffffff", "3903e7",
		"3b7fffffffffffffff", "f4f5f6", "4401020304", "6449455446", "64f0908591",
		"8301820203820405", "a26161016162820203", "826161a161626163",
		"98190102030405060708090a0b0c0d0e0f101112131415161718181819",
		"8181818181818180", "5f42010243030405ff", "c11a514b67b0", "f93c00",
	};
	uint8_t b[64];
	char name[32];
	size_t i, k, n;
	int rc = 0;

	for (i = 0; i < sizeof(hex) / sizeof(hex[0]); i++) {
		for (k = 0, n = 0; hex[i][k] != '\0'; k += 2) {
			unsigned v;
			sscanf(hex[i] + k, "%2x", &v);
			b[n++] = (uint8_t)v;
		}
		snprintf(name, sizeof(name), "rfc-%02zu", i);
		rc |= write_file(dir, name, b, n);
	}
	return rc;
}

int main(int argc, char **argv)
{
	char dir[400];
	struct el_msg m;
	uint8_t type;
	int rc = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR (with DIR/wire and DIR/cbor existing)\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/wire", argv[1]);
	for (type = 1; type <= EL_MSG_TYPE_MAX; type++) {
		for (int full = 0; full <= (type == 1 || type == 9); full++) {
			char name[32];
			int n;

			build(&m, type, full);
			n = el_wire_encode_msg(&m, buf, sizeof(buf));
			if (n < 0)
				return 1;
			snprintf(name, sizeof(name), "type-%02u%s", type, full ? "-full" : "");
			rc |= write_file(dir, name, buf, (size_t)n);
		}
	}
	snprintf(dir, sizeof(dir), "%s/cbor", argv[1]);
	return rc | write_cbor(dir);
}
