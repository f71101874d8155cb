/*
 * el_bytes.h - little-endian field access for the on-disk formats, so files
 * written on an x86 gateway read the same on an ARM board.
 */
#ifndef EL_BYTES_H
#define EL_BYTES_H

#include <stdint.h>

static inline void el_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void el_put32(uint8_t *p, uint32_t v)
{
	el_put16(p, (uint16_t)v);
	el_put16(p + 2, (uint16_t)(v >> 16));
}
static inline void el_put64(uint8_t *p, uint64_t v)
{
	el_put32(p, (uint32_t)v);
	el_put32(p + 4, (uint32_t)(v >> 32));
}
static inline uint16_t el_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t el_get32(const uint8_t *p)
{
	return (uint32_t)el_get16(p) | ((uint32_t)el_get16(p + 2) << 16);
}
static inline uint64_t el_get64(const uint8_t *p)
{
	return (uint64_t)el_get32(p) | ((uint64_t)el_get32(p + 4) << 32);
}

#endif /* EL_BYTES_H */
