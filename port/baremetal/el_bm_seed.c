/*
 * el_bm_seed.c - el_bm_seed(): board entropy and node id through a 64-bit
 * mixer (the splitmix64 finaliser), so nearby inputs give unrelated seeds.
 */
#include "board.h"
#include "el_bm_seed.h"

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t el_bm_seed(uint32_t node_id)
{
	uint64_t entropy = el_board_entropy();
	return mix64((entropy << 32) ^ node_id ^ 0x9e3779b97f4a7c15ull);
}
