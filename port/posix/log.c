/*
 * log.c - el_log(): leveled, one-line logging to stderr. Under systemd the
 * journal captures stderr; when stderr is that stream (JOURNAL_STREAM names
 * its device and inode) each line starts with its syslog priority, "<3>" for
 * an error .. "<7>" for debug, which journald keeps as the entry's priority
 * (sd-daemon(3)), so `journalctl -p warning` works. A tag (the daemon sets
 * "node<ID>") names the node on every line.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "el_platform.h"

static enum el_log_level log_level = EL_LOG_INFO;
static unsigned long log_counts[EL_LOG_OFF];

static const char *const level_names[] = { "debug", "info", "warning", "error" };
static const int syslog_priority[] = { 7, 6, 4, 3 }; /* LOG_DEBUG .. LOG_ERR */
static int to_journal = -1; /* -1: not looked yet */
static char log_tag[32];

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

unsigned long el_log_count(enum el_log_level level)
{
	return level < EL_LOG_OFF ? log_counts[level] : 0;
}

void el_log(enum el_log_level level, const char *fmt, ...)
{
	char line[512];
	va_list ap;

	if (level >= EL_LOG_OFF)
		return;
	log_counts[level]++;
	if (level < log_level)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	/* One fprintf per line keeps lines whole when several threads log. */
	char prio[8] = "";
	if (journal_stream())
		snprintf(prio, sizeof prio, "<%d>", syslog_priority[level]);
	fprintf(stderr, "%sedgelock%s%s: %s: %s\n", prio, log_tag[0] != '\0' ? " " : "", log_tag,
		level_names[level], line);
}
