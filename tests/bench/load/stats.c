/*
 * stats.c - latency samples in microseconds and their percentiles.
 */
#include <stdlib.h>
#include <string.h>

#include "bench.h"

void bench_samples_add(struct bench_samples *s, uint64_t ns)
{
	if (s->n == s->cap) {
		const size_t cap = s->cap ? s->cap * 2 : 4096;
		uint32_t *p = realloc(s->us, cap * sizeof *p);
		if (p == NULL)
			return; /* a lost sample, not a crash */
		s->us = p;
		s->cap = cap;
	}
	const uint64_t us = ns / 1000u;
	s->us[s->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

void bench_samples_merge(struct bench_samples *into, struct bench_samples *from)
{
	for (size_t i = 0; i < from->n; i++)
		bench_samples_add(into, (uint64_t)from->us[i] * 1000u);
}

static int cmp_u32(const void *a, const void *b)
{
	const uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return (x > y) - (x < y);
}

double bench_pct_ms(struct bench_samples *s, double p)
{
	if (s->n == 0)
		return -1;
	qsort(s->us, s->n, sizeof *s->us, cmp_u32);
	size_t i = (size_t)(p * (double)s->n);
	if (i >= s->n)
		i = s->n - 1;
	return s->us[i] / 1000.0;
}

double bench_max_ms(struct bench_samples *s)
{
	return bench_pct_ms(s, 1.0);
}

void bench_samples_free(struct bench_samples *s)
{
	free(s->us);
	memset(s, 0, sizeof *s);
}
