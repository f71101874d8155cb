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
 *   - a cluster bootstrapped is generation 0, its nonce the digest of the
 *     voters --bootstrap named ([peers]): nodes bootstrapped with other
 *     lists are other clusters, refused both ways like two forced survivors.
 *     Without it, two nodes of one list and two of another each elected a
 *     leader of their own quorum around a node listed by both, fed it
 *     entries that contradicted each other and granted one lock twice (an
 *     outside tester). etcd derives its cluster ID from --initial-cluster
 *     alike. A cluster bootstrapped by an earlier release has no file, read
 *     as generation 0 nonce 0, which its nodes added later hold too;
 *   - --force-new-cluster moves to the next generation, with a random nonce;
 *   - a restore seeds generation 1, its nonce the backup's digest and
 *     that of the voters the restore gives the node ([peers], as
 *     --bootstrap's): every node restored from one backup with one list,
 *     however ordered, agrees; nodes restored from it with other lists are
 *     two clusters, refused both ways saying the lists differ. Without the
 *     voters, nodes 1, 2 restored listing {1,2,3} and 3, 4, 5 listing
 *     {3,4,5} formed two clusters that granted one lock with one token at
 *     once (an outside tester);
 *   - a node started with --join and no state has none until the first
 *     hello of a node with one, which it adopts (written first).
 * A hello of a lower generation is refused: its sender's data is stale. One
 * of a higher generation tells this node its own data is stale: it stops
 * for good, as a removed member does (etcd refuses a removed member's
 * messages, and the member stops on hearing so). One of the same
 * generation with another nonce is another cluster made from this one
 * (two forced survivors): refused, said on both sides.
 *
 * That verdict is final, so the file must not lie: one flipped bit in a
 * follower's "generation 1" (read as 3) made both healthy members stop for
 * good on its hello, and the log's advice (wipe data_dir) then destroyed
 * the only good copies (found by an outside tester). So:
 *   - The file is two lines, "generation N nonce HEX\n" and "crc HEX\n",
 *     the CRC-32C of the first line (its newline included), and nothing
 *     else is read as an incarnation: a damaged or hand-edited file stops
 *     the start (exit 2), naming the file and the repair (every member of
 *     a healthy cluster holds the same lines: copy another member's).
 *     The checksum is a line of its own so that the release before, which
 *     reads only the first line, still opens the file after a downgrade.
 *     That release wrote the first line alone: such a file still loads,
 *     and is rewritten with its checksum, synced, at the start. "joining\n"
 *     has none: no flip turns it into a generation, and any other damage
 *     to it fails the parse.
 *   - A hello whose generation differs from ours with the SAME nonce is
 *     no --force-new-cluster's (random nonce) nor restore's (generation 1,
 *     a later force draws a new nonce): one side's file is damaged or
 *     tampered with (an old release's line has no checksum), so it is
 *     refused both ways, never taken as newer or older.
 *   - Stopping on a newer incarnation says the other causes too (this
 *     node's file lost or replaced, the other node's damaged or copied from
 *     another cluster: the checksum cannot tell a whole file copied in)
 *     and that the node must then not be wiped (el_d_retire_advice, daemon.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "el_crc32c.h"
#include "el_daemon.h"
#include "el_error.h"
#include "el_peer_hello.h"

#define INCARNATION_FILE "incarnation"
#define JOINING_LINE "joining\n"
#define TEXT_MAX 96 /* both lines at most 58 bytes */

enum inc_kind { INC_DAMAGED, INC_JOINING, INC_CHECKED, INC_LEGACY };

static void path_of(const char *dir, char *path, size_t cap)
{
	snprintf(path, cap, "%s/%s", dir, INCARNATION_FILE);
}

/* The file's text for inc; *first_len: its first line's length. */
static size_t render(const struct el_d_incarnation *inc, char text[TEXT_MAX], size_t *first_len)
{
	if (!inc->known) {
		*first_len = sizeof JOINING_LINE - 1;
		return (size_t)snprintf(text, TEXT_MAX, "%s", JOINING_LINE);
	}
	char first[TEXT_MAX / 2 + 8];
	const int n = snprintf(first, sizeof first, "generation %u nonce %016llx\n",
			       inc->generation, (unsigned long long)inc->nonce);
	*first_len = (size_t)n;
	return (size_t)snprintf(text, TEXT_MAX, "%scrc %08x\n", first,
				(unsigned)el_crc32c(0, first, (size_t)n));
}

/* Only what render writes, byte for byte, or the last release's first line
 * alone; a generation above 0 has a nonce (generation 0's may be 0). */
static enum inc_kind parse(const char *text, size_t len, struct el_d_incarnation *out)
{
	if (len == sizeof JOINING_LINE - 1 && memcmp(text, JOINING_LINE, len) == 0)
		return INC_JOINING;
	unsigned gen = 0;
	unsigned long long nonce = 0;
	if (sscanf(text, "generation %u nonce %16llx", &gen, &nonce) != 2 || (gen > 0 && nonce == 0))
		return INC_DAMAGED;
	*out = (struct el_d_incarnation){ .known = true, .generation = gen, .nonce = nonce };
	char want[TEXT_MAX];
	size_t first = 0;
	const size_t n = render(out, want, &first);
	if (len == n && memcmp(text, want, n) == 0)
		return INC_CHECKED;
	if (len == first && memcmp(text, want, first) == 0)
		return INC_LEGACY;
	*out = (struct el_d_incarnation){ .known = false };
	return INC_DAMAGED;
}

/* Two lines: what is wrong with which file, then the repair, each whole
 * within el_log's line. */
static void say_damaged(const char *path)
{
	el_log(EL_LOG_ERROR, "%s is damaged (its checksum does not match, or it is not the "
	       "\"generation N nonce HEX\" and \"crc HEX\" lines edgelockd writes, nor "
	       "\"joining\"): not starting, since a wrong incarnation in this node's hellos can "
	       "stop the healthy members for good", path);
	el_log(EL_LOG_ERROR, "to repair %s: the members of a healthy cluster hold the same "
	       "lines in DATA_DIR/incarnation (generation 0 or no file if never forced nor "
	       "restored): compare the other members' files and copy theirs over this one; or "
	       "wipe data_dir, start this node with --join and `edgelock members add` it", path);
}

int el_d_incarnation_load(const char *dir, bool has_state, struct el_d_incarnation *out)
{
	char path[EL_DCFG_PATH_MAX + sizeof INCARNATION_FILE + 1], text[TEXT_MAX + 1];
	path_of(dir, path, sizeof path);
	memset(out, 0, sizeof *out);
	FILE *f = fopen(path, "r");
	if (f == NULL) { /* a bootstrapped cluster's data, or no data yet */
		out->known = has_state;
		return errno == ENOENT ? EL_OK : EL_EIO;
	}
	const size_t len = fread(text, 1, TEXT_MAX, f); /* more: damaged */
	const bool failed = ferror(f) != 0;
	fclose(f);
	text[len] = '\0';
	if (failed) {
		el_log(EL_LOG_ERROR, "cannot read %s", path);
		return EL_EIO;
	}
	switch (parse(text, len, out)) {
	case INC_JOINING:
	case INC_CHECKED:
		return EL_OK;
	case INC_LEGACY:
		el_log(EL_LOG_INFO, "%s: the last release's line, without a checksum: rewritten "
		       "with one", path);
		return el_d_incarnation_save(dir, out);
	case INC_DAMAGED:
		break;
	}
	say_damaged(path);
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

/* FNV-1a of n bytes, never 0 (a nonce of 0 is an earlier release's). */
static uint64_t digest(const uint8_t *data, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++) {
		h ^= data[i];
		h *= 0x100000001b3ull;
	}
	return h ? h : 1;
}

/* The voters' ids in ascending order, 4 bytes each little-endian, digested:
 * every node of one [peers] list, however ordered, draws one value. */
static uint64_t voters_digest(const struct el_conf *c)
{
	uint8_t bytes[4 * EL_NODES_MAX];
	size_t n = 0;
	for (el_id_t last = 0;;) {
		el_id_t next = 0;
		for (uint32_t i = 0; i < c->n && i < EL_NODES_MAX; i++)
			if (c->m[i].id > last && (next == 0 || c->m[i].id < next))
				next = c->m[i].id;
		if (next == 0 || n + 4 > sizeof bytes)
			break;
		for (int b = 0; b < 4; b++)
			bytes[n++] = (uint8_t)(next >> (8 * b));
		last = next;
	}
	return digest(bytes, n);
}

/* It replaces any file there: one left by a failed restore would make this
 * node claim that restore's generation, and the new members would stop on
 * its hello as outdated. */
void el_d_incarnation_of_bootstrap(const struct el_conf *c, struct el_d_incarnation *out)
{
	*out = (struct el_d_incarnation){ .known = true, .generation = 0,
					  .nonce = voters_digest(c) };
}

/* The file, whole and synced, its directory too, before anything that
 * relies on it (a hello, the forced configuration, the restored state). */
int el_d_incarnation_save(const char *dir, const struct el_d_incarnation *inc)
{
	char path[EL_DCFG_PATH_MAX + sizeof INCARNATION_FILE + 1], line[TEXT_MAX];
	size_t first = 0;
	path_of(dir, path, sizeof path);
	return el_d_replace_file(dir, path, line, render(inc, line, &first));
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

static uint32_t fold(uint64_t h)
{
	return (uint32_t)(h ^ h >> 32);
}

/* The backup's half high, the voters' low: so that a hello of generation 1
 * whose high half is ours tells a node restored from the same backup with
 * another [peers] list (el_d_incarnation_restored_apart). A --token-floor
 * (index above the backup's) goes into the high half: nodes restored with
 * other floors hold other snapshots, two clusters. */
void el_d_incarnation_of_backup(const uint8_t *data, uint32_t len, const struct el_conf *voters,
				uint64_t floor, struct el_d_incarnation *out)
{
	uint64_t backup = digest(data, len);
	if (floor != 0) {
		uint8_t f[8];
		for (int i = 0; i < 8; i++)
			f[i] = (uint8_t)(floor >> (8 * i));
		backup ^= digest(f, sizeof f);
	}
	const uint64_t nonce = (uint64_t)fold(backup) << 32 | fold(voters_digest(voters));
	*out = (struct el_d_incarnation){ .known = true, .generation = 1,
					  .nonce = nonce ? nonce : 1 };
}

bool el_d_incarnation_restored_apart(const struct el_d_incarnation *ours, uint32_t generation,
				     uint64_t nonce)
{
	return ours->known && ours->generation == 1 && generation == 1 && nonce != ours->nonce &&
	       nonce >> 32 == ours->nonce >> 32;
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
	if (h->nonce == ours->nonce) /* no force nor restore makes that: see the top */
		return EL_D_INC_DAMAGED;
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
