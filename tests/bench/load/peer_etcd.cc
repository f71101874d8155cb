/*
 * peer_etcd.cc - a three-node etcd cluster (Debian's etcd-server 3.4, as
 * shipped: fsync per write, heartbeat 100 ms, election 1000 ms) as a bench
 * target for `make bench-compare`, driven natively: gRPC over HTTP/2 with
 * C++ stubs generated at build time from etcd's own .proto files (Debian's
 * golang-etcd-server-dev; mk/bench.mk). The recipe is etcd's own, the one
 * clientv3's concurrency package and `etcdctl lock` use: a lease per client
 * (granted with the TTL, kept alive in the background on a LeaseKeepAlive
 * stream, as concurrency.Session does), then the v3lock service (Lock with
 * the lease, Unlock with the key it returned). Plain TCP, no TLS: that
 * handicaps edgelock. C++ only because gRPC's client is; the rest of the
 * bench is C and sees bench_etcd() only.
 */
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "etcd/etcdserver/api/v3lock/v3lockpb/v3lock.grpc.pb.h"
#include "etcd/etcdserver/etcdserverpb/rpc.grpc.pb.h"

#include "bench.h"

namespace {

using etcdserverpb::Lease;
using etcdserverpb::Maintenance;
using v3lockpb::Lock;

constexpr int TTL_S = 10;
constexpr uint64_t RETRY_MS = 10000; /* how long a call retries through a failover */
constexpr long CALL_MS = 5000;       /* one call's bound (etcdctl's --command-timeout); Lock: the wait */

struct etcd_target {
	std::string dir;
	int port = 0; /* clients PORT+1..3, peers PORT+11..13 */
	int n = 0;
	std::mutex mu; /* the leases kept alive, quit */
	std::condition_variable quit_cv;
	std::vector<int64_t> leases;
	std::thread keeper;
	bool quit = false;
};

/* A channel of its own to one node. Each bench client thread stands for one
 * client process (a Go program with one clientv3 client, hence one HTTP/2
 * connection), as each ZooKeeper, Redis and edgelock client here has its own
 * connection: so one channel per client thread, and a local subchannel pool,
 * because gRPC would otherwise share one TCP connection among all channels
 * to the same address. */
std::shared_ptr<grpc::Channel> channel_to(const etcd_target *e, int node)
{
	grpc::ChannelArguments args;
	args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);
	return grpc::CreateCustomChannel("ipv4:127.0.0.1:" + std::to_string(e->port + node),
					 grpc::InsecureChannelCredentials(), args);
}

void bound(grpc::ClientContext *c, long ms)
{
	c->set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

bool says(const grpc::Status &s, const char *what)
{
	return s.error_message().find(what) != std::string::npos;
}

/* One client: a channel to one node, and its session (lease). Calls fail
 * fast (gRPC's default) when the node is down, and the client moves to the
 * next node, as clientv3's balancer moves to another endpoint. */
struct etcd_client {
	etcd_target *e;
	int node = 0;     /* 1..n, the endpoint in use */
	int64_t lease = 0; /* 0: none yet */
	std::string key;  /* the lock key of the last grant */
	std::shared_ptr<grpc::Channel> ch;
	std::unique_ptr<Lease::Stub> leases;
	std::unique_ptr<Lock::Stub> locks;

	etcd_client(etcd_target *t, int at) : e(t) { dial(at); }
	void dial(int at)
	{
		node = at;
		ch = channel_to(e, at);
		leases = Lease::NewStub(ch);
		locks = Lock::NewStub(ch);
	}
	/* Another node after a failed call (the one in use may be dead), on a
	 * new channel (no reconnect backoff carried over); a short pause so a
	 * dead cluster is not spun on. */
	void next_node()
	{
		dial(node % e->n + 1);
		bench_sleep_ms(5);
	}
};

/* ---- leases: grant, revoke, and the keep-alive thread ---------------------- */

void leases_add(etcd_target *e, int64_t id)
{
	std::lock_guard<std::mutex> g(e->mu);
	e->leases.push_back(id);
}

void leases_drop(etcd_target *e, int64_t id)
{
	std::lock_guard<std::mutex> g(e->mu);
	for (auto &l : e->leases)
		if (l == id) {
			l = e->leases.back();
			e->leases.pop_back();
			break;
		}
}

/* A new lease for k (retried through a failover); registered for keep-alive. */
int grant(etcd_client *k)
{
	const uint64_t until = bench_now_ns() + RETRY_MS * 1000000u;
	for (;;) {
		etcdserverpb::LeaseGrantRequest q;
		etcdserverpb::LeaseGrantResponse r;
		grpc::ClientContext c;
		q.set_ttl(TTL_S);
		bound(&c, CALL_MS);
		if (k->leases->LeaseGrant(&c, q, &r).ok() && r.id() != 0) {
			k->lease = r.id();
			leases_add(k->e, k->lease);
			return 0;
		}
		if (bench_now_ns() >= until)
			return -1;
		k->next_node();
	}
}

void revoke(etcd_client *k)
{
	if (k->lease == 0)
		return;
	leases_drop(k->e, k->lease);
	for (int tries = 0; tries < 3; tries++) {
		etcdserverpb::LeaseRevokeRequest q;
		etcdserverpb::LeaseRevokeResponse r;
		grpc::ClientContext c;
		q.set_id(k->lease);
		bound(&c, CALL_MS);
		const grpc::Status s = k->leases->LeaseRevoke(&c, q, &r);
		if (s.ok() || says(s, "lease not found"))
			break;
		k->next_node();
	}
	k->lease = 0;
}

/* The keep-alive stream to one node (what clientv3's lessor keeps open): the
 * responses are drained by a thread of their own, which marks the stream
 * broken when it ends (node killed, or a follower's forward to a dead leader
 * timed out). */
struct keepalive_stream {
	std::shared_ptr<grpc::Channel> ch;
	std::unique_ptr<Lease::Stub> stub;
	grpc::ClientContext ctx;
	std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
						 etcdserverpb::LeaseKeepAliveResponse>> s;
	std::atomic<bool> broken{ false };
	std::thread reader;

	keepalive_stream(const etcd_target *e, int node)
		: ch(channel_to(e, node)), stub(Lease::NewStub(ch)), s(stub->LeaseKeepAlive(&ctx))
	{
		reader = std::thread([this] {
			etcdserverpb::LeaseKeepAliveResponse r;
			while (s->Read(&r)) {
			}
			broken = true;
		});
	}
	~keepalive_stream()
	{
		ctx.TryCancel();
		reader.join();
		s->Finish();
	}
	bool send(int64_t id)
	{
		etcdserverpb::LeaseKeepAliveRequest q;
		q.set_id(id);
		return !broken && s->Write(q);
	}
};

/* One keep-alive request for id on *ka, reopened on the next node while it
 * fails, at most once per node: false when no node took it. */
bool keep(const etcd_target *e, std::unique_ptr<keepalive_stream> *ka, int *node, int64_t id)
{
	for (int tries = 0; tries < e->n; tries++) {
		if (*ka == nullptr)
			*ka = std::make_unique<keepalive_stream>(e, *node);
		if ((*ka)->send(id))
			return true;
		ka->reset();
		*node = *node % e->n + 1;
		bench_sleep_ms(5);
	}
	return false;
}

/* Every TTL/3, one LeaseKeepAlive request per lease on the stream, over a
 * connection of its own; a round ends early when no node answers. */
void keeper_main(etcd_target *e)
{
	int node = 1;
	std::unique_ptr<keepalive_stream> ka;
	std::vector<int64_t> ids;
	std::unique_lock<std::mutex> g(e->mu);
	while (!e->quit) {
		ids = e->leases;
		g.unlock();
		for (const int64_t id : ids)
			if (!keep(e, &ka, &node, id))
				break;
		g.lock();
		e->quit_cv.wait_for(g, std::chrono::milliseconds(TTL_S * 1000 / 3),
				    [e] { return e->quit; });
	}
	g.unlock();
}

/* ---- the lock recipe ------------------------------------------------------- */

void *client_open(struct bench_target *t)
{
	static std::atomic<unsigned> spread{ 0 }; /* clients spread over the nodes */
	auto *e = static_cast<etcd_target *>(t->priv);
	auto *k = new etcd_client(e, static_cast<int>(spread++ % static_cast<unsigned>(e->n)) + 1);
	if (grant(k) != 0) {
		delete k;
		return nullptr;
	}
	return k;
}

void client_close(void *p)
{
	auto *k = static_cast<etcd_client *>(p);
	if (k != nullptr)
		revoke(k);
	delete k;
}

/* Lock waits in the server (its queue is the keys' create revisions); the
 * key it returns is ours to Unlock. A call cut by a failover is retried with
 * the same lease, which etcd's recipe makes idempotent (the key is
 * NAME/LEASE); an expired lease is replaced. The token: the grant's revision. */
int lock(void *p, const char *name, uint32_t wait_ms, uint64_t *token)
{
	auto *k = static_cast<etcd_client *>(p);
	const uint64_t wait = wait_ms > RETRY_MS ? wait_ms : RETRY_MS;
	const uint64_t until = bench_now_ns() + wait * 1000000u;
	for (;;) {
		if (k->lease == 0 && grant(k) != 0)
			return -1;
		v3lockpb::LockRequest q;
		v3lockpb::LockResponse r;
		grpc::ClientContext c;
		q.set_name(name);
		q.set_lease(k->lease);
		const uint64_t now = bench_now_ns();
		bound(&c, (now < until ? static_cast<long>((until - now) / 1000000u) : 0) + 1);
		const grpc::Status s = k->locks->Lock(&c, q, &r);
		if (s.ok()) {
			k->key = r.key();
			*token = static_cast<uint64_t>(r.header().revision());
			return 0;
		}
		if (says(s, "lease not found")) {
			leases_drop(k->e, k->lease);
			k->lease = 0;
		} else {
			k->next_node();
		}
		if (bench_now_ns() >= until)
			return -1;
	}
}

int unlock(void *p, const char *name, uint64_t token)
{
	auto *k = static_cast<etcd_client *>(p);
	(void)name, (void)token;
	const uint64_t until = bench_now_ns() + RETRY_MS * 1000000u;
	for (;;) {
		v3lockpb::UnlockRequest q;
		v3lockpb::UnlockResponse r;
		grpc::ClientContext c;
		q.set_key(k->key);
		bound(&c, CALL_MS);
		if (k->locks->Unlock(&c, q, &r).ok())
			return 0;
		if (bench_now_ns() >= until)
			return -1;
		k->next_node();
	}
}

/* ---- the cluster ----------------------------------------------------------- */

pid_t spawn_node(const etcd_target *e, int i)
{
	const std::string client_url = "http://127.0.0.1:" + std::to_string(e->port + i);
	const std::string peer_url = "http://127.0.0.1:" + std::to_string(e->port + 10 + i);
	std::string cluster;
	for (int m = 1; m <= e->n; m++)
		cluster += (m > 1 ? ",n" : "n") + std::to_string(m) + "=http://127.0.0.1:" +
			   std::to_string(e->port + 10 + m);
	const std::vector<std::string> args = {
		"/usr/bin/etcd", "--name", "n" + std::to_string(i),
		"--data-dir", e->dir + "/node" + std::to_string(i),
		"--listen-client-urls", client_url, "--advertise-client-urls", client_url,
		"--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
		"--initial-cluster", cluster, "--initial-cluster-token", "bench",
		"--initial-cluster-state", "new", "--logger", "zap", "--log-level", "warn"
	};
	std::vector<char *> argv;
	for (const auto &a : args)
		argv.push_back(const_cast<char *>(a.c_str())); /* exec's signature; not written */
	argv.push_back(nullptr);
	return bench_spawn(argv.data(), (e->dir + "/node" + std::to_string(i) + ".log").c_str());
}

/* Node i's Status: 1 it leads, 0 it serves, -1 no answer. */
int status(const etcd_target *e, int i)
{
	auto stub = Maintenance::NewStub(channel_to(e, i));
	etcdserverpb::StatusRequest q;
	etcdserverpb::StatusResponse r;
	grpc::ClientContext c;
	bound(&c, 1000);
	if (!stub->Status(&c, q, &r).ok())
		return -1;
	return r.header().member_id() == r.leader() ? 1 : 0;
}

int leader(struct bench_target *t)
{
	for (int i = 0; i < t->n; i++)
		if (t->pid[i] > 0 && status(static_cast<etcd_target *>(t->priv), i + 1) == 1)
			return i;
	return -1;
}

void stop(struct bench_target *t)
{
	auto *e = static_cast<etcd_target *>(t->priv);
	if (e->keeper.joinable()) {
		{
			std::lock_guard<std::mutex> g(e->mu);
			e->quit = true;
		}
		e->quit_cv.notify_all();
		e->keeper.join();
	}
	for (int i = 0; i < t->n; i++) {
		bench_stop_pid(t->pid[i]);
		t->pid[i] = 0;
	}
	t->n = 0;
	e->leases.clear();
}

int start(struct bench_target *t, int n)
{
	auto *e = static_cast<etcd_target *>(t->priv);
	bench_rm_rf(e->dir.c_str());
	if (bench_mkdir_p(e->dir.c_str()) != 0)
		return -1;
	e->n = t->n = n;
	for (int i = 0; i < n; i++)
		t->pid[i] = spawn_node(e, i + 1);
	e->quit = false;
	e->keeper = std::thread(keeper_main, e);
	for (int tries = 0; tries < 120; tries++) {
		void *k = leader(t) >= 0 ? client_open(t) : nullptr;
		uint64_t tok = 0;
		const bool ok = k != nullptr && lock(k, "bench/ready", 0, &tok) == 0 && unlock(k, "", tok) == 0;
		client_close(k);
		if (ok)
			return 0;
		bench_sleep_ms(500);
	}
	fprintf(stderr, "bench: etcd did not become ready (logs: %s)\n", e->dir.c_str());
	stop(t);
	return -1;
}

int restart(struct bench_target *t, int i)
{
	auto *e = static_cast<etcd_target *>(t->priv);
	t->pid[i] = spawn_node(e, i + 1);
	for (int tries = 0; tries < 600; tries++) {
		if (status(e, i + 1) >= 0)
			return 0;
		bench_sleep_ms(100);
	}
	return -1;
}

/* Idle sessions: leases the keep-alive thread renews, no lock taken. */
struct etcd_idle {
	etcd_client k;
	std::vector<int64_t> ids;
	explicit etcd_idle(etcd_target *e) : k(e, 1) {}
};

void *idle_open(struct bench_target *t, int n)
{
	auto *h = new etcd_idle(static_cast<etcd_target *>(t->priv));
	while (static_cast<int>(h->ids.size()) < n && grant(&h->k) == 0)
		h->ids.push_back(h->k.lease);
	if (static_cast<int>(h->ids.size()) < n)
		bench_note("etcd: only %zu of %d idle sessions opened", h->ids.size(), n);
	return h;
}

void idle_close(void *p)
{
	auto *h = static_cast<etcd_idle *>(p);
	for (const int64_t id : h->ids) {
		h->k.lease = id;
		revoke(&h->k);
	}
	delete h;
}

} // namespace

struct bench_target *bench_etcd(const char *build, int port)
{
	static const char *bins[] = { "/usr/bin/etcd", nullptr };
	auto *e = new etcd_target;
	e->dir = std::string(build) + "/bench/run/etcd";
	e->port = port;
	bench_note("etcd failover: a call a follower forwarded to the killed leader is lost; it "
		   "fails at etcd's 7 s request timeout (Unlock: the client's 5 s), then is retried "
		   "on the next node");
	auto *t = new bench_target{};
	t->name = "etcd";
	t->start = start, t->stop = stop;
	t->client_open = client_open, t->client_close = client_close;
	t->lock = lock, t->unlock = unlock;
	t->idle_sessions_open = idle_open, t->idle_sessions_close = idle_close;
	t->leader = leader, t->restart = restart;
	t->binaries = bins;
	t->priv = e;
	t->handicap = "plain TCP, no TLS (edgelock: TLS)";
	return t;
}
