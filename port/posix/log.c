/*
 * log.c - el_log(): leveled, one-line logging to stderr. Under systemd the
 * journal captures stderr; when stderr is that stream (JOURNAL_STREAM names
 * its device and inode) each line starts with its syslog priority, "<3>" for
 * an error .. "<7>" for debug, which journald keeps as the entry's priority
 * (sd-daemon(3)), so `journalctl -p warning` works. A tag (the daemon sets
 * "node<ID>") names the node on every line, and once the node has recovered its
 * Raft state, the term it is in ("edgelock node2 term 7: info: ..."): a line
 * is then placed in the cluster's history without the lines around it, as
 * etcd's and Consul's structured logs do with their term fields.
 * Anywhere else (a terminal, a file, `make run`, a container's log) each
 * line starts with its UTC time to the millisecond, as journald would add:
 * ordering events across several nodes' logs needs it (an outside tester
 * had to timestamp them with a tailer of their own).
 * Messages carry names that came from clients (lock names, certificate
 * subjects), so every control byte in a message is written as \xHH: no caller
 * can start a second, forged line ("\n<0>...") or send a terminal escape.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "el_platform.h"

static enum el_log_level log_level = EL_LOG_INFO;
static unsigned long log_counts[EL_LOG_OFF];

static const char *const level_names[] = { "debug", "info", "warning", "error" };
static const int syslog_priority[] = { 7, 6, 4, 3 }; /* LOG_DEBUG .. LOG_ERR */
static int to_journal = -1; /* -1: not looked yet */
static char log_tag[32];
/* Written by the daemon's loop, read by whichever thread logs. */
static _Atomic unsigned long long log_term;

void el_log_set_level(enum el_log_level level) { log_level = level; }

void el_log_set_tag(const char *tag)
{
	snprintf(log_tag, sizeof log_tag, "%s", tag != NULL ? tag : "");
}

/* True when stderr is the journal's stream (systemd sets JOURNAL_STREAM). */
static int journal_stream(void)
{
	if (to_journal < 0) {
		const char *e = getenv("JOURNAL_STREAM");
		unsigned long long dev = 0, ino = 0;
		struct stat st;
		to_journal = e != NULL && sscanf(e, "%llu:%llu", &dev, &ino) == 2 &&
			     fstat(2, &st) == 0 && (unsigned long long)st.st_dev == dev &&
			     (unsigned long long)st.st_ino == ino;
	}
	return to_journal;
}

void el_log_set_term(uint64_t term) { atomic_store(&log_term, (unsigned long long)term); }

unsigned long el_log_count(enum el_log_level level)
{
	return level < EL_LOG_OFF ? log_counts[level] : 0;
}

/* Format characters that reorder or hide what a line shows (bidirectional
 * embeddings, overrides and isolates: "Trojan Source"; the byte-order mark). */
static bool bidi_or_invisible(uint32_t cp)
{
	return cp == 0x200e || cp == 0x200f || (cp >= 0x202a && cp <= 0x202e) ||
	       (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

/* The length of the printable UTF-8 character at p (1-4), or 0 when p
 * starts a control character (C0, DEL, C1 U+0080..U+009F), a line or
 * paragraph separator (U+2028, U+2029: a new line to some log viewers), a
 * format character that reorders or hides text (bidi_or_invisible), a
 * backslash (so that \xHH in a line is always an escape), or
 * bytes that are not well-formed UTF-8 (RFC 3629: no overlong forms, no
 * surrogates, nothing above U+10FFFF). */
static size_t printable_utf8(const unsigned char *p)
{
	if (*p < 0x80) /* a backslash too: \xHH must mean an escape, never text */
		return *p >= 0x20 && *p != 0x7f && *p != '\\' ? 1u : 0u;
	const size_t len = *p >= 0xf0 ? 4u : *p >= 0xe0 ? 3u : *p >= 0xc0 ? 2u : 0u;
	if (len == 0 || *p > 0xf4)
		return 0;
	uint32_t cp = *p & (0x7fu >> len);
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80) /* also stops at the string's end */
			return 0;
		cp = cp << 6 | (p[i] & 0x3fu);
	}
	static const uint32_t least[5] = { 0, 0, 0x80, 0x800, 0x10000 };
	if (cp < least[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) ||
	    cp <= 0x9f || cp == 0x2028 || cp == 0x2029 || bidi_or_invisible(cp))
		return 0;
	return len;
}

/* Copies msg to out (size > 0) with each byte of a character that could
 * break or dress up the line (printable_utf8) as \xHH, cut whole at the end
 * of out: a line stays one line whatever it names. */
static void escape_controls(char *out, size_t size, const char *msg)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = 0;
	for (const unsigned char *p = (const unsigned char *)msg; *p != '\0';) {
		const size_t len = printable_utf8(p);
		if (n + (len == 0 ? 4u : len) >= size)
			break;
		if (len == 0) {
			out[n++] = '\\';
			out[n++] = 'x';
			out[n++] = hex[*p >> 4];
			out[n++] = hex[*p & 0xf];
			p++;
		} else {
			memcpy(out + n, p, len);
			n += len;
			p += len;
		}
	}
	out[n] = '\0';
}

const char *el_log_name(char *out, size_t cap, const void *name, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = name;
	const bool plain = memchr(p, '\'', len) == NULL && memchr(p, '\0', len) == NULL;
	size_t n = 0;
	if (cap < 5) { /* room for nothing but an empty field */
		if (cap > 0)
			out[0] = '\0';
		return out;
	}
	if (plain) { /* el_log escapes whatever else could break the line */
		const size_t take = len < cap - 3 ? len : cap - 3;
		out[n++] = '\'';
		memcpy(out + n, p, take);
		n += take;
		out[n++] = '\'';
	} else { /* a quote or a NUL would end the quoted field early */
		memcpy(out, "hex:", 4);
		n = 4;
		for (size_t i = 0; i < len && n + 2 < cap; i++) {
			out[n++] = hex[p[i] >> 4];
			out[n++] = hex[p[i] & 0xf];
		}
	}
	out[n] = '\0';
	return out;
}

/* "2026-11-27T05:43:01.123Z " (UTC, the wall clock: for people reading,
 * never for timing), or "" if the clock cannot be read. */
static void utc_stamp(char *out, size_t cap)
{
	struct timespec ts;
	struct tm tm;
	out[0] = '\0';
	if (clock_gettime(CLOCK_REALTIME, &ts) != 0 || gmtime_r(&ts.tv_sec, &tm) == NULL)
		return;
	const size_t n = strftime(out, cap, "%Y-%m-%dT%H:%M:%S", &tm);
	if (n > 0)
		snprintf(out + n, cap - n, ".%03ldZ ", ts.tv_nsec / 1000000L);
}

void el_log(enum el_log_level level, const char *fmt, ...)
{
	char line[512], safe[4 * sizeof line];
	va_list ap;

	if (level >= EL_LOG_OFF)
		return;
	log_counts[level]++;
	if (level < log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	escape_controls(safe, sizeof safe, line);
	/* One fprintf per line keeps lines whole when several threads log. */
	char prio[32] = "";
	if (journal_stream())
		snprintf(prio, sizeof prio, "<%d>", syslog_priority[level]);
	else
		utc_stamp(prio, sizeof prio);
	char term[32] = "";
	const unsigned long long t = atomic_load(&log_term);
	if (t != 0)
		snprintf(term, sizeof term, " term %llu", t);
	fprintf(stderr, "%sedgelock%s%s%s: %s: %s\n", prio, log_tag[0] != '\0' ? " " : "",
		log_tag, term, level_names[level], safe);
}
