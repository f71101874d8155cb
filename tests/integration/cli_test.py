"""cli_test.py BUILD - the edgelock CLI (and so libedgelock) against three real
edgelockd processes over TLS on loopback, started and stopped by PID.

Checks: lock -- CMD runs with its token and releases; FIFO handoff between
waiting clients with rising tokens; shared holders overlap; try-lock on a
held lock says who holds it (exit 75); an election seen by observe;
concurrent `edgelock lock` processes incrementing one counter file lose no
increment; a SIGKILLed client's lock goes to a waiter after TTL + lock-delay;
the leader SIGKILLed while a client waits: the waiter is granted (failover
time printed); every daemon SIGSTOPed longer than the TTL while
`lock -- CMD` runs: CMD is dead before the CLI's local lease deadline and the
CLI exits 76; the whole cluster SIGKILLed and restarted: the held lock is
still there and the next token is higher; --help of every command exits 0.

Ends with "N passed, N failed". Run with /usr/bin/python3 (python3-cbor2).
"""
import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "daemon"))
from elcluster import Cluster  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
CLI = os.path.join(BUILD, "bin", "edgelock")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + what, flush=True)
    else:
        failed += 1
        print("FAIL " + what, flush=True)


class Env:
    def __init__(self, cluster):
        self.c = cluster
        eps = ",".join(cluster.addr(i) for i in sorted(cluster.client_port))
        certs = cluster.certs
        self.env = dict(os.environ, EDGELOCK_ENDPOINTS=eps, EDGELOCK_CA=certs + "/ca.pem",
                        EDGELOCK_CERT=certs + "/client.pem")
        self.tmp = cluster.dir

    def run(self, *args, timeout=60):
        return subprocess.run([CLI] + list(args), env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def start(self, *args):
        # Own process group: a test may kill the CLI and its command together.
        return subprocess.Popen([CLI] + list(args), env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    def path(self, name):
        return os.path.join(self.tmp, name)


def log_cmd(path, tag, seconds):
    """A shell command that appends 'start|end TAG TOKEN TIME' around a sleep."""
    return ["sh", "-c", 'echo "start %s $EDGELOCK_TOKEN $(date +%%s.%%N)" >> %s; sleep %s; '
            'echo "end %s $EDGELOCK_TOKEN $(date +%%s.%%N)" >> %s' % (tag, path, seconds, tag, path)]


def read_log(path):
    rows = []
    with open(path) as f:
        for line in f:
            kind, tag, token, t = line.split()
            rows.append((kind, tag, int(token), float(t)))
    return rows


def test_basics(e):
    r = e.run("lock", "demo", "--", "sh", "-c", 'echo "$EDGELOCK_LOCK $EDGELOCK_TOKEN"; exit 3')
    name, token = (r.stdout.split() + ["", "0"])[:2]
    check(r.returncode == 3 and name == "demo" and int(token) > 0,
          "lock -- CMD: CMD runs with EDGELOCK_LOCK/TOKEN, the CLI exits with its status (%d)"
          % r.returncode)
    r2 = e.run("lock", "demo", "--", "sh", "-c", 'echo $EDGELOCK_TOKEN')
    check(r2.returncode == 0 and int(r2.stdout.split()[0]) > int(token),
          "the lock was released after CMD; the next holder's token is higher")
    holder = e.start("lock", "held", "--", "sleep", "3")
    time.sleep(1.0)
    r = e.run("lock", "held", "--wait", "0", "--", "true")
    check(r.returncode == 75 and "held by" in r.stderr and "token" in r.stderr,
          "try-lock on a held lock: exit 75 and who holds it (%r)" % r.stderr.strip())
    r = e.run("locks", "--json")
    check(r.returncode == 0 and '"name":"held"' in r.stdout, "locks --json lists the held lock")
    r = e.run("status", "--json")
    check(r.returncode == 0 and r.stdout.count('"role":"leader"') == 1, "status: one leader")
    holder.wait(timeout=30)


def test_fifo_handoff(e):
    log = e.path("fifo.log")
    first = e.start("lock", "fifo", "--", *log_cmd(log, "A", 1.5))
    time.sleep(0.7)
    waiters = []
    for tag in "BCD":
        waiters.append(e.start("lock", "fifo", "--", *log_cmd(log, tag, 0.2)))
        time.sleep(0.3)
    rcs = [p.wait(timeout=60) for p in [first] + waiters]
    rows = read_log(log)
    starts = [r for r in rows if r[0] == "start"]
    order = "".join(r[1] for r in starts)
    tokens = [r[2] for r in starts]
    overlap = any(rows[i][0] == "start" and rows[i + 1][0] == "start" for i in range(len(rows) - 1))
    check(rcs == [0, 0, 0, 0] and order == "ABCD", "FIFO handoff: granted in arrival order (%s)" % order)
    check(tokens == sorted(tokens) and len(set(tokens)) == 4, "tokens rise with each grant %s" % tokens)
    check(not overlap, "no two holders of the exclusive lock at once")


def test_shared(e):
    log = e.path("shared.log")
    ps = [e.start("lock", "sh", "--shared", "--", *log_cmd(log, t, 1.0)) for t in "XY"]
    rcs = [p.wait(timeout=60) for p in ps]
    rows = read_log(log)
    check(rcs == [0, 0] and [r[0] for r in rows[:2]] == ["start", "start"],
          "two shared holders hold the lock at once")


def test_counter(e):
    path = e.path("counter")
    with open(path, "w") as f:
        f.write("0\n")
    script = 'n=$(cat %s); sleep 0.05; echo $((n + 1)) > %s' % (path, path)
    ps = [e.start("lock", "counter", "--", "sh", "-c", script) for _ in range(8)]
    rcs = [p.wait(timeout=120) for p in ps]
    with open(path) as f:
        value = int(f.read())
    check(rcs == [0] * 8 and value == 8, "8 concurrent `edgelock lock` increments: counter = %d" % value)


def test_election_observe(e):
    obs = e.start("observe", "job")
    time.sleep(1.0)
    r = e.run("elect", "job", "node-a", "--", "sleep", "1")
    time.sleep(1.0)
    obs.send_signal(signal.SIGINT)
    out, _ = obs.communicate(timeout=20)
    check(r.returncode == 0 and "value node-a" in out and out.strip().endswith("free"),
          "elect with a value; observe printed the leader, its value, then free")


def test_killed_client(e):
    holder = e.start("lock", "k", "--ttl", "2s", "--lock-delay", "1s", "--", "sleep", "60")
    time.sleep(1.0)
    t0 = time.time()
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait()
    r = e.run("lock", "k", "--wait", "20s", "--", "true")
    waited = time.time() - t0
    check(r.returncode == 0 and waited >= 2.5,
          "a SIGKILLed client's lock went to a waiter after TTL + lock-delay (%.1f s)" % waited)


def test_leader_killed(cluster, e):
    holder = e.start("lock", "fo", "--", "sleep", "2")
    time.sleep(0.7)
    waiter = e.start("lock", "fo", "--wait", "60s", "--", "sh", "-c", "echo $EDGELOCK_TOKEN")
    time.sleep(0.5)
    leader = cluster.wait_leader()
    t0 = time.time()
    cluster.kill(leader)
    new = cluster.wait_leader(exclude=(leader,))
    failover = time.time() - t0
    out, err = waiter.communicate(timeout=90)
    holder.wait(timeout=60)
    print("  failover after SIGKILL of leader %d: node %d leads after %.0f ms"
          % (leader, new, failover * 1000), flush=True)
    check(waiter.returncode == 0 and out.strip().isdigit(),
          "leader SIGKILLed: a new leader is elected and the waiting client gets the lock (%s)"
          % err.strip())
    cluster.start(leader)


def test_cluster_stopped(cluster, e):
    beat = e.path("beats")
    cmd = "while true; do date +%s.%N >> " + beat + "; sleep 0.05; done"
    p = e.start("lock", "stopme", "--ttl", "3s", "--", "sh", "-c", cmd)
    time.sleep(1.5)
    t_stop = time.time()
    for i in list(cluster.procs):
        cluster.signal(i, signal.SIGSTOP)
    try:
        rc = p.wait(timeout=30)
        t_exit = time.time()
    finally:
        for i in list(cluster.procs):
            cluster.signal(i, signal.SIGCONT)
    with open(beat) as f:
        last = float(f.read().split()[-1])
    check(rc == 76, "all daemons stopped past the TTL: the CLI exits 76 (lock lost), got %d" % rc)
    check(last < t_stop + 3.0 and t_exit < t_stop + 3.5,
          "CMD was dead before the local lease deadline (last beat %.2f s after the stop)"
          % (last - t_stop))


def test_cluster_restart(cluster, e):
    holder = e.start("lock", "durable", "--ttl", "30s", "--", "sh", "-c",
                     "echo $EDGELOCK_TOKEN; sleep 8")
    time.sleep(1.5)
    for i in list(cluster.procs):
        cluster.kill(i)
    cluster.start_all()
    cluster.wait_leader(timeout=30)
    r = e.run("locks", "--json")
    check('"name":"durable"' in r.stdout and '"holders":1' in r.stdout,
          "after SIGKILL of the whole cluster and a restart, the held lock is still held")
    out, _ = holder.communicate(timeout=60)
    first = int(out.split()[0])
    r = e.run("lock", "durable", "--wait", "30s", "--", "sh", "-c", "echo $EDGELOCK_TOKEN")
    check(holder.returncode == 0 and r.returncode == 0 and int(r.stdout.split()[0]) > first,
          "the holder kept its lock through the restart; the next token is higher")


def test_open_retry(cluster):
    """A retried OPEN_SESSION (same nonce, as after a lost reply) returns the
    session the first attempt made, and makes no second one."""
    leader = cluster.wait_leader()
    conn = cluster.connect(leader)
    try:
        first = conn.call({1: 1, 9: 10000, 14: 0x5EED1234ABCD})
        again = conn.call({1: 1, 9: 10000, 14: 0x5EED1234ABCD})
        other = conn.call({1: 1, 9: 10000, 14: 0x5EED1234ABCE})
    finally:
        conn.close()
    check(first.get(4) and again.get(4) == first.get(4) and other.get(4) != first.get(4),
          "a retried open (same nonce) returns the same session (%s, %s); a new nonce, a new one"
          % (first.get(4), again.get(4)))


def test_help():
    env = dict(os.environ)
    ok = all(subprocess.run([CLI] + a + ["--help"], capture_output=True, env=env).returncode == 0
             for a in ([], ["lock"], ["elect"], ["observe"], ["status"], ["locks"], ["members"],
                       ["transfer-leader"]))
    bad = subprocess.run([CLI, "frobnicate"], capture_output=True, text=True)
    check(ok and bad.returncode == 64 and "unknown command" in bad.stderr,
          "--help on every command exits 0; an unknown command exits 64")
    nowhere = subprocess.run([CLI, "--config", "/nonexistent", "status"], capture_output=True,
                             text=True)
    check(nowhere.returncode == 78, "an unreadable config exits 78 (%s)" % nowhere.stderr.strip())


def main():
    test_help()
    cluster = Cluster(BUILD, 3, election_ms=600, heartbeat_ms=60)
    cluster.start_all(bootstrap=True)
    try:
        cluster.wait_leader()
        test_open_retry(cluster)
        e = Env(cluster)
        for t in (test_basics, test_fifo_handoff, test_shared, test_counter,
                  test_election_observe, test_killed_client):
            t(e)
        test_leader_killed(cluster, e)
        test_cluster_stopped(cluster, e)
        test_cluster_restart(cluster, e)
    finally:
        cluster.stop_all()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
