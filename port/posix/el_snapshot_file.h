/*
 * el_snapshot_file.h - the snapshot file DIR/snapshot, replaced atomically:
 * written to DIR/snapshot.tmp, fsynced, renamed over, directory fsynced.
 *
 * Layout (little-endian): magic "ELSN" | version u32 (1) | index u64 |
 * term u64 | members n u8 | n x (id u32, role u8) | data length u32 | data |
 * crc u32 (CRC-32C of every byte before it).
 */
#ifndef EL_SNAPSHOT_FILE_H
#define EL_SNAPSHOT_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "el_raft.h"

#define EL_SNAPSHOT_FILE "snapshot"
#define EL_SNAPSHOT_TMP "snapshot.tmp"

/* Write meta + data durably. 0, EL_EINVAL, EL_ENOSPC or EL_EIO. */
int el_snapshot_file_write(const char *dir, int dir_fd, const struct el_snapshot_meta *meta,
			   const uint8_t *data);

/* Read DIR/snapshot into meta and data (room for EL_SNAPSHOT_MAX bytes).
 * *found is false when there is none. EL_ECORRUPT (logged, naming the file)
 * when it fails its checks; EL_EIO when it cannot be read. */
int el_snapshot_file_read(const char *dir, struct el_snapshot_meta *meta, uint8_t *data,
			  bool *found);

#endif /* EL_SNAPSHOT_FILE_H */
