/*
 * port_test_power.c - a power-cut model at the el_io seam. It keeps, beside
 * the real files, what a disk would still hold after losing power: for each
 * file (by inode) the bytes of its last fsync/fdatasync, and for each watched
 * directory the entries of its last fsync. Syncs themselves are not sent to
 * the disk (the model is the durable state), which keeps a sweep fast.
 *
 * From it come:
 *  - the durability rules (pt_power_violations): no rename of a file with
 *    unsynced data; nothing unsynced when a persist or an open returns
 *    (pt_power_check_synced); a created directory synced into its parent;
 *  - crash images (pt_power_image): the watched directory as it would be
 *    after a power cut now, optionally with a torn sector (a prefix of the
 *    unsynced change of a log segment, appended or written in place);
 *  - a cut hook: before every call that changes the disk, the test's
 *    callback gets to build images and recover them, with the model paused
 *    (the recovery's own I/O goes to the real calls, syncs skipped);
 *  - a failed sync as Linux fails it (pt_power_fail_sync): the pages it was
 *    to write are marked clean, not written; they stay readable, and no
 *    later sync writes them unless they are written again (fsyncgate).
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

#include "el_io.h"
#include "el_wal.h"
#include "port_test_util.h"

#define FILES_MAX 256
#define ENTRIES_MAX 128
#define FDS_MAX 1024

/* One file's life: a new record whenever a file is created, even when the
 * file system hands out a freed inode number again, so a synced directory
 * entry keeps naming the bytes it named. */
struct pw_file {
	ino_t ino;
	bool used;
	bool live;        /* the newest record of this inode number */
	bool dirty;       /* written or truncated since its last sync */
	size_t dur_len;
	uint8_t *dur;     /* content at its last sync */
	bool *lost;       /* per page: a failed sync marked it clean, unwritten */
	size_t lost_n;
};

#define PAGE 4096u

struct pw_entry {
	char name[NAME_MAX + 1];
	ino_t ino;
	int rec; /* files[] index of the record it named when synced; -1: none */
};

struct pw_dir {
	char path[PATH_MAX];
	int n;
	struct pw_entry ent[ENTRIES_MAX]; /* entries at its last fsync */
};

static struct el_io real;
static bool active, paused;
static struct pw_file files[FILES_MAX];
static struct pw_dir parent_dir, data_dir;
static int fd_file[FDS_MAX]; /* fd -> files[] index + 1; -1: a watched dir */
static char violation[512];
static unsigned n_violations;
static unsigned fail_sync_in; /* fail the nth file sync from now; 0: none */
static int fail_sync_err;
static pt_power_cut_fn cut_fn;
static void *cut_ctx;
static unsigned cuts;

static void violate(const char *what, const char *path)
{
	n_violations++;
	if (violation[0] == '\0')
		snprintf(violation, sizeof violation, "%s: %s", what, path);
}

static void forget_file(struct pw_file *f)
{
	free(f->dur);
	free(f->lost);
	memset(f, 0, sizeof *f);
}

static struct pw_file *new_file(ino_t ino)
{
	for (int i = 0; i < FILES_MAX; i++)
		if (files[i].used && files[i].ino == ino)
			files[i].live = false;
	for (int i = 0; i < FILES_MAX; i++)
		if (!files[i].used) {
			forget_file(&files[i]);
			files[i].used = true;
			files[i].live = true;
			files[i].ino = ino;
			return &files[i];
		}
	abort(); /* more files than a test makes */
}

static struct pw_file *file_of_ino(ino_t ino, bool create)
{
	for (int i = 0; i < FILES_MAX; i++)
		if (files[i].used && files[i].live && files[i].ino == ino)
			return &files[i];
	return create ? new_file(ino) : NULL;
}

/* The whole current content of a file, read through /proc (fd may be
 * write-only). */
static uint8_t *read_fd(int fd, size_t *len)
{
	char p[64];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	int r = open(p, O_RDONLY);
	struct stat sb;
	if (r < 0 || fstat(r, &sb) != 0)
		abort();
	uint8_t *buf = malloc((size_t)sb.st_size + 1);
	*len = (size_t)sb.st_size;
	if (buf == NULL || pread(r, buf, *len, 0) != (ssize_t)*len)
		abort();
	close(r);
	return buf;
}

/* A sync: the file's content becomes durable, but for the pages a failed
 * sync marked clean, which keep their durable bytes (zeros past them). */
static void snapshot_file(struct pw_file *f, int fd)
{
	size_t len;
	uint8_t *cur = read_fd(fd, &len);
	for (size_t p = 0; p < f->lost_n && p * PAGE < len; p++)
		for (size_t i = p * PAGE; f->lost[p] && i < (p + 1) * PAGE && i < len; i++)
			cur[i] = i < f->dur_len ? f->dur[i] : 0;
	free(f->dur);
	f->dur = cur;
	f->dur_len = len;
	f->dirty = false;
}

/* A failed sync: every page that differs from the durable bytes was dirty;
 * the kernel marks it clean without writing it. */
static void lose_dirty_pages(struct pw_file *f, int fd)
{
	size_t len;
	uint8_t *cur = read_fd(fd, &len);
	const size_t n = (len + PAGE - 1) / PAGE;
	if (n > f->lost_n) {
		f->lost = realloc(f->lost, n * sizeof *f->lost);
		if (f->lost == NULL)
			abort();
		memset(f->lost + f->lost_n, 0, (n - f->lost_n) * sizeof *f->lost);
		f->lost_n = n;
	}
	for (size_t i = 0; i < len; i++)
		if (i >= f->dur_len || cur[i] != f->dur[i])
			f->lost[i / PAGE] = true;
	free(cur);
}

/* Pages [off, off + len) written again (dirty: the next sync writes them). */
static void rewrite_pages(struct pw_file *f, off_t off, size_t len)
{
	for (size_t p = (size_t)off / PAGE; p < f->lost_n && p * PAGE < (size_t)off + len; p++)
		f->lost[p] = false;
}

/* The real entries of a directory (regular files and directories). */
static void list_dir(const char *path, struct pw_dir *out)
{
	memset(out, 0, sizeof *out);
	snprintf(out->path, sizeof out->path, "%s", path);
	DIR *d = opendir(path);
	if (d == NULL)
		return;
	for (struct dirent *e; (e = readdir(d)) != NULL;) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (out->n == ENTRIES_MAX)
			abort();
		snprintf(out->ent[out->n].name, sizeof out->ent[0].name, "%s", e->d_name);
		out->ent[out->n].ino = e->d_ino;
		const struct pw_file *f = file_of_ino(e->d_ino, false);
		out->ent[out->n].rec = f != NULL ? (int)(f - files) : -1;
		out->n++;
	}
	closedir(d);
}

/* Every entry of now is in synced (same name, same file): nothing created
 * or renamed since the sync. Removals may stay unsynced: a deleted segment
 * that comes back after a power cut holds only entries a snapshot covers. */
static bool nothing_new(const struct pw_dir *now, const struct pw_dir *synced)
{
	for (int i = 0; i < now->n; i++) {
		int j = 0;
		while (j < synced->n && (strcmp(now->ent[i].name, synced->ent[j].name) != 0 ||
					 now->ent[i].ino != synced->ent[j].ino))
			j++;
		if (j == synced->n)
			return false;
	}
	return true;
}

static void cut_point(void)
{
	if (!active || paused || cut_fn == NULL)
		return;
	paused = true;
	cuts++;
	cut_fn(cut_ctx);
	paused = false;
}

static int p_open(const char *path, int flags, mode_t mode)
{
	if (paused)
		return real.open(path, flags, mode);
	if (flags & (O_CREAT | O_TRUNC))
		cut_point();
	struct stat sb;
	const bool created = (flags & O_CREAT) && stat(path, &sb) != 0;
	int fd = real.open(path, flags, mode);
	if (fd < 0 || fd >= FDS_MAX || fstat(fd, &sb) != 0)
		return fd;
	if (S_ISDIR(sb.st_mode)) {
		fd_file[fd] = -1;
		return fd;
	}
	struct pw_file *f = created ? new_file(sb.st_ino) : file_of_ino(sb.st_ino, true);
	fd_file[fd] = (int)(f - files) + 1;
	if (flags & O_TRUNC && sb.st_size == 0 && f->dur_len > 0)
		f->dirty = true;
	return fd;
}

static struct pw_file *file_of_fd(int fd)
{
	return fd >= 0 && fd < FDS_MAX && fd_file[fd] > 0 ? &files[fd_file[fd] - 1] : NULL;
}

static ssize_t p_write(int fd, const void *buf, size_t len)
{
	if (!paused) {
		cut_point();
		struct pw_file *f = file_of_fd(fd);
		if (f != NULL) {
			f->dirty = true;
			rewrite_pages(f, lseek(fd, 0, SEEK_CUR), len);
		}
	}
	return real.write(fd, buf, len);
}

static ssize_t p_pwrite(int fd, const void *buf, size_t len, off_t off)
{
	if (!paused) {
		cut_point();
		struct pw_file *f = file_of_fd(fd);
		if (f != NULL) {
			f->dirty = true;
			rewrite_pages(f, off, len);
		}
	}
	return real.pwrite(fd, buf, len, off);
}

static void sync_dir(int fd)
{
	char p[64], path[PATH_MAX];
	snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
	ssize_t n = readlink(p, path, sizeof path - 1);
	if (n < 0)
		return;
	path[n] = '\0';
	if (strcmp(path, parent_dir.path) == 0)
		list_dir(path, &parent_dir);
	else if (strcmp(path, data_dir.path) == 0)
		list_dir(path, &data_dir);
}

static int p_sync(int fd)
{
	if (paused)
		return 0;
	cut_point();
	if (fd >= 0 && fd < FDS_MAX && fd_file[fd] == -1) {
		sync_dir(fd);
		return 0;
	}
	struct pw_file *f = file_of_fd(fd);
	if (f != NULL && fail_sync_in > 0 && --fail_sync_in == 0) {
		lose_dirty_pages(f, fd);
		errno = fail_sync_err;
		return -1;
	}
	if (f != NULL)
		snapshot_file(f, fd);
	return 0;
}

void pt_power_fail_sync(unsigned nth, int err)
{
	fail_sync_in = nth;
	fail_sync_err = err;
}

static int p_rename(const char *from, const char *to)
{
	if (!paused) {
		cut_point();
		struct stat sb;
		if (stat(from, &sb) == 0) {
			const struct pw_file *f = file_of_ino(sb.st_ino, false);
			if (f == NULL || f->dirty)
				violate("rename of a file with unsynced data", from);
		}
	}
	return real.rename(from, to);
}

static int p_ftruncate(int fd, off_t len)
{
	if (!paused) {
		cut_point();
		struct pw_file *f = file_of_fd(fd);
		if (f != NULL) {
			f->dirty = true;
			/* pages past len are dropped; the one it ends in is zeroed
			 * past len, dirty again */
			rewrite_pages(f, len / PAGE * PAGE, SIZE_MAX / 2);
		}
	}
	return real.ftruncate(fd, len);
}

static int p_unlink(const char *path)
{
	if (!paused)
		cut_point();
	return real.unlink(path);
}

/* Files already in dir count as durable, as they are now. */
static void baseline_dir(const char *dir, struct pw_dir *d)
{
	list_dir(dir, d);
	for (int i = 0; i < d->n; i++) {
		char p[PATH_MAX * 2];
		snprintf(p, sizeof p, "%s/%s", dir, d->ent[i].name);
		int fd = open(p, O_RDONLY);
		struct stat sb;
		if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
			if (fd >= 0)
				close(fd);
			continue;
		}
		snapshot_file(new_file(sb.st_ino), fd);
		close(fd);
	}
	list_dir(dir, d); /* again, now that the records exist */
}

void pt_power_begin(const char *parent, const char *dir, pt_power_cut_fn fn, void *ctx)
{
	if (!active) {
		el_io_reset();
		real = el_io;
	}
	for (int i = 0; i < FILES_MAX; i++)
		forget_file(&files[i]);
	fail_sync_in = 0;
	memset(fd_file, 0, sizeof fd_file);
	/* Absolute paths, as /proc/self/fd names a synced directory. */
	char abs_parent[PATH_MAX], abs_dir[PATH_MAX];
	if (realpath(parent, abs_parent) == NULL)
		abort();
	const char *base = strrchr(dir, '/');
	if (snprintf(abs_dir, sizeof abs_dir, "%s/%s", abs_parent, base != NULL ? base + 1 : dir) >= (int)sizeof abs_dir)
		abort();
	baseline_dir(abs_parent, &parent_dir);
	baseline_dir(abs_dir, &data_dir);
	snprintf(data_dir.path, sizeof data_dir.path, "%s", abs_dir);
	violation[0] = '\0';
	n_violations = 0;
	cut_fn = fn;
	cut_ctx = ctx;
	cuts = 0;
	paused = false;
	active = true;
	el_io.open = p_open;
	el_io.write = p_write;
	el_io.pwrite = p_pwrite;
	el_io.fsync = p_sync;
	el_io.fdatasync = p_sync;
	el_io.rename = p_rename;
	el_io.ftruncate = p_ftruncate;
	el_io.unlink = p_unlink;
}

void pt_power_end(void)
{
	el_io_reset();
	active = false;
	for (int i = 0; i < FILES_MAX; i++)
		forget_file(&files[i]);
	fail_sync_in = 0;
}

unsigned pt_power_cuts(void) { return cuts; }

unsigned pt_power_violations(const char **first)
{
	if (first != NULL)
		*first = violation;
	return n_violations;
}

/* Nothing written since its sync, no directory entry since its fsync: what
 * must hold whenever a persist or an open has returned success. */
void pt_power_check_synced(const char *when)
{
	for (int i = 0; i < FILES_MAX; i++)
		if (files[i].used && files[i].dirty) {
			violate("unsynced data when returning", when);
			return;
		}
	struct pw_dir now;
	list_dir(data_dir.path, &now);
	if (!nothing_new(&now, &data_dir))
		violate("unsynced directory entry in the data directory when returning", when);
	list_dir(parent_dir.path, &now);
	if (!nothing_new(&now, &parent_dir))
		violate("data directory not synced into its parent when returning", when);
}

static bool write_file(const char *path, const uint8_t *a, size_t alen)
{
	FILE *f = fopen(path, "wb");
	bool ok = f != NULL && (alen == 0 || fwrite(a, 1, alen, f) == alen);
	if (f != NULL)
		fclose(f);
	return ok;
}

/* The durable bytes with a torn sector of the unsynced change: from the
 * first byte that differs from them (bytes appended past them, or zeros the
 * log wrote ahead and now overwrites in place: port/posix/el_wal.h), a
 * prefix of at most 512 bytes of what is there now. NULL when nothing
 * changed or the file was cut shorter. */
static uint8_t *torn_image(const struct pw_file *f, const char *real_path, size_t *img_len,
			   uint64_t *rng)
{
	int fd = open(real_path, O_RDONLY);
	if (fd < 0)
		return NULL;
	size_t len;
	uint8_t *cur = read_fd(fd, &len);
	close(fd);
	size_t d = 0, e = len;
	while (d < f->dur_len && d < len && cur[d] == f->dur[d])
		d++;
	while (e > d && e <= f->dur_len && cur[e - 1] == f->dur[e - 1])
		e--;
	if (len < f->dur_len || e <= d) {
		free(cur);
		return NULL;
	}
	const size_t n = 1 + (size_t)(pt_rand(rng) % (e - d < 512 ? e - d : 512));
	*img_len = d + n > f->dur_len ? d + n : f->dur_len;
	uint8_t *img = calloc(1, *img_len);
	if (f->dur_len > 0) /* none: a segment whose entry is synced, its data never */
		memcpy(img, f->dur, f->dur_len);
	memcpy(img + d, cur + d, n);
	free(cur);
	return img;
}

/* The data directory as a power cut now would leave it, in out (emptied
 * first): nothing when its entry in the parent was never synced; else each
 * entry of its last fsync with its file's synced bytes. torn > 0 also keeps
 * a torn sector of a log segment's unsynced change (chosen by rng). */
int pt_power_image(const char *out, bool torn, uint64_t *rng)
{
	struct pw_dir now;
	list_dir(out, &now);
	for (int i = 0; i < now.n; i++) {
		char p[PATH_MAX * 2];
		snprintf(p, sizeof p, "%s/%s", out, now.ent[i].name);
		unlink(p);
	}
	const char *base = strrchr(data_dir.path, '/');
	base = base != NULL ? base + 1 : data_dir.path;
	bool in_parent = false;
	for (int i = 0; i < parent_dir.n; i++)
		in_parent |= strcmp(parent_dir.ent[i].name, base) == 0;
	if (!in_parent)
		return 0;
	int n = 0;
	for (int i = 0; i < data_dir.n; i++) {
		const int rec = data_dir.ent[i].rec;
		const struct pw_file *f = rec >= 0 ? &files[rec] : NULL;
		char dst[PATH_MAX * 2], src[PATH_MAX * 2];
		snprintf(dst, sizeof dst, "%s/%s", out, data_dir.ent[i].name);
		snprintf(src, sizeof src, "%s/%s", data_dir.path, data_dir.ent[i].name);
		uint8_t *img = NULL;
		size_t img_len = 0;
		/* Only log segments are written in place; every other file is
		 * written whole and renamed (wal-newest too, whose name now
		 * may be a newer file's), or rewritten (the lock file). */
		uint64_t seq;
		if (torn && f != NULL && el_wal_segment_name(data_dir.ent[i].name, &seq))
			img = torn_image(f, src, &img_len, rng);
		bool ok = img != NULL ? write_file(dst, img, img_len)
			  : f != NULL ? write_file(dst, f->dur, f->dur_len) : write_file(dst, NULL, 0);
		free(img);
		if (!ok)
			return -1;
		n += img != NULL;
	}
	return n;
}
