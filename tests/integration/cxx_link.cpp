/*
 * cxx_link.cpp - libedgelock as a C++ program gets it: this translation unit
 * includes the public headers (edgelock.h, which includes el_error.h, and
 * el_fence.h) as C++ and links build/lib/libedgelock.a alone (mk/client.mk,
 * `make test-lib-fence`). Without their extern "C" guards the calls below
 * name C++-mangled symbols and the link fails (`undefined reference to
 * el_strerror(int)`: an outside tester), so building it is most of the test.
 */
#include <cstdint>
#include <cstring>

#include "edgelock.h"
#include "el_fence.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

static void test_error(void)
{
	EL_CHECK(std::strlen(el_strerror(EL_ETIMEDOUT)) > 0);
}

static void test_fence(void)
{
	el_fence f;
	el_fence_init(&f, 0, nullptr, nullptr);
	EL_CHECK_EQ(el_fence_accept(&f, 5), EL_OK);
	EL_CHECK_EQ(el_fence_check(&f, 4), EL_ESTALE);
	EL_CHECK_EQ(el_fence_highest(&f), 5);
}

/* No endpoints: refused before any connection, so no daemon is needed. */
static void test_client(void)
{
	el_client_options o{};
	el_client *c = nullptr;
	EL_CHECK_EQ(el_client_open(&c, &o), EL_EINVAL);
	EL_CHECK(c == nullptr);
	EL_CHECK(el_client_last_error(nullptr) != nullptr);
}

int main()
{
	EL_RUN(test_error);
	EL_RUN(test_fence);
	EL_RUN(test_client);
	return el_test_end();
}
