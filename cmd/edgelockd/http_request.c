/*
 * http_request.c - what the metrics server (metrics_http.c) answers to one
 * request head: its only parser of bytes from the network, kept apart so
 * that a fuzzer (tests/fuzz/fuzz_http.c) drives it without a socket.
 *
 * The server serves one path to GET and HEAD and reads only the request
 * line, "METHOD SP TARGET SP HTTP/1.x" (RFC 9112, 3): headers are ignored (a
 * scrape needs none), and so is a query string, which names the same
 * resource. Empty lines before the request line are skipped, as RFC 9112
 * 2.2 asks of a server; anything else that is not such a line is a 400.
 */
#include <string.h>

#include "el_d_http.h"

/* The next run of bytes other than space and tab in [*at, end), and *at
 * moved past it: its length (0 at the end of the line). */
static uint32_t next_word(const char **at, const char *end, const char **word)
{
	const char *p = *at;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	*word = p;
	while (p < end && *p != ' ' && *p != '\t')
		p++;
	*at = p;
	return (uint32_t)(p - *word);
}

static bool word_is(const char *word, uint32_t n, const char *s)
{
	return n == strlen(s) && memcmp(word, s, n) == 0;
}

int el_d_http_route(const char *head, uint32_t len, const char *path, bool *head_only)
{
	*head_only = false;
	const char *p = head, *end = head + (len < EL_D_HTTP_HEAD_MAX ? len : EL_D_HTTP_HEAD_MAX);
	while (p < end && (*p == '\r' || *p == '\n'))
		p++;
	const char *eol = memchr(p, '\n', (size_t)(end - p));
	if (eol == NULL)
		return 400; /* called once the head is complete: a line ends it */
	if (eol > p && eol[-1] == '\r')
		eol--;
	if (p == eol || *p == ' ' || *p == '\t' || memchr(p, '\0', (size_t)(eol - p)) != NULL)
		return 400; /* the line begins with its method */
	const char *method, *target, *version, *rest;
	const uint32_t nm = next_word(&p, eol, &method);
	const uint32_t nt = next_word(&p, eol, &target);
	const uint32_t nv = next_word(&p, eol, &version);
	if (nm == 0 || nt == 0 || nv != 8 || memcmp(version, "HTTP/1.", 7) != 0 ||
	    next_word(&p, eol, &rest) != 0)
		return 400;
	const bool head_method = word_is(method, nm, "HEAD");
	if (!head_method && !word_is(method, nm, "GET"))
		return 405;
	*head_only = head_method; /* an answer to HEAD has no body, a 404 neither */
	const char *query = memchr(target, '?', nt);
	const uint32_t np = query != NULL ? (uint32_t)(query - target) : nt;
	return word_is(target, np, path) ? 200 : 404;
}
