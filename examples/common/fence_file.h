/*
 * fence_file.h - a fence's highest token kept in a file, for the examples'
 * resources (fleet-election, fenced-resource). Written so that a crash or a
 * power cut at any moment leaves the old content or the new one, never an
 * empty or half-written file; read so that a file that is there but holds
 * no token fails closed: read as 0, it would let every stale token through.
 *
 *   uint64_t highest;
 *   if (fence_file_load(path, &highest) != EL_OK) refuse every request;
 *   el_fence_init(&fence, highest, fence_file_persist, path);
 */
#ifndef FENCE_FILE_H
#define FENCE_FILE_H

#include <stdint.h>

/* The highest token recorded in path: EL_OK with *highest (0 when there is
 * no file: a new resource), EL_EIO when it cannot be read, EL_ECORRUPT when
 * it does not hold just a token. */
int fence_file_load(const char *path, uint64_t *highest);
/* The fence kit's persistence hook (el_fence_persist_fn); ctx is the path. */
int fence_file_persist(void *ctx, uint64_t highest);
/* Replace path's content with text durably: a temporary file, fsync, rename
 * over path, fsync of the directory. EL_OK or EL_EIO. */
int durable_write(const char *path, const char *text);

#endif /* FENCE_FILE_H */
