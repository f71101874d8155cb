/*
 * el_platform.h - the Linux platform services the daemon hands to the core:
 * a monotonic clock, a random seed, leveled logging to stderr, and the
 * el_panic() hook of el_assert.h (log, then abort).
 */
#ifndef EL_PLATFORM_H
#define EL_PLATFORM_H

#include <stddef.h>
#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC: never jumps with wall-clock changes. */
uint64_t el_now_ms(void);

/* 64 random bits from getrandom(); *seed is set and 0 returned, or EL_EIO. */
int el_random_seed(uint64_t *seed);

enum el_log_level {
	EL_LOG_DEBUG = 0,
	EL_LOG_INFO = 1,
	EL_LOG_WARN = 2,
	EL_LOG_ERROR = 3,
	EL_LOG_OFF = 4,
};

/* One line to stderr: "edgelock: LEVEL: message", a control byte in the
 * message written as \xHH (a name from a client stays on its line). Lines
 * below the current level (default INFO) are dropped. */
/* A tag on every line (the daemon: "node<ID>"); NULL or "" for none. */
void el_log_set_tag(const char *tag);
void el_log(enum el_log_level level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* A name from outside (len bytes, any bytes) as one field of a log line,
 * in out (cap bytes, EL_LOG_NAME_CAP(len) for all of it): 'NAME' in quotes,
 * or hex:6127... when the name holds a quote or a NUL, which would end the
 * quoted field early (a name could then fake a field after it, or hide its
 * tail). el_log escapes the rest. Returns out. */
#define EL_LOG_NAME_CAP(len) (2 * (len) + 5)
const char *el_log_name(char *out, size_t cap, const void *name, size_t len);
void el_log_set_level(enum el_log_level level);
/* The Raft term every later line names (0: none yet, the line shows none). */
void el_log_set_term(uint64_t term);
/* Lines logged so far at each level, dropped or not (tests read this). */
unsigned long el_log_count(enum el_log_level level);

#endif /* EL_PLATFORM_H */
