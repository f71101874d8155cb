/*
 * el_bm_log.h - log lines on a board, through semihosting. A tiny printf
 * subset (no newlib stdio: it would cost more flash than the core), enough
 * for a node's status lines: %s %d %u %x %llu %c %%.
 */
#ifndef EL_BM_LOG_H
#define EL_BM_LOG_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

/* Logging is on by default; off, nothing reaches the semihosting trap (a
 * board without a debugger would fault on it). */
void el_bm_log_enable(bool on);
void el_bm_logf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The formatter itself: at most cap - 1 characters and a NUL into buf;
 * returns the length written (longer output is cut). */
size_t el_bm_vformat(char *buf, size_t cap, const char *fmt, va_list ap);

#endif /* EL_BM_LOG_H */
