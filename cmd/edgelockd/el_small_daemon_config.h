/*
 * el_small_daemon_config.h - the capacity profile of an edgelockd that
 * shares a cluster with microcontroller nodes (docs/mixed-cluster.md): the
 * boards' small config (boards/common/el_small_config.h), so that every
 * entry this node commits fits a firmware node's log and every snapshot its
 * lock table, and the peer hello's profile digest matches theirs.
 *
 * Only what stays inside this process differs: assertion text (a Linux
 * node has the flash for it), and the client requests and reads this node
 * holds while they commit. Everything replicated (entries, snapshots, the
 * lock table's limits, the window, batch and chunk sizes) is the boards'.
 * Built by mk/mixed.mk as build/small/bin/edgelockd.
 */
#ifndef EL_SMALL_DAEMON_CONFIG_H
#define EL_SMALL_DAEMON_CONFIG_H

#include "el_small_config.h"

#undef EL_ASSERT_TEXT
#define EL_ASSERT_TEXT 1
#undef EL_PENDING_MAX
#define EL_PENDING_MAX 64
#undef EL_READS_MAX
#define EL_READS_MAX 16

#endif /* EL_SMALL_DAEMON_CONFIG_H */
