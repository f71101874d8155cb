/*
 * el_wire.h - Raft messages (struct el_msg) on the wire, as CBOR.
 *
 * One message is one CBOR map with small unsigned keys (the table is in
 * wire.c), a version field first, fields equal to zero left out, keys in
 * ascending order: the deterministic encoding of RFC 8949 section 4.2.1, so
 * equal messages give equal bytes and every accepted input re-encodes to
 * itself. A node of any platform (Linux or a Cortex-M) speaks the same bytes.
 *
 * Decoding is strict and bounded: unknown keys, out-of-range values, more
 * than EL_MSG_ENTRIES_MAX entries, entry data over EL_ENTRY_DATA_MAX, a chunk
 * over EL_SNAPSHOT_CHUNK, more than EL_NODES_MAX members, entries whose
 * indexes do not follow one another, entries outside an APPEND, a chunk or
 * configuration outside a SNAPSHOT, all give EL_EDECODE; a version other
 * than EL_WIRE_VERSION gives EL_EVERSION. Nothing is allocated.
 *
 * There is no checksum: the transport must deliver a message's bytes intact
 * or not at all (TLS over TCP does; port/baremetal/el_bm_frame.h adds a
 * CRC-32 for byte links). Strict decoding catches most damage, not all.
 */
#ifndef EL_WIRE_H
#define EL_WIRE_H

#include <stdint.h>

#include "el_cbor.h"
#include "el_config.h"
#include "el_raft.h"

#define EL_WIRE_VERSION 1

/* Worst-case bytes of one encoded entry and of one encoded message
 * (every field at its widest, full entries, full chunk, full configuration). */
#define EL_WIRE_ENTRY_MAX                                                   \
	(1 + 9 + 9 + 1 + EL_CBOR_HEAD_SIZE(EL_ENTRY_DATA_MAX) + EL_ENTRY_DATA_MAX)
#define EL_WIRE_MSG_MAX                                                     \
	(1 + 17 /* keys */ + 1 + 1 + 1 /* version, type, flags */ +         \
	 2 * 5 /* from, to */ + 7 * 9 /* 64-bit fields */ + 2 * 5 /* offset, total */ + \
	 EL_CBOR_HEAD_SIZE(EL_MSG_ENTRIES_MAX) + EL_MSG_ENTRIES_MAX * EL_WIRE_ENTRY_MAX + \
	 EL_CBOR_HEAD_SIZE(EL_SNAPSHOT_CHUNK) + EL_SNAPSHOT_CHUNK +         \
	 EL_CBOR_HEAD_SIZE(EL_NODES_MAX) + EL_NODES_MAX * (1 + 5 + 1))
_Static_assert(EL_WIRE_MSG_MAX <= INT32_MAX, "encode returns the length as an int");

/*
 * Encode m into buf. Returns the length, EL_EFULL when cap is too small
 * (EL_WIRE_MSG_MAX always suffices) or EL_EINVAL when m is not a message
 * the decoder would accept (see above).
 */
int el_wire_encode_msg(const struct el_msg *m, uint8_t *buf, uint32_t cap);

/*
 * Decode buf[0..len) into m. entries is the caller's storage for up to
 * EL_MSG_ENTRIES_MAX entries; m->entries points at it and m->data into buf,
 * so both must outlive m. entries may be NULL for a caller that takes no
 * APPEND (one is then refused). Returns 0, EL_EVERSION or EL_EDECODE; on
 * error m is zeroed.
 */
int el_wire_decode_msg(const uint8_t *buf, uint32_t len, struct el_msg *m,
		       struct el_entry *entries);

#endif /* EL_WIRE_H */
