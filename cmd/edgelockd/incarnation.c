/*
 * incarnation.c - which incarnation of its cluster a node's data is of,
 * so that data from before a --force-new-cluster or a restore cannot
 * rejoin.
 *
 * --force-new-cluster makes the survivor the one voter of a new
 * configuration. The old members still hold the old one: restarted with
 * their old data (the docs forbid it, nothing stopped it), two of three
 * formed a quorum of the old configuration among themselves, elected a
 * leader at a higher term, pulled the survivor back as its follower (it
 * could then take nothing: its log had parted) and granted tokens below
 * the survivor's (found by an outside tester). Raft alone cannot tell: a
 * lagging member may rightly hear from a leader its configuration does
 * not name yet. So the data carries an incarnation, in a file of its own
 * (INCARNATION_FILE), and every peer hello says it (el_peer_hello.h):
 *   - a cluster bootstrapped is generation 0 (no file needed);
 *   - --force-new-cluster moves to the next generation, with a random nonce;
 *   - a restore seeds generation 1, its nonce the backup's digest (every
 *     node restored from one backup agrees);
 *   - a node started with --join and no state has none until the first
 *     hello of a node with one, which it adopts (written first).
 * A hello of a lower generation is refused: its sender's data is stale. One
 * of a higher generation tells this node its own data is stale: it stops
 * for good, as a removed member does (etcd refuses a removed member's
 * messages, and the member stops on hearing so). One of the same
 * generation with another nonce is another cluster made from this one
 * (two forced survivors): refused, said on both sides.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "el_daemon.h"
#include "el_error.h"
#include "el_peer_hello.h"

#define INCARNATION_FILE "incarnation"
#define JOINING_LINE "joining\n"

static void path_of(const char *dir, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", dir, INCARNATION_FILE);
}

int el_d_incarnation_load(const char *dir, bool has_state, struct el_d_incarnation *out)
{
	char path[EL_DCFG_PATH_MAX + sizeof INCARNATION_FILE + 1], line[96] = "";
	path_of(dir, path, sizeof path);
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "r");
	if (f == NULL) { /* a bootstrapped cluster's data, or no data yet */
		out->known = has_state;
		return errno == ENOENT ? EL_OK : EL_EIO;
	}
	const bool read = fgets(line, sizeof line, f) != NULL;
	fclose(f);
	unsigned gen = 0;
	unsigned long long nonce = 0;
	char end = 0;
	if (read && strcmp(line, JOINING_LINE) == 0)
		return EL_OK;
	if (read && sscanf(line, "generation %u nonce %16llx%c", &gen, &nonce, &end) == 3 &&
	    end == '\n') {
		*out = (struct el_d_incarnation){ .known = true, .generation = gen, .nonce = nonce };
		return EL_OK;
	}
	el_log(EL_LOG_ERROR, "%s is damaged (not \"generation N nonce HEX\" nor \"joining\"): "
	       "restore it from the node's other copies, or wipe data_dir and --join", path);
	return EL_EINVAL;
}

bool el_d_incarnation_joining(const char *dir)
{
	char path[EL_DCFG_PATH_MAX + sizeof INCARNATION_FILE + 1], line[sizeof JOINING_LINE] = "";
	path_of(dir, path, sizeof path);
	FILE *f = fopen(path, "r");
	if (f == NULL)
		return false;
	const bool joining = fgets(line, sizeof line, f) != NULL && strcmp(line, JOINING_LINE) == 0;
	fclose(f);
	return joining;
}

/* A bootstrap starts a new cluster, generation 0, which needs no file:
 * one left by a failed restore would make this node claim that restore's
 * generation, and the new members would stop on its hello as outdated. The
 * directory is synced so that a crash cannot bring the file back. */
int el_d_incarnation_clear(const char *dir)
{
	char path[EL_DCFG_PATH_MAX + sizeof INCARNATION_FILE + 1];
	path_of(dir, path, sizeof path);
	if (unlink(path) != 0 && errno != ENOENT) {
		el_log(EL_LOG_ERROR, "cannot remove %s: %s", path, strerror(errno));
		return EL_EIO;
	}
	const int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	const bool ok = dfd >= 0 && fsync(dfd) == 0;
	if (dfd >= 0)
		close(dfd);
	if (!ok) {
		el_log(EL_LOG_ERROR, "cannot sync %s: %s", dir, strerror(errno));
		return EL_EIO;
	}
	return EL_OK;
}

/* The file, whole and synced, its directory too, before anything that
 * relies on it (a hello, the forced configuration, the restored state). */
int el_d_incarnation_save(const char *dir, const struct el_d_incarnation *inc)
{
	char path[EL_DCFG_PATH_MAX + sizeof INCARNATION_FILE + 1], tmp[sizeof path + 4];
	char line[96];
	path_of(dir, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.tmp", path);
	const int n = inc->known ? snprintf(line, sizeof line, "generation %u nonce %016llx\n",
					    inc->generation, (unsigned long long)inc->nonce)
				 : snprintf(line, sizeof line, "%s", JOINING_LINE);
	const int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	bool ok = fd >= 0 && write(fd, line, (size_t)n) == n && fsync(fd) == 0;
	if (fd >= 0)
		close(fd);
	ok = ok && rename(tmp, path) == 0;
	const int dfd = ok ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
	ok = ok && dfd >= 0 && fsync(dfd) == 0;
	if (dfd >= 0)
		close(dfd);
	if (!ok) {
		el_log(EL_LOG_ERROR, "cannot write %s: %s", path, strerror(errno));
		(void)unlink(tmp);
		return EL_EIO;
	}
	return EL_OK;
}

int el_d_incarnation_next(const struct el_d_incarnation *old, struct el_d_incarnation *out)
{
	uint64_t nonce = 0;
	int rc = EL_OK;
	while (rc == EL_OK && nonce == 0)
		rc = el_random_seed(&nonce);
	*out = (struct el_d_incarnation){ .known = true, .generation = old->generation + 1,
					  .nonce = nonce };
	return old->generation == UINT32_MAX ? EL_EFULL : rc;
}

void el_d_incarnation_of_backup(const uint8_t *data, uint32_t len, struct el_d_incarnation *out)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (uint32_t i = 0; i < len; i++) {
		h ^= data[i];
		h *= 0x100000001b3ull;
	}
	*out = (struct el_d_incarnation){ .known = true, .generation = 1, .nonce = h ? h : 1 };
}

enum el_d_inc_verdict el_d_incarnation_judge(const struct el_d_incarnation *ours,
					     const struct el_peer_hello *h)
{
	if (!h->has_incarnation) /* joining, or an older release */
		return EL_D_INC_SAME;
	if (!ours->known)
		return EL_D_INC_ADOPT;
	if (h->generation == ours->generation && h->nonce == ours->nonce)
		return EL_D_INC_SAME;
	if (h->generation < ours->generation)
		return EL_D_INC_THEY_STALE;
	return h->generation > ours->generation ? EL_D_INC_WE_STALE : EL_D_INC_OTHER;
}

void el_d_incarnation_name(const struct el_d_incarnation *inc, char *out, size_t cap)
{
	if (inc->known)
		snprintf(out, cap, "%u.%016llx", inc->generation, (unsigned long long)inc->nonce);
	else
		snprintf(out, cap, "none yet (joining)");
}
