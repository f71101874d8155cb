/*
 * test_http_request.c - the metrics server's request parser
 * (cmd/edgelockd/http_request.c): what each kind of request line is
 * answered, and the lines a sscanf-based reader took wrongly.
 */
#include <string.h>

#include "el_d_http.h"
#include "el_test.h"

EL_TEST_MAIN_DEFINITIONS

static int route(const char *head, bool *head_only)
{
	return el_d_http_route(head, (uint32_t)strlen(head), "/metrics", head_only);
}

static void test_served(void)
{
	bool h = true;
	EL_CHECK_EQ(route("GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &h), 200);
	EL_CHECK(!h);
	EL_CHECK_EQ(route("HEAD /metrics HTTP/1.0\r\n\r\n", &h), 200);
	EL_CHECK(h);
	EL_CHECK_EQ(route("GET /metrics?name[]=x HTTP/1.1\n\n", &h), 200); /* a query: the same */
	EL_CHECK_EQ(route("\r\n\r\nGET /metrics HTTP/1.1\r\n\r\n", &h), 200); /* RFC 9112 2.2 */
}

static void test_not_served(void)
{
	bool h = true;
	EL_CHECK_EQ(route("GET /metric HTTP/1.1\r\n\r\n", &h), 404);
	EL_CHECK(!h);
	EL_CHECK_EQ(route("GET /metrics/ HTTP/1.1\r\n\r\n", &h), 404);
	EL_CHECK_EQ(route("HEAD /other HTTP/1.1\r\n\r\n", &h), 404);
	EL_CHECK(h); /* the 404 to a HEAD has no body either */
	EL_CHECK_EQ(route("POST /metrics HTTP/1.1\r\n\r\n", &h), 405);
	EL_CHECK(!h);
	EL_CHECK_EQ(route("get /metrics HTTP/1.1\r\n\r\n", &h), 405); /* methods are case-sensitive */
}

static void test_bad_lines(void)
{
	bool h = true;
	EL_CHECK_EQ(route("GET /metrics\r\n\r\n", &h), 400);
	EL_CHECK_EQ(route("GET /metrics HTTP/2.0\r\n\r\n", &h), 400);
	EL_CHECK_EQ(route("GET /metrics HTTP/1.1 more\r\n\r\n", &h), 400);
	EL_CHECK_EQ(route("GET /metrics HTTP/1.10\r\n\r\n", &h), 400);
	EL_CHECK_EQ(route("\r\n\r\n", &h), 400);
	EL_CHECK_EQ(route(" GET /metrics HTTP/1.1\r\n\r\n", &h), 400);
	EL_CHECK_EQ(route("GET /metrics HTTP/1.1", &h), 400); /* no end of line */
	EL_CHECK(!h);
	/* A NUL in the line: the bytes after it are not a request line. */
	const char nul[] = "GET /metrics\0 HTTP/1.1\r\n\r\n";
	EL_CHECK_EQ(el_d_http_route(nul, sizeof nul - 1, "/metrics", &h), 400);
	/* The request line is the first line: HTTP/1.1 on the next line is a header. */
	EL_CHECK_EQ(route("GET /metrics\r\nHTTP/1.1\r\n\r\n", &h), 400);
}

/* sscanf("%7s %127s %8s") split a long target into the target and the
 * version: a 127-byte target with "HTTP/1.1" glued on was served. */
static void test_long_words(void)
{
	char line[EL_D_HTTP_HEAD_MAX + 64];
	bool h = true;
	strcpy(line, "GET /metrics?");
	size_t n = strlen(line);
	memset(line + n, 'a', 127 - (n - 4));
	strcpy(line + 4 + 127, "HTTP/1.1\r\n\r\n");
	EL_CHECK_EQ(route(line, &h), 400);
	strcpy(line, "GETGETGETGET /metrics HTTP/1.1\r\n\r\n");
	EL_CHECK_EQ(route(line, &h), 405);
	/* A head longer than the server reads: the line past the limit is not read. */
	memset(line, '\r', EL_D_HTTP_HEAD_MAX);
	strcpy(line + EL_D_HTTP_HEAD_MAX, "GET /metrics HTTP/1.1\r\n\r\n");
	EL_CHECK_EQ(route(line, &h), 400);
}

int main(void)
{
	EL_RUN(test_served);
	EL_RUN(test_not_served);
	EL_RUN(test_bad_lines);
	EL_RUN(test_long_words);
	return el_test_end();
}
