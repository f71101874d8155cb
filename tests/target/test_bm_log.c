/*
 * test_bm_log.c - port/baremetal's log formatter: the conversions a node's
 * status lines use, and that a long line is cut, never overrun.
 */
#include <stdarg.h>
#include <stdint.h>
#include <string.h>

#include "el_bm_div.h"
#include "el_bm_log.h"
#include "el_test.h"

static char out[32];

static size_t format(size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	size_t n = el_bm_vformat(out, cap, fmt, ap);
	va_end(ap);
	return n;
}

static void test_conversions(void)
{
	format(sizeof out, "%s=%d/%u/%x%c%%", "t", -42, 7u, 0xbeefu, '!');
	EL_CHECK(strcmp(out, "t=-42/7/beef!%") == 0);
}

static void test_u64_extremes(void)
{
	format(sizeof out, "%llu|%llu", (unsigned long long)UINT64_MAX, 0ull);
	EL_CHECK(strcmp(out, "18446744073709551615|0") == 0);
}

/* The clock's and the formatter's division agrees with C's / and %. */
static void test_divmod_u64(void)
{
	static const uint64_t values[] = {0, 1, 9, 10, 12345678901234567890ull, UINT64_MAX,
					  UINT64_MAX - 1, 1ull << 63, 0xffffffffull, 1ull << 32};
	static const uint32_t divisors[] = {1, 2, 10, 16, 10000, 1000000, 0x80000000u, UINT32_MAX};
	for (size_t i = 0; i < sizeof values / sizeof values[0]; i++)
		for (size_t j = 0; j < sizeof divisors / sizeof divisors[0]; j++) {
			uint64_t v = values[i];
			const uint32_t rem = el_bm_divmod_u64(&v, divisors[j]);
			EL_CHECK(v == values[i] / divisors[j]);
			EL_CHECK(rem == values[i] % divisors[j]);
		}
}

static void test_int_min(void)
{
	format(sizeof out, "%d", (int)INT32_MIN);
	EL_CHECK(strcmp(out, "-2147483648") == 0);
}

static void test_long_line_is_cut(void)
{
	memset(out, 'Z', sizeof out);
	size_t n = format(8, "%s", "0123456789");
	EL_CHECK_EQ(n, 7);
	EL_CHECK(strcmp(out, "0123456") == 0);
	EL_CHECK_EQ(out[8], 'Z'); /* nothing written past the buffer */
}

static void test_unknown_conversion(void)
{
	format(sizeof out, "a%qb");
	EL_CHECK(strcmp(out, "a?b") == 0);
}

void el_suite_bm_log(void)
{
	EL_RUN(test_conversions);
	EL_RUN(test_u64_extremes);
	EL_RUN(test_divmod_u64);
	EL_RUN(test_int_min);
	EL_RUN(test_long_line_is_cut);
	EL_RUN(test_unknown_conversion);
}
