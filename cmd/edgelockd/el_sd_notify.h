/*
 * el_sd_notify.h - edgelockd's own client of systemd's notify protocol
 * (sd_notify.c): the two calls of libsystemd the daemon used, and the pure
 * parsers under them (unit-tested and fuzzed: their input is the environment).
 */
#ifndef EL_SD_NOTIFY_H
#define EL_SD_NOTIFY_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* Sends MSG as one datagram to $NOTIFY_SOCKET: 1 sent, 0 no NOTIFY_SOCKET
 * (not under systemd), or -errno (a bad address, the socket gone, ...). */
int el_sd_notify(const char *msg);

/* $NOTIFY_SOCKET's value NAME as an address: "/path" or "@abstract".
 * 0 and *sa, *len set, or -EINVAL (empty, too long, "@" alone) or
 * -EAFNOSUPPORT (neither form, e.g. systemd's "vsock:"). */
int el_sd_notify_addr(const char *name, struct sockaddr_un *sa, socklen_t *len);

/* sd_watchdog_enabled(3) for the values of WATCHDOG_USEC and WATCHDOG_PID
 * (NULL: unset) in a process SELF: 1 and *usec set (the watchdog is ours),
 * 0 (no WATCHDOG_USEC, or WATCHDOG_PID names another process), or -EINVAL
 * (not a decimal number, 0 or infinity microseconds, a pid that is not
 * positive). */
int el_sd_watchdog_parse(const char *usec_s, const char *pid_s, pid_t self, uint64_t *usec);

/* el_sd_watchdog_parse() of this process's environment. */
int el_sd_watchdog_enabled(uint64_t *usec);

#endif
