/*
 * el_bm_log.c - el_bm_logf(): format into a fixed line buffer, write it out
 * with one semihosting call. Lines longer than the buffer are cut.
 */
#include <stdarg.h>
#include <stdint.h>

#include "el_bm_div.h"
#include "el_bm_log.h"
#include "el_bm_semihost.h"

#define LINE_MAX 120

static bool log_on = true;

struct line {
	char *buf;
	size_t cap; /* characters it may hold, without the NUL */
	size_t len;
};

void el_bm_log_enable(bool on)
{
	log_on = on;
}

static void put_char(struct line *l, char c)
{
	if (l->len < l->cap)
		l->buf[l->len++] = c;
}

static void put_str(struct line *l, const char *s)
{
	while (s != NULL && *s != '\0')
		put_char(l, *s++);
}

/* Digits come out backwards, so they go through a small stack buffer. */
static void put_u64(struct line *l, uint64_t v, uint32_t base)
{
	char digits[20];
	uint32_t n = 0;
	do {
		digits[n++] = "0123456789abcdef"[el_bm_divmod_u64(&v, base)];
	} while (v != 0);
	while (n > 0)
		put_char(l, digits[--n]);
}

static void put_i64(struct line *l, int64_t v)
{
	if (v < 0) {
		put_char(l, '-');
		put_u64(l, (uint64_t)0 - (uint64_t)v, 10);
	} else {
		put_u64(l, (uint64_t)v, 10);
	}
}

/* One conversion after '%'; returns the format position after it. */
static const char *put_conversion(struct line *l, const char *f, va_list *ap)
{
	if (f[0] == 'l' && f[1] == 'l' && f[2] == 'u') {
		put_u64(l, va_arg(*ap, unsigned long long), 10);
		return f + 3;
	}
	switch (*f) {
	case 's': put_str(l, va_arg(*ap, const char *)); break;
	case 'd': put_i64(l, va_arg(*ap, int)); break;
	case 'u': put_u64(l, va_arg(*ap, unsigned int), 10); break;
	case 'x': put_u64(l, va_arg(*ap, unsigned int), 16); break;
	case 'c': put_char(l, (char)va_arg(*ap, int)); break;
	case '%': put_char(l, '%'); break;
	default: put_char(l, '?'); return *f != '\0' ? f + 1 : f;
	}
	return f + 1;
}

size_t el_bm_vformat(char *buf, size_t cap, const char *fmt, va_list ap)
{
	if (cap == 0)
		return 0;
	struct line l = { buf, cap - 1u, 0 };
	va_list args;
	va_copy(args, ap);
	for (const char *f = fmt; *f != '\0';) {
		if (*f == '%')
			f = put_conversion(&l, f + 1, &args);
		else
			put_char(&l, *f++);
	}
	va_end(args);
	l.buf[l.len] = '\0';
	return l.len;
}

void el_bm_logf(const char *fmt, ...)
{
	if (!log_on)
		return;
	char line[LINE_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	el_bm_vformat(line, sizeof line, fmt, ap);
	va_end(ap);
	el_sh_write0(line);
}
