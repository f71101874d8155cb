/*
 * wal_record.c - encoding, checked decoding and batch scanning of WAL
 * records. Decoding treats the bytes as hostile: every length is checked
 * before it is used, and a record counts only when its CRC-32C matches.
 */
#include <string.h>

#include "el_bytes.h"
#include "el_crc32c.h"
#include "el_error.h"
#include "el_wal_record.h"

static size_t payload_encode(const struct el_rec *rec, uint8_t *p)
{
	const struct el_entry *e = rec->entry;
	switch (rec->type) {
	case EL_REC_ENTRY:
		el_put64(p, e->term);
		el_put64(p + 8, e->index);
		p[16] = e->type;
		el_put16(p + 17, e->len);
		memcpy(p + EL_REC_ENTRY_FIXED, e->data, e->len);
		return EL_REC_ENTRY_FIXED + e->len;
	case EL_REC_HARD_STATE:
		el_put64(p, rec->hs.term);
		el_put32(p + 8, rec->hs.vote);
		el_put64(p + 12, rec->hs.commit);
		return 20;
	default: /* TRUNCATE, BATCH_END */
		el_put64(p, rec->value);
		return 8;
	}
}

size_t el_rec_encode(const struct el_rec *rec, uint8_t *out)
{
	size_t payload;
	uint32_t len, crc;

	if (rec->type == EL_REC_ENTRY && rec->entry->len > EL_ENTRY_DATA_MAX)
		return 0;
	out[EL_REC_HEADER] = rec->type;
	payload = payload_encode(rec, out + EL_REC_HEADER + 1);
	len = (uint32_t)(1 + payload);
	el_put32(out, len);
	crc = el_crc32c(0, out, 4);
	crc = el_crc32c(crc, out + EL_REC_HEADER, len);
	el_put32(out + 4, crc);
	return EL_REC_HEADER + len;
}

/* Check the payload's length against its type and unpack it. */
static int payload_decode(const uint8_t *p, uint32_t n, struct el_rec *rec,
			  struct el_entry *entry)
{
	switch (rec->type) {
	case EL_REC_ENTRY:
		if (n < EL_REC_ENTRY_FIXED)
			return EL_ECORRUPT;
		entry->term = el_get64(p);
		entry->index = el_get64(p + 8);
		entry->type = p[16];
		entry->len = el_get16(p + 17);
		if (entry->len > EL_ENTRY_DATA_MAX || n != EL_REC_ENTRY_FIXED + entry->len)
			return EL_ECORRUPT;
		memcpy(entry->data, p + EL_REC_ENTRY_FIXED, entry->len);
		rec->entry = entry;
		return EL_OK;
	case EL_REC_HARD_STATE:
		if (n != 20)
			return EL_ECORRUPT;
		rec->hs.term = el_get64(p);
		rec->hs.vote = el_get32(p + 8);
		rec->hs.commit = el_get64(p + 12);
		return EL_OK;
	case EL_REC_TRUNCATE:
	case EL_REC_BATCH_END:
		if (n != 8)
			return EL_ECORRUPT;
		rec->value = el_get64(p);
		return EL_OK;
	default:
		return EL_ECORRUPT;
	}
}

int el_rec_decode(const uint8_t *buf, size_t avail, struct el_rec *rec,
		  struct el_entry *entry, size_t *used)
{
	uint32_t len, crc;

	if (avail < EL_REC_HEADER)
		return EL_ECORRUPT;
	len = el_get32(buf);
	/* A zero length is what a crash leaves in a file extended with zeros. */
	if (len < 1 || len > EL_REC_LEN_MAX || avail - EL_REC_HEADER < len)
		return EL_ECORRUPT;
	crc = el_crc32c(0, buf, 4);
	crc = el_crc32c(crc, buf + EL_REC_HEADER, len);
	if (crc != el_get32(buf + 4))
		return EL_ECORRUPT;
	memset(rec, 0, sizeof *rec);
	rec->type = buf[EL_REC_HEADER];
	if (payload_decode(buf + EL_REC_HEADER + 1, len - 1, rec, entry) != EL_OK)
		return EL_ECORRUPT;
	*used = EL_REC_HEADER + len;
	return EL_OK;
}

size_t el_wal_valid_end(const uint8_t *buf, size_t len, size_t *stop)
{
	struct el_rec rec;
	struct el_entry entry;
	size_t off = 0, valid = 0, used;

	while (off < len) {
		if (el_rec_decode(buf + off, len - off, &rec, &entry, &used) != EL_OK)
			break;
		off += used;
		if (rec.type == EL_REC_BATCH_END)
			valid = off;
	}
	*stop = off;
	return valid;
}
