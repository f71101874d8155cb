/*
 * el_bm_div.h - 64-bit by 32-bit division by shift and subtract, for the
 * port's clock and log: a 32-bit microcontroller would otherwise link
 * libgcc's 64-bit division (__udivdi3, __umoddi3: 1.6 KiB on RV32, 0.4 KiB
 * on Armv6-M), a large part of the node's 32 KiB flash budget. 64 steps of
 * shifts and compares; the callers run it a few times per loop.
 */
#ifndef EL_BM_DIV_H
#define EL_BM_DIV_H

#include <stdint.h>

/* *v /= d (d > 0); returns *v % d. */
static inline uint32_t el_bm_divmod_u64(uint64_t *v, uint32_t d)
{
	uint64_t quot = 0;
	uint64_t rem = 0; /* below 2 * d: 33 bits */
	for (int bit = 63; bit >= 0; bit--) {
		rem = (rem << 1) | ((*v >> bit) & 1u);
		quot <<= 1;
		if (rem >= d) {
			rem -= d;
			quot |= 1u;
		}
	}
	*v = quot;
	return (uint32_t)rem;
}

#endif /* EL_BM_DIV_H */
