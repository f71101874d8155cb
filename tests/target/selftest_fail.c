/*
 * selftest_fail.c - a test image with one passing and one failing check:
 * proves that a failing test on the board makes QEMU exit non-zero and that
 * the closing line counts it (tests/target/check-harness.sh expects both).
 */
#include "el_target.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

static void test_passes(void)
{
	EL_CHECK_EQ(2 + 2, 4);
}

static void test_fails_on_purpose(void)
{
	volatile int two = 2;
	EL_CHECK_EQ(two + 2, 5);
}

int main(void)
{
	el_target_begin("selftest-fail");
	EL_RUN(test_passes);
	EL_RUN(test_fails_on_purpose);
	return el_target_end(el_test_end());
}
