/*
 * log_ring.c - the Raft log ring's free pages given back to the kernel.
 *
 * The ring is sized by the window (the gateway profile: 65,536 entries,
 * 18 MiB), and a node in zeroed memory makes a page resident only when an
 * entry is first written there. Compaction frees slots, but their pages stay
 * resident, so under steady traffic the whole ring would end resident though
 * only the entries since the last compaction are live. After a compaction
 * the daemon drops every whole page of free slots (madvise MADV_DONTNEED):
 * it costs nothing until the core writes an entry there again. The core
 * writes a slot before it reads it (el_raft_free_slots), so what a dropped
 * page reads as (zeros on Linux, the old bytes where the advice is only a
 * hint) makes no difference.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "el_log_ring.h"

/* The whole pages inside [start, start + len). */
static void drop_pages(void *start, size_t len)
{
	const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	const uintptr_t a = ((uintptr_t)start + page - 1) & ~(page - 1);
	const uintptr_t b = ((uintptr_t)start + len) & ~(page - 1);
	if (b > a)
		(void)madvise((void *)a, b - a, MADV_DONTNEED); /* only advice: no error matters */
}

void el_log_ring_release(struct el_raft *r)
{
	uint32_t first;
	const uint32_t n = el_raft_free_slots(r, &first);
	const uint32_t to_end = EL_LOG_WINDOW - first;
	const uint32_t tail = n < to_end ? n : to_end;
	drop_pages(&r->log[first], (size_t)tail * sizeof(r->log[0]));
	drop_pages(&r->log[0], (size_t)(n - tail) * sizeof(r->log[0]));
}
