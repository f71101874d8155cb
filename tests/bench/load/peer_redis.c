/*
 * target_redis.c - a single Redis (Debian's redis-server, `appendonly yes`,
 * `appendfsync always`: every write fsynced before the reply) as a bench
 * target for `make bench-compare`, through hiredis with the usual recipe:
 * SET name token NX PX ttl to take, a Lua script that deletes only when the
 * value is still our token to release. Redis has no waiting and no
 * sessions: a contended client retries every millisecond, and the idle
 * sessions of the scale workload are idle connections. Plain TCP (Debian's
 * hiredis has no TLS): that handicaps edgelock, not Redis.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <hiredis/hiredis.h>

#include "bench.h"

#define TTL_MS 10000
static const char release_lua[] =
	"if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) "
	"else return 0 end";

struct redis_target {
	char dir[320];
	int port;
};

struct redis_client {
	redisContext *c;
	char sha[48];
	unsigned long id, n;
};

static redisContext *dial(const struct redis_target *r)
{
	struct timeval tv = { 5, 0 };
	redisContext *c = redisConnectWithTimeout("127.0.0.1", r->port, tv);
	if (c != NULL && c->err) {
		redisFree(c);
		return NULL;
	}
	return c;
}

static void *client_open(struct bench_target *t)
{
	static unsigned long ids;
	struct redis_client *k = calloc(1, sizeof *k);
	if (k == NULL || (k->c = dial(t->priv)) == NULL) {
		free(k);
		return NULL;
	}
	redisReply *rep = redisCommand(k->c, "SCRIPT LOAD %s", release_lua);
	if (rep != NULL && rep->type == REDIS_REPLY_STRING)
		snprintf(k->sha, sizeof k->sha, "%s", rep->str);
	freeReplyObject(rep);
	k->id = __atomic_add_fetch(&ids, 1, __ATOMIC_RELAXED);
	if (k->sha[0] == '\0') {
		redisFree(k->c);
		free(k);
		return NULL;
	}
	return k;
}

static void client_close(void *p)
{
	struct redis_client *k = p;
	if (k != NULL)
		redisFree(k->c);
	free(k);
}

/* The token is the value: client id and a counter. */
static int lock(void *p, const char *name, uint32_t wait_ms, uint64_t *token)
{
	struct redis_client *k = p;
	const uint64_t until = bench_now_ns() + (uint64_t)wait_ms * 1000000u;
	for (;;) {
		const uint64_t tok = (uint64_t)k->id << 40 | ++k->n;
		redisReply *rep = redisCommand(k->c, "SET %s %llu NX PX %d", name,
					       (unsigned long long)tok, TTL_MS);
		const bool ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
		const bool fail = rep == NULL || rep->type == REDIS_REPLY_ERROR;
		freeReplyObject(rep);
		if (ok) {
			*token = tok;
			return 0;
		}
		if (fail || bench_now_ns() >= until)
			return -1;
		bench_sleep_ms(1); /* no queue in Redis: poll */
	}
}

static int unlock(void *p, const char *name, uint64_t token)
{
	struct redis_client *k = p;
	redisReply *rep = redisCommand(k->c, "EVALSHA %s 1 %s %llu", k->sha, name,
				       (unsigned long long)token);
	const int rc = rep != NULL && rep->type == REDIS_REPLY_INTEGER && rep->integer == 1 ? 0 : -1;
	freeReplyObject(rep);
	return rc;
}

static int start(struct bench_target *t, int n)
{
	struct redis_target *r = t->priv;
	(void)n; /* one node: Redis replication is asynchronous */
	bench_rm_rf(r->dir);
	if (bench_mkdir_p(r->dir) != 0)
		return -1;
	char port[16], log[400];
	snprintf(port, sizeof port, "%d", r->port);
	snprintf(log, sizeof log, "%s/redis.log", r->dir);
	char *argv[] = { "/usr/bin/redis-server", "--bind", "127.0.0.1", "--port", port,
			 "--dir", r->dir, "--appendonly", "yes", "--appendfsync", "always",
			 "--save", "", "--protected-mode", "no", "--daemonize", "no", NULL };
	t->pid[0] = bench_spawn(argv, log);
	t->n = 1;
	for (int tries = 0; tries < 100; tries++) {
		redisContext *c = dial(r);
		redisReply *rep = c != NULL ? redisCommand(c, "PING") : NULL;
		const bool ok = rep != NULL && rep->type == REDIS_REPLY_STATUS;
		freeReplyObject(rep);
		if (c != NULL)
			redisFree(c);
		if (ok)
			return 0;
		bench_sleep_ms(100);
	}
	return -1;
}

static void stop(struct bench_target *t)
{
	bench_stop_pid(t->pid[0]);
	t->pid[0] = 0;
	t->n = 0;
}

struct bench_target *bench_redis(const char *build, int port)
{
	static const char *bins[] = { "/usr/bin/redis-server", NULL };
	struct bench_target *t = calloc(1, sizeof *t);
	struct redis_target *r = calloc(1, sizeof *r);
	if (t == NULL || r == NULL)
		return NULL;
	snprintf(r->dir, sizeof r->dir, "%s/bench/run/redis", build);
	r->port = port;
	*t = (struct bench_target){ .name = "redis", .start = start, .stop = stop,
				    .client_open = client_open, .client_close = client_close,
				    .lock = lock, .unlock = unlock, .binaries = bins,
				    .one_node = true, .priv = r,
				    .handicap = "single node (replication is asynchronous), plain TCP, "
						"contended waiters poll every 1 ms" };
	return t;
}
