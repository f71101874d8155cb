/*
 * el_backup.h - the backup file: what `edgelock snapshot save` writes and
 * `edgelockd restore` reads. A 16-byte header, then the lock table's
 * snapshot bytes (core/lock_snapshot.c), all little-endian:
 *
 *   "ELBK" | version u32 (1) | length u32 | CRC-32C u32 of the snapshot bytes
 *
 * The snapshot's own decoder is strict, but a flipped bit in a lock name, a
 * holder or a token still decodes: only the checksum tells a damaged file
 * from a good one. A file without the header is a backup of the releases
 * before it (the bare snapshot: a CBOR array, whose first byte is never
 * 'E'); it is read as it is, with no checksum to hold it to.
 */
#ifndef EL_BACKUP_H
#define EL_BACKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define EL_BACKUP_HEADER 16u
#define EL_BACKUP_VERSION 1u

/* The header of a backup of len snapshot bytes whose CRC-32C is crc. */
void el_backup_header(uint8_t out[EL_BACKUP_HEADER], uint32_t len, uint32_t crc);

/* The snapshot bytes in a backup file's bytes buf[0, n): EL_OK with *data
 * and *len (*checked: whether a checksum vouched for them), or EL_ECORRUPT
 * with *why saying what is wrong. */
int el_backup_payload(const uint8_t *buf, size_t n, const uint8_t **data, uint32_t *len,
		      int *checked, const char **why);

/* Whether buf[0, n) starts with a whole header, and then its format
 * version in *version: so that a refusal can name a newer release's file
 * as such rather than as damaged. */
bool el_backup_version(const uint8_t *buf, size_t n, uint32_t *version);

#endif /* EL_BACKUP_H */
