/*
 * el_cli.h - what the edgelock CLI's files share: the common options, the
 * connection they make, and the exit codes (documented in --help and in
 * cmd/edgelock/README.md).
 */
#ifndef EL_CLI_H
#define EL_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "edgelock.h"

/* Exit codes of the CLI's own outcomes (sysexits.h numbers where one fits);
 * `lock` and `elect` with a command otherwise exit with the command's status
 * (128 + N when a signal N ended it), or 128 + N when signal N (SIGINT,
 * SIGTERM) came while they waited for the lock. */
enum {
	EL_EXIT_OK = 0,
	EL_EXIT_FAILED = 1,       /* the operation was refused (see the message) */
	EL_EXIT_USAGE = 64,       /* bad command line */
	EL_EXIT_UNAVAILABLE = 69, /* no leader reachable */
	EL_EXIT_SOFTWARE = 70,    /* an internal error */
	EL_EXIT_NOT_ACQUIRED = 75, /* the lock is held, or not granted within --wait */
	EL_EXIT_LOCK_LOST = 76,   /* the lock was lost while the command ran; it was killed */
	EL_EXIT_NOPERM = 77,      /* not allowed, or the certificate was rejected */
	EL_EXIT_CONFIG = 78,      /* bad configuration or certificate files */
	EL_EXIT_IOERR = 74,       /* writing the output (stdout) failed */
	EL_EXIT_LIMIT = 79,       /* `lock -n N`: the semaphore exists with another limit */
	EL_EXIT_NOEXEC = 126,     /* the command exists but could not be executed */
	EL_EXIT_EXEC = 127,       /* the command was not found */
};

struct el_cli {
	const char *endpoints, *ca_file, *cert_key_file, *config;
	const char *ca_from; /* where ca_file came from: "--ca", "EDGELOCK_CA", a config */
	bool json;
	uint32_t timeout_ms;
	el_client *client;
	/* The library's last error is per thread: one that a call on another
	 * thread left, for el_cli_fail to print instead (NULL: none). */
	const char *why;
};

/* Connect with the options, the environment or the config file; prints
 * what went wrong and returns an exit code on failure. */
int el_cli_connect(struct el_cli *cli);
/* An exit code for a library error, after printing "edgelock: what: why". */
int el_cli_fail(struct el_cli *cli, const char *what, int err);
/* Refused (EPERM) with no client certificate given: say how to give one
 * (the cluster may require one, or grant anonymous clients nothing);
 * EL_EXIT_NOPERM. */
int el_cli_nocert_hint(const struct el_cli *cli);
/* Did every endpoint named in why (the library's message: one endpoint's,
 * or "no leader reachable ... (tried URL: WHY; ...)") refuse for a server
 * certificate our CA did not sign (EL_LINK_UNTRUSTED, net/client/el_link.h)?
 * Then the CA file is wrong, not the cluster down. */
bool el_cli_untrusted(const char *why);
/* Say so, naming the CA file and where it came from: EL_EXIT_CONFIG. */
int el_cli_untrusted_hint(const struct el_cli *cli);
/* "edgelock COMMAND: unknown option/unexpected argument ARG (try ...)" on
 * stderr; EL_EXIT_USAGE. */
int el_cli_bad_arg(const char *command, const char *arg);
/* "edgelock COMMAND: WHY ARG" (ARG escaped, el_cli_text; NULL: none), then
 * the usage text, on stderr; EL_EXIT_USAGE. For what is wrong beyond an
 * unknown option or a stray argument: a missing or malformed one. */
int el_cli_usage(const char *command, const char *why, const char *arg, const char *usage);
/* "edgelock COMMAND: --json is not taken here ..." on stderr; EL_EXIT_USAGE. */
int el_cli_json_refused(const char *command);
/* 0 when name can be a lock or election name (1 to EL_NAME_MAX bytes of
 * UTF-8 text); else says why on stderr ("edgelock COMMAND: NAME must be
 * UTF-8 text", the name escaped) and returns EL_EXIT_USAGE. Checked before
 * anything is opened: the wire could not carry it. */
int el_cli_name_ok(const char *command, const char *name);
/* Flush stdout: rc when it was written whole. Else (a full disk; a closed
 * pipe's EPIPE, main() ignoring SIGPIPE), when stdout is the result (report
 * NULL): "edgelock: writing the output: WHY" on stderr, once, and EL_EXIT_IOERR (or rc, when rc
 * already says a failure): empty output must not pass for "no locks". When
 * the result is a file and stdout only a report of it (report names it,
 * "snapshot save: the backup"): rc, after "edgelock: REPORT is written; its
 * report line could not be (WHY)" when rc is 0. */
int el_cli_flush(int rc, const char *report);
/* output.c: from now on every write to stderr flushes stdout first, so
 * both reach a pipe that takes both (`2>&1 | cat`) in the order written. */
void el_cli_order_output(void);
/* Why a flush of stdout before a stderr write failed (0: none did). */
int el_cli_out_errno(void);
/* s[0..n) as a JSON string on stdout, quoted and escaped (", \\, control
 * characters as \uXXXX). Names are UTF-8; a value that is not has each of
 * its bytes above 0x7f written as U+FFFD, so the output stays valid JSON. */
void el_cli_json_str(const char *s, size_t n);
/* s[0..n) for a terminal, into buf (4 * n + 1 bytes hold any s): control
 * bytes (C0, DEL, C1 as UTF-8), backslash, and every byte above 0x7f of a
 * string that is not UTF-8, as \xHH, so a name from the cluster cannot
 * drive the operator's terminal. Returns buf. */
const char *el_cli_text(const char *s, size_t n, char *buf, size_t cap);
/* "10s", "500ms", "2m", "1h", or plain seconds; false when malformed or
 * over EL_CLI_DURATION_MAX ms. */
bool el_cli_duration(const char *s, uint32_t *ms);
#define EL_CLI_DURATION_MAX 0xFFFFFFFEu /* ms: about 1193 h */
/* The value v of option opt (e.g. "--ttl") as a duration into *ms: 0, or
 * EL_EXIT_USAGE after saying on stderr what is wrong with it (not a
 * duration; too long, with the maximum; for --ttl also the cluster's bound). */
int el_cli_duration_arg(const char *opt, const char *v, uint32_t *ms);
/* Is arg the option opt, written "opt" or "opt=VALUE" (the GNU form)? */
bool el_cli_opt_is(const char *arg, const char *opt);
/* The value of option opt at argv[*i] (el_cli_opt_is): what follows its
 * "=", or the next argument (*i moved past it); NULL when there is none,
 * or the next argument is "--", which ends the options rather than being
 * a value (`lock x --ttl -- CMD`). */
const char *el_cli_opt_value(const char *opt, int argc, char **argv, int *i);

/* wake.c: the wake pipe. el_cli_wake (async-signal-safe) makes its read
 * end readable; el_cli_wake_fd makes the pipe once and returns that end
 * (-1: none could be made); el_cli_nap sleeps up to ms (a second at most)
 * or until woken, draining the wake-ups (without a pipe: 20 ms at most). */
void el_cli_wake(void);
int el_cli_wake_fd(void);
void el_cli_nap(uint64_t ms);

int el_cli_lock(struct el_cli *cli, int argc, char **argv);
int el_cli_elect(struct el_cli *cli, int argc, char **argv);
int el_cli_status(struct el_cli *cli, int argc, char **argv);
int el_cli_locks(struct el_cli *cli, int argc, char **argv);
int el_cli_observe(struct el_cli *cli, int argc, char **argv);
int el_cli_members(struct el_cli *cli, int argc, char **argv);
int el_cli_transfer(struct el_cli *cli, int argc, char **argv);
int el_cli_snapshot(struct el_cli *cli, int argc, char **argv);

#endif /* EL_CLI_H */
