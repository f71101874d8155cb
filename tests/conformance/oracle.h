/*
 * oracle.h - glue between edgelock's CBOR codec and libcbor, the conformance
 * oracle: random libcbor items in the deterministic subset, conversion both
 * ways, and deep comparison. Host-only test code (allocates, recurses).
 */
#ifndef EL_ORACLE_H
#define EL_ORACLE_H

#include <stdbool.h>
#include <stdint.h>

#include <cbor.h>

#include "el_cbor.h"

/* A deterministic xorshift64* generator; never seed with 0. */
uint64_t oracle_rand(uint64_t *state);
/* A uint64 biased towards head-size boundaries. */
uint64_t oracle_rand_uint(uint64_t *state);

/* A uint or negative-int item of the shortest width for the value
 * (libcbor keeps the width it was given and serializes with it). */
cbor_item_t *oracle_build_uint(uint64_t v);
cbor_item_t *oracle_build_negint(uint64_t n); /* the integer -1 - n */

/*
 * A random item in the subset edgelock reads: ints within int64, definite
 * strings (text is valid UTF-8), arrays and maps nested at most
 * EL_CBOR_DEPTH_MAX deep, map keys sorted and distinct, bools, null.
 * budget bounds the number of items.
 */
cbor_item_t *oracle_random_item(uint64_t *state, int budget);

/* Encode item with edgelock's writer; false when the writer fails. */
bool oracle_put_item(struct el_cbor_enc *e, const cbor_item_t *item);
/* Decode one item with edgelock's reader into a new libcbor item, or NULL
 * when the reader refuses. */
cbor_item_t *oracle_get_item(struct el_cbor_dec *d);

/* Same types, values, int widths, lengths and order. */
bool oracle_items_equal(const cbor_item_t *a, const cbor_item_t *b);

/* libcbor's own serialization; 0 on failure. */
size_t oracle_serialize(const cbor_item_t *item, uint8_t *buf, size_t cap);

#endif /* EL_ORACLE_H */
