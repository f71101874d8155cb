/*
 * log.c - el_log(): leveled, one-line logging to stderr (systemd's journal
 * captures stderr, so the daemon needs nothing more).
 */
#include <stdarg.h>
#include <stdio.h>

#include "el_platform.h"

static enum el_log_level log_level = EL_LOG_INFO;
static unsigned long log_counts[EL_LOG_OFF];

static const char *const level_names[] = { "debug", "info", "warning", "error" };

void el_log_set_level(enum el_log_level level) { log_level = level; }

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
	fprintf(stderr, "edgelock: %s: %s\n", level_names[level], line);
}
