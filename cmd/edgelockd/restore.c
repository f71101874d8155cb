/*
 * restore.c - `edgelockd restore FILE -c CONF`: seed an empty data directory
 * from a backup (`edgelock snapshot save`), as the state of a new cluster
 * whose voters are the config's [peers]. Run it on every node of the new
 * cluster with the same FILE, then start the nodes normally: they hold the
 * same snapshot, elect a leader, and carry on from the backup's index, so
 * every token they grant is higher than every token in the backup.
 *
 * No session of the backup survives: each is ended and what it held stays
 * in lock-delay for the cap, 60 s (restore_sessions.c), so that no client goes on
 * believing it holds a lock the backup says it held. The node's
 * incarnation covers the backup and its voters (incarnation.c): nodes
 * restored with other [peers] lists refuse each other.
 *
 * The backup is checked against its header's checksum (net/el_backup.h),
 * then by restoring it into a lock table (the strict decoder of
 * core/lock_snapshot.c): a damaged or foreign file changes nothing. The
 * Raft snapshot gets term 1 and the backup's last index; the hard state
 * commits it, so no node ever needs the entries before it. Restore succeeds
 * (exit 0) only once both are synced; a write that fails (a full disk)
 * removes what restore wrote, so the directory is empty again and a retry
 * runs (exit 2 either way). A --bootstrap whose first write fails undoes
 * itself the same way (el_d_unbootstrap).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "el_backup.h"
#include "el_daemon.h"
#include "el_error.h"
#include "el_platform.h"
#include "el_storage.h"

#define BACKUP_MAX ((size_t)EL_SNAPSHOT_MAX + EL_BACKUP_HEADER)

/* Read the whole file (at most BACKUP_MAX bytes) into a new buffer. */
static int read_backup(const char *file, uint8_t **out, size_t *len)
{
	FILE *f = fopen(file, "rb");
	if (f == NULL) {
		el_log(EL_LOG_ERROR, "restore: %s: %s", file, strerror(errno));
		return EL_EINVAL;
	}
	uint8_t *buf = malloc(BACKUP_MAX + 1);
	const size_t n = buf != NULL ? fread(buf, 1, BACKUP_MAX + 1, f) : 0;
	const bool bad = ferror(f) != 0;
	fclose(f);
	if (buf == NULL || bad || n == 0 || n > BACKUP_MAX) {
		el_log(EL_LOG_ERROR, "restore: %s: %s", file,
		       buf == NULL ? "out of memory" : bad ? "read error" :
		       n == 0 ? "empty file" : "larger than a snapshot of this profile");
		free(buf);
		return EL_EINVAL;
	}
	*out = buf;
	*len = n;
	return EL_OK;
}

/* The snapshot bytes of the backup file's bytes, once its checksum held;
 * *checked 0 for a file without the header (an older release's bare
 * snapshot, or not a backup at all: the snapshot's decoder tells). */
static int unwrap(const char *file, const uint8_t *buf, size_t n, const uint8_t **data,
		  uint32_t *len, int *checked)
{
	const char *why = NULL;
	uint32_t v = EL_BACKUP_VERSION;
	if (el_backup_version(buf, n, &v) && v != EL_BACKUP_VERSION) {
		/* another release's format, or a flipped bit: say both */
		if (v > EL_BACKUP_VERSION)
			el_log(EL_LOG_ERROR, "restore: %s is a backup of format version %u, newer "
			       "than this edgelockd's %u: written by a newer release; restore it with "
			       "that release's edgelockd (or its header is damaged); nothing was "
			       "changed", file, (unsigned)v, EL_BACKUP_VERSION);
		else
			el_log(EL_LOG_ERROR, "restore: %s is a backup of format version %u, older "
			       "than this edgelockd's %u, which does not read it: restore it with the "
			       "edgelockd of the release that wrote it (or its header is damaged); "
			       "nothing was changed", file, (unsigned)v, EL_BACKUP_VERSION);
		return EL_EINVAL;
	}
	if (el_backup_payload(buf, n, data, len, checked, &why) != EL_OK) {
		el_log(EL_LOG_ERROR, "restore: %s is damaged (%s); nothing was changed", file, why);
		return EL_EINVAL;
	}
	if (*len > EL_SNAPSHOT_MAX) {
		el_log(EL_LOG_ERROR, "restore: %s: larger than a snapshot of this profile", file);
		return EL_EINVAL;
	}
	return EL_OK;
}

/* The backup's lock table, after a full restore into a new table.
 * checked: its checksum held (0: a file without the backup header, said
 * to be an older release's backup only once its snapshot decodes, so that
 * any other file is not first taken for one). */
static int load_backup(const char *file, const uint8_t *buf, uint32_t len, int checked,
		       struct el_lock_table **out)
{
	struct el_lock_table *t = calloc(1, sizeof(*t));
	if (t == NULL)
		return EL_EFULL;
	el_lock_init_zeroed(t, 0);
	const int rc = el_lock_restore(t, buf, len);
	struct el_lock_usage u;
	el_lock_usage(t, &u);
	if (rc == EL_OK && t->last_index == 0 && u.sessions == 0 && u.locks == 0)
		t->last_index = 1; /* a new cluster's table, no entry yet: the Raft
				    * snapshot needs an index, and no token of it is
				    * to be passed */
	if ((rc != EL_OK || t->last_index == 0) && !checked) {
		el_log(EL_LOG_ERROR, "restore: %s is not an edgelock backup: no backup header, "
		       "nor an older release's snapshot (%s); nothing was changed", file,
		       rc != EL_OK ? el_strerror(rc) : "no index");
		free(t);
		return EL_EINVAL;
	}
	if (rc != EL_OK || t->last_index == 0) {
		el_log(EL_LOG_ERROR, "restore: %s is damaged, or not a backup of this version and "
		       "profile (%s)", file, rc != EL_OK ? el_strerror(rc) : "no index");
		free(t);
		return EL_EINVAL;
	}
	if (!checked)
		el_log(EL_LOG_WARN, "restore: %s has no checksum (a backup of an older release): "
		       "only the snapshot's own decoder checked it", file);
	el_log(EL_LOG_INFO, "restore: %s holds the lock table at index %llu: %u sessions, "
	       "%u locks, %u holds, %u waiters", file, (unsigned long long)t->last_index,
	       u.sessions, u.locks, u.holds, u.waits);
	*out = t;
	return EL_OK;
}

/* The table the restore installs: the backup's with every session ended
 * (restore_sessions.c), its bytes in *out and their length in meta (NULL:
 * the backup's own, when it had no session); t's index is then the one to
 * install at. */
static int end_sessions(struct el_lock_table *t, struct el_snapshot_meta *meta, uint8_t **out)
{
	struct el_d_restore_ended ended;
	struct el_lock_usage u;
	el_lock_usage(t, &u);
	*out = NULL;
	if (u.sessions == 0)
		return EL_OK;
	int rc = el_d_restore_end_sessions(t, &ended);
	uint8_t *bytes = rc == EL_OK ? malloc(EL_SNAPSHOT_MAX) : NULL;
	const int n = bytes != NULL ? el_lock_snapshot(t, bytes, EL_SNAPSHOT_MAX) : rc;
	if (rc == EL_OK && bytes == NULL)
		rc = EL_EFULL;
	if (rc == EL_OK && n < 0)
		rc = n;
	if (rc != EL_OK) {
		el_log(EL_LOG_ERROR, "restore: cannot end the backup's sessions: %s; nothing was "
		       "changed", el_strerror(rc));
		free(bytes);
		return rc;
	}
	el_log(EL_LOG_INFO, "restore: ended the backup's %u sessions: their clients get EEXPIRED "
	       "and must open new ones; the %u locks they held stay in lock-delay for %u ms (the "
	       "lock-delay cap) once the restored cluster has a leader", ended.sessions,
	       ended.locks, ended.delay_ms);
	*out = bytes;
	meta->len = (uint32_t)n;
	return EL_OK;
}

/* Remove what a failed restore or --bootstrap (who) wrote into dir: the
 * snapshot, its temp file, WAL segments, the incarnation and owner files,
 * and when it created dir, its LOCK file and dir itself. Both only ever
 * seed a directory that held no state, so this leaves it as it was: a
 * retry runs, instead of being refused over a snapshot and part of a WAL
 * that nobody can tell whole or not. The count removed, or -1 when
 * something could not be (logged). */
int el_d_unseed(const char *dir, bool created, const char *who)
{
	DIR *dp = opendir(dir);
	int removed = 0;
	if (dp == NULL)
		return errno == ENOENT ? 0 : -1;
	for (struct dirent *e = readdir(dp); e != NULL && removed >= 0; e = readdir(dp)) {
		const char *n = e->d_name;
		char path[PATH_MAX];
		if (strcmp(n, "snapshot") != 0 && strcmp(n, "snapshot.tmp") != 0 &&
		    strncmp(n, "wal-", 4) != 0 && strncmp(n, "incarnation", 11) != 0 &&
		    strncmp(n, "owner", 5) != 0 &&
		    !(created && strcmp(n, "LOCK") == 0))
			continue;
		snprintf(path, sizeof path, "%s/%s", dir, n);
		if (unlink(path) == 0) {
			removed++;
			continue;
		}
		el_log(EL_LOG_ERROR, "%s: cannot remove %s: %s; remove it by hand", who, path,
		       strerror(errno));
		removed = -1;
	}
	closedir(dp);
	if (removed >= 0 && created && rmdir(dir) != 0)
		el_log(EL_LOG_WARN, "%s: cannot remove %s, which it created: %s", who, dir,
		       strerror(errno));
	/* and durably: a power cut must not bring the snapshot back */
	const int fd = removed > 0 && !created ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	return removed;
}

/* Write the snapshot and the hard state that commits it. EL_OK only once
 * both are synced (el_storage_persist: the snapshot file fsynced, renamed
 * and its directory fsynced, the WAL batch fdatasynced); otherwise nothing
 * of it is left in the directory. */
static int seed(const struct el_dcfg *cfg, const struct el_snapshot_meta *meta,
		const uint8_t *data, const uint8_t *backup, uint32_t backup_len, uint64_t floor)
{
	struct stat sb;
	const bool created = stat(cfg->data_dir, &sb) != 0 && errno == ENOENT;
	const struct el_storage_options opt = { .offline = true };
	struct el_storage *st = NULL;
	int rc = el_storage_open(&st, cfg->data_dir, &opt);
	if (rc == EL_ELOCKED) {
		/* An edgelockd runs on it (a --join node, which has no state
		 * yet): restore wrote nothing, and the files there are that
		 * node's (its incarnation and owner files were removed as
		 * "the 2 file(s) it wrote"). */
		el_log(EL_LOG_ERROR, "restore: data_dir %s is in use (the line before names the "
		       "process): nothing restored, nothing removed; stop that edgelockd, then "
		       "restore", cfg->data_dir);
		return rc;
	}
	if (rc == EL_OK) /* the node whose state this is, before any of it (owner.c) */
		rc = el_d_owner_guard(cfg->data_dir, cfg->id, false, true);
	if (rc == EL_OK) { /* first: restored state must never read as generation 0 */
		struct el_d_incarnation inc;
		el_d_incarnation_of_backup(backup, backup_len, &meta->conf, floor, &inc);
		rc = el_d_incarnation_save(cfg->data_dir, &inc);
	}
	if (rc != EL_OK)
		el_storage_close(st); /* NULL when it did not open */
	if (rc == EL_OK) {
		const struct el_hard_state hs = { .term = meta->term, .vote = 0,
						  .commit = meta->index };
		const struct el_storage_batch b = { .snapshot = meta, .snapshot_data = data,
						    .hs = &hs, .first = meta->index + 1,
						    .last = meta->index };
		rc = el_storage_persist(st, &b);
		el_storage_close(st);
	}
	if (rc == EL_OK)
		return EL_OK;
	const int removed = el_d_unseed(cfg->data_dir, created, "restore");
	char undone[96];
	snprintf(undone, sizeof undone, removed < 0 ? "could not remove everything it wrote"
		 : "removed the %d file(s) it wrote", removed);
	el_log(EL_LOG_ERROR, "restore: data_dir %s: %s: nothing restored; %s%s%s", cfg->data_dir,
	       el_strerror(rc), undone, removed < 0 ? "" : ", so the directory holds no state and "
	       "restore can run again", rc == EL_ENOSPC ? " once its file system has room (the "
	       "backup's size and about 300 KiB more)" : "");
	return rc;
}

/* A --bootstrap whose first batch, the new cluster's configuration, did
 * not persist (a full disk): the node it leaves holds a WAL segment with
 * no whole batch, and the plain restart its storage line advised ran with
 * 0 members for ever (an outside tester). Nothing of that batch was
 * acknowledged, and the directory held no state before (the start
 * checked), so everything the bootstrap wrote goes: the WAL, and the owner
 * and incarnation files (a directory without state keeps neither: the
 * bootstrap wrote the one and removed the other). LOCK stays: this
 * process holds it until it exits. Then --bootstrap can run again. */
void el_d_unbootstrap(const struct el_dcfg *cfg, int rc)
{
	const int removed = el_d_unseed(cfg->data_dir, false, "--bootstrap");
	if (removed < 0) {
		el_log(EL_LOG_ERROR, "--bootstrap: data_dir %s: the new cluster's first write failed "
		       "(%s) and what it wrote could not all be removed (the line before names "
		       "it): remove it by hand, then run --bootstrap again", cfg->data_dir,
		       el_strerror(rc));
		return;
	}
	el_log(EL_LOG_ERROR, "--bootstrap: data_dir %s: the new cluster's first write (its "
	       "configuration) failed (%s): nothing of the bootstrap kept (%d file(s) removed, "
	       "no state left): %s and run --bootstrap again (a plain start would find the "
	       "data_dir empty)", cfg->data_dir, el_strerror(rc), removed,
	       rc == EL_ENOSPC ? "free space" : "mend what the line before names");
}

/* --token-floor: tokens are log indices, and the restored log starts at
 * the snapshot's index, so raising that index above the highest token the
 * old cluster granted (which the backup does not hold: granted after it)
 * makes every token from then on higher. The table's own last index stays
 * (a snapshot may sit above it); no entry lies between. Every node must be
 * given the same floor: it is in the incarnation. 0: none, or not above. */
static uint64_t raise_to_floor(struct el_snapshot_meta *meta, uint64_t floor)
{
	if (floor <= meta->index)
		return 0;
	el_log(EL_LOG_INFO, "restore: --token-floor %llu: the restored log starts at index %llu "
	       "(the backup's is %llu): every token granted from now on is above %llu",
	       (unsigned long long)floor, (unsigned long long)floor,
	       (unsigned long long)meta->index, (unsigned long long)floor);
	meta->index = floor;
	return floor;
}

int el_d_restore(const struct el_dcfg *cfg, const char *file, uint64_t token_floor)
{
	if (el_d_has_state(cfg->data_dir)) {
		el_log(EL_LOG_ERROR, "restore: data_dir %s already holds a cluster's state: "
		       "restore seeds an empty one only", cfg->data_dir);
		return EL_EINVAL;
	}
	struct el_snapshot_meta meta = { .term = 1 };
	struct el_lock_table *t = NULL;
	uint8_t *buf = NULL, *ended = NULL;
	const uint8_t *data = NULL;
	size_t n = 0;
	uint32_t len = 0;
	int checked = 0;
	int rc = el_d_conf_of(cfg, &meta.conf, "restore");
	if (rc == EL_OK)
		rc = read_backup(file, &buf, &n);
	if (rc == EL_OK)
		rc = unwrap(file, buf, n, &data, &len, &checked);
	meta.len = len;
	if (rc == EL_OK)
		rc = load_backup(file, data, len, checked, &t);
	if (rc == EL_OK)
		rc = end_sessions(t, &meta, &ended);
	if (rc == EL_OK)
		meta.index = t->last_index;
	free(t);
	const uint64_t floor = rc == EL_OK ? raise_to_floor(&meta, token_floor) : 0;
	if (rc == EL_OK)
		rc = seed(cfg, &meta, ended != NULL ? ended : data, data, len, floor);
	if (rc == EL_OK)
		el_log(EL_LOG_INFO, "restore: %s seeded for node %u of a new %u-voter cluster; "
		       "start it normally (no --bootstrap)", cfg->data_dir, cfg->id, meta.conf.n);
	free(ended);
	free(buf);
	return rc;
}
