/*
 * el_peer_hello.h - the first frame on every peer connection.
 *
 * A node that dials another sends a hello before any Raft message: its node
 * id, the cluster it belongs to, a digest of its capacity limits (every node
 * of a cluster must agree on them: a snapshot from one must fit another),
 * and its peer and client addresses, so that the accepting node can dial it
 * back (a member added at runtime) and redirect clients to it.
 *
 * CBOR map, ascending small uint keys, like the Raft wire (el_wire.h), whose
 * messages carry types 1..11 under key 1; a hello carries type 100:
 *   0 version (1)  1 type (100)  2 node  3 cluster  4 profile
 *   5 peer_addr (text)  6 client_addr (text)  7 cluster_name (text, optional)
 *   8 incarnation generation, 9 incarnation nonce (both or neither)
 * Strict: unknown keys, out-of-order keys, node 0, over-long text refused.
 * Key 7, the cluster's name itself, is there only so that a node refusing
 * a hello of another cluster can log both names (the digest says only
 * that they differ); an older release's hello has no key 7 and is taken
 * as before, its name then unknown. Never empty when present.
 * Keys 8 and 9 say which incarnation of the cluster the sender's data is
 * of (cmd/edgelockd/incarnation.c): a node restarted with data from before
 * a --force-new-cluster or a restore must not rejoin. A node that has no
 * state yet (joining) sends neither.
 * The identity in it is claimed, not proven (mutual TLS proves only that
 * the sender holds some certificate of the cluster CA); issue 12 binds it.
 */
#ifndef EL_PEER_HELLO_H
#define EL_PEER_HELLO_H

#include <stdbool.h>
#include <stdint.h>

#include "el_client_wire.h"
#include "el_raft.h"

#define EL_PEER_HELLO_VERSION 1
#define EL_PEER_HELLO_TYPE 100
#define EL_PEER_HELLO_CLUSTER_MAX 63 /* [node] cluster: under 64 characters */
#define EL_PEER_HELLO_MAX \
	(1 + 8 + 2 + 2 + 5 + 9 + 9 + 2 * (2 + EL_CW_ADDR_MAX) + 2 + EL_PEER_HELLO_CLUSTER_MAX + \
	 1 + 5 + 1 + 9)

struct el_peer_hello {
	el_id_t node;
	uint64_t cluster; /* digest of the cluster name */
	uint64_t profile; /* el_peer_profile() of the sender */
	uint8_t peer_addr_len;
	uint8_t client_addr_len;
	uint8_t cluster_name_len; /* 0: not sent (an older release) */
	bool has_incarnation;     /* keys 8 and 9 sent: the sender has state */
	uint32_t generation;      /* bumped by each --force-new-cluster; 1 after a restore */
	uint64_t nonce;           /* random (or the backup's digest): told apart at one generation */
	char peer_addr[EL_CW_ADDR_MAX];
	char client_addr[EL_CW_ADDR_MAX];
	char cluster_name[EL_PEER_HELLO_CLUSTER_MAX]; /* not NUL-terminated */
};

int el_peer_hello_encode(const struct el_peer_hello *h, uint8_t *buf, uint32_t cap);
/* 0, EL_EVERSION or EL_EDECODE (h zeroed). */
int el_peer_hello_decode(struct el_peer_hello *h, const uint8_t *buf, uint32_t len);
/* True when buf looks like a hello (key 1 = 100) rather than a Raft message. */
int el_peer_hello_is(const uint8_t *buf, uint32_t len);
/* FNV-1a digest of the limits this binary was built with. */
uint64_t el_peer_profile(void);
/* FNV-1a of a string (the cluster name). */
uint64_t el_peer_digest(const char *s);

#endif /* EL_PEER_HELLO_H */
