/*
 * peer_zk.c - a three-node ZooKeeper ensemble (Debian's zookeeper, as
 * shipped: forceSync, tickTime 2000) as a bench target for
 * `make bench-compare`, through the C client (libzookeeper_mt) with the
 * lock recipe of the ZooKeeper docs: an EPHEMERAL|SEQUENCE child under the
 * lock's node; the lowest child holds; a waiter watches the child just
 * before its own and checks again when it goes. Plain TCP (the C client has
 * no TLS in Debian's build): that handicaps edgelock, not ZooKeeper.
 */
#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define THREADED /* the synchronous API of libzookeeper_mt */
#include <zookeeper/zookeeper.h>

#include "bench.h"

#define SESSION_MS 10000
#define ROOT "/bench-locks"

struct zk_target {
	char dir[320];
	int port; /* clients PORT+1..3, quorum PORT+11.., election PORT+21.. */
	char hosts[200];
};

struct zk_client {
	const struct zk_target *z;
	zhandle_t *zh;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool connected, changed;
	char path[256]; /* the child of the lock this client holds or waits with */
};

static void watcher(zhandle_t *zh, int type, int state, const char *path, void *ctx)
{
	struct zk_client *k = ctx;
	(void)zh, (void)path;
	pthread_mutex_lock(&k->mu);
	if (type == ZOO_SESSION_EVENT && state == ZOO_CONNECTED_STATE)
		k->connected = true;
	if (type == ZOO_DELETED_EVENT || type == ZOO_CHANGED_EVENT || type == ZOO_CHILD_EVENT)
		k->changed = true;
	pthread_cond_broadcast(&k->cv);
	pthread_mutex_unlock(&k->mu);
}

/* A new session on k (a new handle); 0 once connected. */
static int zk_connect(struct zk_client *k)
{
	k->connected = false;
	k->zh = zookeeper_init(k->z->hosts, watcher, SESSION_MS, NULL, k, 0);
	const uint64_t until = bench_now_ns() + 30000000000ull;
	pthread_mutex_lock(&k->mu);
	while (k->zh != NULL && !k->connected && bench_now_ns() < until) {
		pthread_mutex_unlock(&k->mu);
		bench_sleep_ms(10);
		pthread_mutex_lock(&k->mu);
	}
	const bool ok = k->connected;
	pthread_mutex_unlock(&k->mu);
	if (!ok && k->zh != NULL)
		zookeeper_close(k->zh);
	if (!ok)
		k->zh = NULL;
	return ok ? 0 : -1;
}

static struct zk_client *zk_open(const struct zk_target *z)
{
	struct zk_client *k = calloc(1, sizeof *k);
	if (k == NULL)
		return NULL;
	k->z = z;
	pthread_mutex_init(&k->mu, NULL);
	pthread_cond_init(&k->cv, NULL);
	if (zk_connect(k) != 0) {
		free(k);
		return NULL;
	}
	return k;
}

/* A session the ensemble expired (a failover that outlasted it) is dead for
 * good: the recipe starts a new one, as a real lock client must. */
static int zk_alive(struct zk_client *k)
{
	if (k->zh != NULL && zoo_state(k->zh) != ZOO_EXPIRED_SESSION_STATE)
		return 0;
	if (k->zh != NULL)
		zookeeper_close(k->zh);
	return zk_connect(k);
}

static void *client_open(struct bench_target *t)
{
	return zk_open(t->priv);
}

static void client_close(void *p)
{
	struct zk_client *k = p;
	if (k == NULL)
		return;
	if (k->zh != NULL)
		zookeeper_close(k->zh);
	pthread_cond_destroy(&k->cv);
	pthread_mutex_destroy(&k->mu);
	free(k);
}

/* ROOT/name with the slashes of name turned into '_' (one level). */
static void lock_dir(const char *name, char *out, size_t cap)
{
	snprintf(out, cap, ROOT "/%s", name);
	for (char *p = out + sizeof ROOT; *p; p++)
		if (*p == '/')
			*p = '_';
}

/* Children are "x<session>-<sequence>": ordered by the sequence (the last
 * ten digits), and a client finds its own among them by the prefix. */
static int cmp_seq(const void *a, const void *b)
{
	const char *x = *(char *const *)a, *y = *(char *const *)b;
	const size_t nx = strlen(x), ny = strlen(y);
	return strcmp(nx >= 10 ? x + nx - 10 : x, ny >= 10 ? y + ny - 10 : y);
}

/* Our place among the children: 0 = we hold it; else pred gets the one before. */
static int place(struct zk_client *k, const char *dir, const char *mine, char *pred, size_t cap)
{
	struct String_vector ch = { 0 };
	if (zoo_get_children(k->zh, dir, 0, &ch) != ZOK)
		return -1;
	qsort(ch.data, (size_t)ch.count, sizeof *ch.data, cmp_seq);
	int at = -1;
	for (int i = 0; i < ch.count; i++)
		if (strcmp(ch.data[i], mine) == 0)
			at = i;
	if (at > 0)
		snprintf(pred, cap, "%s/%s", dir, ch.data[at - 1]);
	deallocate_String_vector(&ch);
	return at;
}

/* A create whose reply was lost (connection loss in a failover) may have
 * left a child of ours that would block us: the recipe's guard, by prefix. */
static void drop_stale(struct zk_client *k, const char *dir, const char *prefix)
{
	struct String_vector ch = { 0 };
	if (zoo_get_children(k->zh, dir, 0, &ch) != ZOK)
		return;
	for (int i = 0; i < ch.count; i++)
		if (strncmp(ch.data[i], prefix, strlen(prefix)) == 0) {
			char path[300];
			snprintf(path, sizeof path, "%s/%s", dir, ch.data[i]);
			zoo_delete(k->zh, path, -1);
		}
	deallocate_String_vector(&ch);
}

/* Wait until the child before ours goes (or the deadline). */
static void wait_gone(struct zk_client *k, const char *pred, uint64_t until)
{
	pthread_mutex_lock(&k->mu);
	k->changed = false;
	pthread_mutex_unlock(&k->mu);
	struct Stat st;
	if (zoo_wexists(k->zh, pred, watcher, k, &st) != ZOK)
		return; /* gone already: look again */
	pthread_mutex_lock(&k->mu);
	while (!k->changed && bench_now_ns() < until) { /* the watcher's thread sets it */
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&k->cv, &k->mu, &ts);
	}
	pthread_mutex_unlock(&k->mu);
}

static int lock(void *p, const char *name, uint32_t wait_ms, uint64_t *token)
{
	struct zk_client *k = p;
	char dir[200], pred[300], prefix[24];
	if (zk_alive(k) != 0)
		return -1;
	lock_dir(name, dir, sizeof dir);
	snprintf(prefix, sizeof prefix, "x%016llx-",
		 (unsigned long long)zoo_client_id(k->zh)->client_id);
	char child[sizeof dir + sizeof prefix + 2];
	snprintf(child, sizeof child, "%s/%s", dir, prefix);
	int rc = zoo_create(k->zh, child, "", 0, &ZOO_OPEN_ACL_UNSAFE, ZOO_EPHEMERAL | ZOO_SEQUENCE,
			    k->path, sizeof k->path);
	if (rc == ZNONODE) { /* the lock's node, once */
		zoo_create(k->zh, dir, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
		rc = zoo_create(k->zh, child, "", 0, &ZOO_OPEN_ACL_UNSAFE,
				ZOO_EPHEMERAL | ZOO_SEQUENCE, k->path, sizeof k->path);
	}
	if (rc != ZOK) {
		drop_stale(k, dir, prefix);
		return -1;
	}
	const char *mine = strrchr(k->path, '/') + 1;
	*token = strtoull(mine + strlen(prefix), NULL, 10);
	const uint64_t until = bench_now_ns() + (uint64_t)wait_ms * 1000000u;
	for (;;) {
		const int at = place(k, dir, mine, pred, sizeof pred);
		if (at == 0)
			return 0;
		if (at < 0 || bench_now_ns() >= until)
			break;
		wait_gone(k, pred, until);
	}
	drop_stale(k, dir, prefix);
	return -1;
}

static int unlock(void *p, const char *name, uint64_t token)
{
	struct zk_client *k = p;
	(void)name, (void)token;
	return k->zh != NULL && zoo_delete(k->zh, k->path, -1) == ZOK ? 0 : -1;
}

static int write_config(const struct zk_target *z, int i, int n)
{
	char path[400];
	snprintf(path, sizeof path, "%s/node%d/myid", z->dir, i);
	FILE *f = fopen(path, "w");
	if (f == NULL)
		return -1;
	fprintf(f, "%d\n", i);
	fclose(f);
	snprintf(path, sizeof path, "%s/node%d.cfg", z->dir, i);
	if ((f = fopen(path, "w")) == NULL)
		return -1;
	fprintf(f, "tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=%s/node%d\n"
		   "clientPort=%d\nclientPortAddress=127.0.0.1\nadmin.enableServer=false\n"
		   "4lw.commands.whitelist=srvr\nmaxClientCnxns=0\n",
		z->dir, i, z->port + i);
	for (int m = 1; n > 1 && m <= n; m++)
		fprintf(f, "server.%d=127.0.0.1:%d:%d\n", m, z->port + 10 + m, z->port + 20 + m);
	return fclose(f);
}

static pid_t spawn_node(const struct zk_target *z, int i)
{
	char cfg[400], log[400], logdir[360];
	snprintf(cfg, sizeof cfg, "%s/node%d.cfg", z->dir, i);
	snprintf(log, sizeof log, "%s/node%d.log", z->dir, i);
	snprintf(logdir, sizeof logdir, "-Dzookeeper.log.dir=%s", z->dir);
	char *argv[] = { "/usr/bin/java", logdir, "-Dzookeeper.root.logger=INFO,CONSOLE",
			 "-cp", "/etc/zookeeper/conf:/usr/share/java/zookeeper.jar",
			 "org.apache.zookeeper.server.quorum.QuorumPeerMain", cfg, NULL };
	return bench_spawn(argv, log);
}

/* "srvr" (a four-letter word) to node i: 1 leader, 0 serving, -1 not. */
static int srvr(const struct zk_target *z, int i)
{
	const int fd = socket(AF_INET, SOCK_STREAM, 0);
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)(z->port + i)) };
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	char buf[1024] = "";
	size_t got = 0;
	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    write(fd, "srvr", 4) == 4) {
		ssize_t r;
		while (got + 1 < sizeof buf && (r = read(fd, buf + got, sizeof buf - 1 - got)) > 0)
			got += (size_t)r;
	}
	if (fd >= 0)
		close(fd);
	buf[got] = '\0';
	if (strstr(buf, "Mode: leader") || strstr(buf, "Mode: standalone"))
		return 1;
	return strstr(buf, "Mode: follower") ? 0 : -1;
}

static int leader(struct bench_target *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->pid[i] > 0 && srvr(t->priv, i + 1) == 1)
			return i;
	return -1;
}

static int start(struct bench_target *t, int n)
{
	struct zk_target *z = t->priv;
	bench_rm_rf(z->dir);
	z->hosts[0] = '\0';
	for (int i = 1; i <= n; i++) {
		char d[400];
		snprintf(d, sizeof d, "%s/node%d", z->dir, i);
		if (bench_mkdir_p(d) != 0 || write_config(z, i, n) != 0)
			return -1;
		snprintf(z->hosts + strlen(z->hosts), sizeof z->hosts - strlen(z->hosts), "%s127.0.0.1:%d",
			 i > 1 ? "," : "", z->port + i);
	}
	for (int i = 0; i < n; i++)
		t->pid[i] = spawn_node(z, i + 1);
	t->n = n;
	for (int tries = 0; tries < 120; tries++) {
		struct zk_client *k = leader(t) >= 0 ? zk_open(z) : NULL;
		if (k != NULL) {
			zoo_create(k->zh, ROOT, "", 0, &ZOO_OPEN_ACL_UNSAFE, 0, NULL, 0);
			uint64_t tok;
			const bool ok = lock(k, "bench/ready", 0, &tok) == 0 && unlock(k, "", tok) == 0;
			client_close(k);
			if (ok)
				return 0;
		}
		bench_sleep_ms(500);
	}
	fprintf(stderr, "bench: zookeeper did not become ready (logs: %s)\n", z->dir);
	return -1;
}

static void stop(struct bench_target *t)
{
	for (int i = 0; i < t->n; i++) {
		bench_stop_pid(t->pid[i]);
		t->pid[i] = 0;
	}
	t->n = 0;
}

static int restart(struct bench_target *t, int i)
{
	t->pid[i] = spawn_node(t->priv, i + 1);
	for (int tries = 0; tries < 600; tries++) {
		if (srvr(t->priv, i + 1) >= 0)
			return 0;
		bench_sleep_ms(100);
	}
	return -1;
}

struct zk_idle {
	int n;
	struct zk_client **k;
};

static void *idle_open(struct bench_target *t, int n)
{
	struct zk_idle *h = calloc(1, sizeof *h);
	if (h == NULL || (h->k = calloc((size_t)n, sizeof *h->k)) == NULL)
		return h;
	while (h->n < n && (h->k[h->n] = zk_open(t->priv)) != NULL)
		h->n++;
	if (h->n < n)
		bench_note("zookeeper: only %d of %d idle sessions opened", h->n, n);
	return h;
}

static void idle_close(void *p)
{
	struct zk_idle *h = p;
	for (int i = 0; h != NULL && i < h->n; i++)
		client_close(h->k[i]);
	if (h != NULL)
		free(h->k);
	free(h);
}

struct bench_target *bench_zookeeper(const char *build, int port)
{
	static const char *bins[] = { "/usr/share/java/zookeeper.jar", NULL };
	struct bench_target *t = calloc(1, sizeof *t);
	struct zk_target *z = calloc(1, sizeof *z);
	if (t == NULL || z == NULL)
		return NULL;
	zoo_set_debug_level(ZOO_LOG_LEVEL_ERROR);
	snprintf(z->dir, sizeof z->dir, "%s/bench/run/zookeeper", build);
	/* The C client's errors (hundreds a failover round: every session
	 * redialing the killed server) go to a file of their own, not between
	 * the tables (an outside tester counted 3,737 lines in one run). */
	char path[400];
	snprintf(path, sizeof path, "%s/bench/zookeeper-client.log", build);
	FILE *zlog = fopen(path, "a");
	if (zlog != NULL)
		zoo_set_log_stream(zlog);
	z->port = port;
	*t = (struct bench_target){ .name = "zookeeper", .start = start, .stop = stop,
				    .client_open = client_open, .client_close = client_close,
				    .lock = lock, .unlock = unlock,
				    .idle_sessions_open = idle_open, .idle_sessions_close = idle_close,
				    .leader = leader, .restart = restart, .binaries = bins, .priv = z,
				    .handicap = "plain TCP (edgelock: TLS); one session per client "
						"(each with 2 threads in the C client)" };
	return t;
}
