/*
 * el_test.h - edgelock's one test harness, the same on the host and on a
 * Cortex-M under QEMU (printf goes to semihosting there).
 *
 *   static void test_thing(void) { EL_CHECK(x == 1); EL_CHECK_EQ(a, b); }
 *   int main(void) { EL_RUN(test_thing); return el_test_end(); }
 *
 * A failed check prints file, line and the expression, and ends that test
 * (the function returns). el_test_end() prints the closing line
 * "N passed, N failed" that CI reads, and returns the exit status.
 */
#ifndef EL_TEST_H
#define EL_TEST_H

#include <stdint.h>
#include <stdio.h>

extern int el_test_passed;
extern int el_test_failed;
extern int el_test_current_failed;

#define EL_CHECK(cond)                                                        \
	do {                                                                  \
		if (!(cond)) {                                                \
			printf("  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			el_test_current_failed = 1;                           \
			return;                                               \
		}                                                             \
	} while (0)

#define EL_CHECK_EQ(a, b)                                                     \
	do {                                                                  \
		long long el_a_ = (long long)(a), el_b_ = (long long)(b);     \
		if (el_a_ != el_b_) {                                         \
			printf("  FAIL %s:%d: %s == %s (%lld != %lld)\n",     \
			       __FILE__, __LINE__, #a, #b, el_a_, el_b_);     \
			el_test_current_failed = 1;                           \
			return;                                               \
		}                                                             \
	} while (0)

#define EL_RUN(fn) el_test_run(#fn, fn)

void el_test_run(const char *name, void (*fn)(void));
int el_test_end(void);

/* Defines the counters and runner; put it in exactly one file per program. */
#define EL_TEST_MAIN_DEFINITIONS                                              \
	int el_test_passed, el_test_failed, el_test_current_failed;           \
	void el_test_run(const char *name, void (*fn)(void))                  \
	{                                                                     \
		el_test_current_failed = 0;                                   \
		fn();                                                         \
		if (el_test_current_failed) {                                 \
			el_test_failed++;                                     \
			printf("not ok %s\n", name);                          \
		} else {                                                      \
			el_test_passed++;                                     \
		}                                                             \
	}                                                                     \
	int el_test_end(void)                                                 \
	{                                                                     \
		printf("%d passed, %d failed\n", el_test_passed, el_test_failed); \
		return el_test_failed == 0 ? 0 : 1;                           \
	}

#endif /* EL_TEST_H */
