/*
 * el_wal_record.h - the records of the write-ahead log.
 *
 * A record on disk: len u32 | crc u32 | type u8 | payload (len - 1 bytes),
 * little-endian; crc is CRC-32C over the len field, the type and the payload.
 * Payloads:
 *   ENTRY       term u64, index u64, entry type u8, data length u16, data
 *   HARD_STATE  term u64, vote u32, commit u64
 *   TRUNCATE    index u64: drop every stored entry >= index
 *   BATCH_END   seq u64: the batch before it is complete
 * A ready batch is written as [HARD_STATE] [TRUNCATE] ENTRY... BATCH_END and
 * recovery applies a batch only when its BATCH_END is intact, so a crash
 * never leaves half a batch (entries without the term that goes with them).
 */
#ifndef EL_WAL_RECORD_H
#define EL_WAL_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "el_raft.h"

enum el_rec_type {
	EL_REC_ENTRY = 1,
	EL_REC_HARD_STATE = 2,
	EL_REC_TRUNCATE = 3,
	EL_REC_BATCH_END = 4,
};

#define EL_REC_HEADER 8u
#define EL_REC_ENTRY_FIXED 19u /* term, index, type, data length */
/* Largest len field: type byte + an entry with full data. */
#define EL_REC_LEN_MAX (1u + EL_REC_ENTRY_FIXED + EL_ENTRY_DATA_MAX)
#define EL_REC_SIZE_MAX (EL_REC_HEADER + EL_REC_LEN_MAX)

struct el_rec {
	uint8_t type;
	struct el_hard_state hs;     /* HARD_STATE */
	uint64_t value;              /* TRUNCATE index, BATCH_END seq */
	const struct el_entry *entry; /* ENTRY, when encoding */
};

/* Encode into out (room for EL_REC_SIZE_MAX bytes); returns bytes used, or 0
 * for an entry that does not fit a record. */
size_t el_rec_encode(const struct el_rec *rec, uint8_t *out);

/* Decode the record at buf (avail bytes readable). On success fills rec (an
 * ENTRY into *entry, which rec->entry then points to) and *used. Returns
 * EL_ECORRUPT for a torn (too short), checksum-failing or malformed record. */
int el_rec_decode(const uint8_t *buf, size_t avail, struct el_rec *rec,
		  struct el_entry *entry, size_t *used);

/* Offset just past the last intact BATCH_END in buf[0, len): everything up to
 * there is whole batches; *stop gets the offset of the first bad record (or
 * len when none). */
size_t el_wal_valid_end(const uint8_t *buf, size_t len, size_t *stop);

#endif /* EL_WAL_RECORD_H */
