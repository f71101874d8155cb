/*
 * backup.c - the backup file's header (el_backup.h): written by the CLI
 * around the snapshot it fetched, checked by `edgelockd restore` before the
 * snapshot's own decoder runs.
 */
#include <string.h>

#include "el_backup.h"
#include "el_crc32c.h"
#include "el_error.h"

static const uint8_t MAGIC[4] = { 'E', 'L', 'B', 'K' };

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

void el_backup_header(uint8_t out[EL_BACKUP_HEADER], uint32_t len, uint32_t crc)
{
	memcpy(out, MAGIC, sizeof MAGIC);
	put32(out + 4, EL_BACKUP_VERSION);
	put32(out + 8, len);
	put32(out + 12, crc);
}

int el_backup_payload(const uint8_t *buf, size_t n, const uint8_t **data, uint32_t *len,
		      int *checked, const char **why)
{
	*why = NULL;
	*checked = 0;
	if (n < sizeof MAGIC || memcmp(buf, MAGIC, sizeof MAGIC) != 0) {
		*data = buf; /* an older release's bare snapshot */
		*len = (uint32_t)n; /* the caller read at most a snapshot's size */
		return EL_OK;
	}
	if (n < EL_BACKUP_HEADER)
		*why = "shorter than its header";
	else if (get32(buf + 4) != EL_BACKUP_VERSION)
		*why = "a backup format of another version";
	else if (get32(buf + 8) != n - EL_BACKUP_HEADER)
		*why = get32(buf + 8) > n - EL_BACKUP_HEADER ? "cut short" : "longer than its header says";
	else if (el_crc32c(0, buf + EL_BACKUP_HEADER, n - EL_BACKUP_HEADER) != get32(buf + 12))
		*why = "checksum mismatch"; /* the caller says "damaged" */
	if (*why != NULL)
		return EL_ECORRUPT;
	*data = buf + EL_BACKUP_HEADER;
	*len = (uint32_t)(n - EL_BACKUP_HEADER);
	*checked = 1;
	return EL_OK;
}

bool el_backup_version(const uint8_t *buf, size_t n, uint32_t *version)
{
	if (n < EL_BACKUP_HEADER || memcmp(buf, MAGIC, sizeof MAGIC) != 0)
		return false;
	*version = get32(buf + 4);
	return true;
}
