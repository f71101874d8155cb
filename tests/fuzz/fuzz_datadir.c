/*
 * fuzz_datadir.c - libFuzzer target for the small files edgelockd reads
 * from its data directory at every start (cmd/edgelockd/incarnation.c,
 * owner.c): any bytes as DATA_DIR/incarnation, then as DATA_DIR/owner.
 *
 * The incarnation reader must return EL_OK, EL_EINVAL (damaged) or EL_EIO,
 * never crash; what it accepts must load again to the same incarnation
 * (a last release's line is rewritten with its checksum on the way, and the
 * rewrite must read back as the same). The owner check must accept a file
 * for node N only when it holds exactly the line a start records for N.
 * Both run in a scratch directory made once; their log lines go to
 * /dev/null.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "el_daemon.h"
#include "el_error.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64], ref[64];

static void expect(int ok)
{
	if (!ok)
		abort();
}

/* At exit: the scratch directories and what the targets wrote there. */
static void cleanup(void)
{
	static const char *const names[] = { "incarnation", "incarnation.tmp", "owner",
					     "owner.tmp" };
	char path[128];
	for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++) {
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
		snprintf(path, sizeof path, "%s/%s", ref, names[i]);
		unlink(path);
	}
	rmdir(dir);
	rmdir(ref);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	snprintf(dir, sizeof dir, "/tmp/el-fuzz-datadir-XXXXXX");
	snprintf(ref, sizeof ref, "/tmp/el-fuzz-datadir-ref-XXXXXX");
	expect(mkdtemp(dir) != NULL && mkdtemp(ref) != NULL);
	atexit(cleanup);
	FILE *sink = fopen("/dev/null", "w");
	expect(sink != NULL);
	stderr = sink;
	return 0;
}

static void put(const char *name, const uint8_t *data, size_t size)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	const int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	expect(fd >= 0 && write(fd, data, size) == (ssize_t)size);
	close(fd);
}

static bool same_file(const char *a, const char *b)
{
	char buf_a[256] = "", buf_b[256] = "";
	FILE *fa = fopen(a, "r"), *fb = fopen(b, "r");
	const size_t na = fa != NULL ? fread(buf_a, 1, sizeof buf_a, fa) : 0;
	const size_t nb = fb != NULL ? fread(buf_b, 1, sizeof buf_b, fb) : 0;
	if (fa != NULL)
		fclose(fa);
	if (fb != NULL)
		fclose(fb);
	return fa != NULL && fb != NULL && na == nb && memcmp(buf_a, buf_b, na) == 0;
}

static void incarnation(const uint8_t *data, size_t size)
{
	struct el_d_incarnation got, again;
	put("incarnation", data, size);
	const int rc = el_d_incarnation_load(dir, true, &got);
	expect(rc == EL_OK || rc == EL_EINVAL || rc == EL_EIO);
	if (rc != EL_OK)
		return;
	expect(el_d_incarnation_load(dir, true, &again) == EL_OK);
	expect(got.known == again.known && got.generation == again.generation &&
	       got.nonce == again.nonce);
	char name[64];
	el_d_incarnation_name(&got, name, sizeof name);
	expect(memchr(name, '\0', sizeof name) != NULL);
}

static void owner(const uint8_t *data, size_t size)
{
	char why[1200], fix[1200], path[128], want[128];
	put("owner", data, size);
	const el_id_t id = size > 0 ? (el_id_t)(data[0] % 9u + 1u) : 1u;
	const int rc = el_d_owner_check(dir, id, true, why, fix, sizeof why);
	expect(rc == EL_OK || rc == EL_EINVAL);
	if (rc != EL_OK) {
		expect(memchr(why, '\0', sizeof why) != NULL && memchr(fix, '\0', sizeof fix) != NULL);
		return;
	}
	/* accepted: byte for byte what a start records for id */
	expect(el_d_owner_guard(ref, id, false, true) == EL_OK);
	snprintf(path, sizeof path, "%s/owner", dir);
	snprintf(want, sizeof want, "%s/owner", ref);
	expect(same_file(path, want));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	incarnation(data, size);
	owner(data, size);
	return 0;
}
