/*
 * port_test_util.c - scratch directories, the workload generator and its
 * model, the checking loader, and fault injection for the port/posix tests.
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

#include "el_error.h"
#include "el_io.h"
#include "port_test_util.h"

/* ---- scratch directories ---------------------------------------------- */

char *pt_tmpdir(const char *base, const char *tag, char *buf, size_t cap)
{
	mkdir(base, 0700);
	snprintf(buf, cap, "%s/%s-XXXXXX", base, tag);
	if (!mkdtemp(buf)) {
		perror(buf);
		exit(2);
	}
	return buf;
}

void pt_rmrf(const char *path)
{
	char p[PATH_MAX];
	DIR *d = opendir(path);
	struct dirent *de;
	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof p, "%s/%s", path, de->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(path);
}

static void copy_file(const char *from, const char *to)
{
	char buf[65536];
	ssize_t n;
	int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	while (in >= 0 && out >= 0 && (n = read(in, buf, sizeof buf)) > 0)
		if (write(out, buf, (size_t)n) != n)
			break;
	if (in >= 0)
		close(in);
	if (out >= 0)
		close(out);
}

void pt_copy_dir(const char *from, const char *to)
{
	char a[PATH_MAX], b[PATH_MAX];
	DIR *d = opendir(from);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, "LOCK") == 0)
			continue;
		snprintf(a, sizeof a, "%s/%s", from, de->d_name);
		snprintf(b, sizeof b, "%s/%s", to, de->d_name);
		copy_file(a, b);
	}
	if (d)
		closedir(d);
}

long pt_file_size(const char *path)
{
	struct stat sb;
	return stat(path, &sb) == 0 ? (long)sb.st_size : -1;
}

uint64_t pt_rand(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* ---- content ------------------------------------------------------------- */

void pt_fill_entry(struct el_entry *e, uint64_t index, uint64_t term)
{
	e->index = index;
	e->term = term;
	e->type = index % 5 == 0 ? EL_ENTRY_NOOP : EL_ENTRY_NORMAL;
	e->len = (uint16_t)((index * 31 + term * 7) % 97);
	for (unsigned j = 0; j < e->len; j++)
		e->data[j] = (uint8_t)(index * 131 + term * 17 + j * 7);
}

void pt_fill_snapshot(struct el_snapshot_meta *m, uint8_t *data, uint64_t index, uint64_t term)
{
	memset(m, 0, sizeof *m);
	m->index = index;
	m->term = term;
	m->conf.n = 3;
	for (unsigned i = 0; i < 3; i++)
		m->conf.m[i] = (struct el_member){ .id = i + 1, .role = EL_MEMBER_VOTER };
	m->len = (uint32_t)((index * 13) % 500);
	for (uint32_t j = 0; j < m->len; j++)
		data[j] = (uint8_t)(index + j * 3 + term);
}
