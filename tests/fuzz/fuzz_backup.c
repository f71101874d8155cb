/*
 * fuzz_backup.c - libFuzzer target for el_backup_payload() (the backup
 * file's header, net/backup.c), which `edgelockd restore` runs on any file
 * it is given.
 *
 * Any input: the call returns; what it accepts lies inside the input (the
 * bytes after the header when a checksum vouched for them, the whole input
 * for a file without a header, which then does not start with the magic).
 * The input as a payload: wrapped in its header it comes back exactly, and
 * with any one bit flipped after the magic it is refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "el_backup.h"
#include "el_crc32c.h"
#include "el_error.h"

static uint8_t file[EL_BACKUP_HEADER + 65536];

static void bug(const char *what)
{
	fprintf(stderr, "fuzz_backup: %s\n", what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_any(const uint8_t *data, size_t size)
{
	const uint8_t *got = NULL;
	uint32_t len = 0;
	int checked = -1;
	const char *why = NULL;
	const int rc = el_backup_payload(data, size, &got, &len, &checked, &why);
	uint32_t version = 0;
	if (el_backup_version(data, size, &version) && version != EL_BACKUP_VERSION &&
	    rc != EL_ECORRUPT)
		bug("a header of another format version was accepted");
	if (rc != EL_OK) {
		if (rc != EL_ECORRUPT || why == NULL)
			bug("a refusal without EL_ECORRUPT and a reason");
		return;
	}
	if (checked ? got != data + EL_BACKUP_HEADER || len != size - EL_BACKUP_HEADER
		    : got != data || len != size || (size >= 4 && memcmp(data, "ELBK", 4) == 0))
		bug("accepted bytes that are not the input's payload");
}

static void check_wrapped(const uint8_t *data, size_t size)
{
	el_backup_header(file, (uint32_t)size, el_crc32c(0, data, size));
	memcpy(file + EL_BACKUP_HEADER, data, size);
	const size_t n = EL_BACKUP_HEADER + size;
	const uint8_t *got = NULL;
	uint32_t len = 0;
	int checked = 0;
	const char *why = NULL;
	if (el_backup_payload(file, n, &got, &len, &checked, &why) != EL_OK || !checked ||
	    len != size || memcmp(got, data, size) != 0)
		bug("a wrapped payload did not come back whole");
	uint32_t h = el_crc32c(0, data, size); /* pick a bit from the input itself */
	const size_t bit = 32 + h % (8 * (n - 4));
	file[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	if (el_backup_payload(file, n, &got, &len, &checked, &why) != EL_ECORRUPT)
		bug("a file with one bit flipped after the magic was accepted");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	check_any(data, size);
	check_wrapped(data, size);
	return 0;
}
