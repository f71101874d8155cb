"""metrics_test.py BUILD - the daemon's Prometheus metrics (docs/metrics.md).

Three real edgelockd over TLS on loopback, each with --metrics on a free
port; through the client protocol a session, three locks acquired, one
released and a release with a wrong token refused; then every node is
scraped with urllib and its text parsed: one leader, one term, the leader's
locks and sessions (and STATUS's counts after each step), applied indexes equal, the refused release counted
stale, the storage histogram cumulative and non-empty, the Content-Type,
404 for another path, and a bad [node] metrics named with its line by
--check-config. Every process is started and stopped by PID (elcluster.py).

Prints "ok NAME" / "FAIL NAME: why" per check and "N passed, N failed".
"""
import os
import random
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elcluster import Cluster, free_ports, Checks, eventually  # noqa: E402

check = Checks()
SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$')




def parse(text):
    """{(name, labels): value} and {name: type}; raises on a malformed line."""
    samples, types = {}, {}
    for line in text.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, typ = line.split(" ", 3)
            types[name] = typ
        elif line.startswith("#") or not line:
            continue
        else:
            m = SAMPLE.match(line)
            if m is None:
                raise ValueError("bad sample line %r" % line)
            samples[(m.group(1), m.group(2) or "")] = float(m.group(3))
    return samples, types


def scrape(url):
    with urllib.request.urlopen(url, timeout=3) as r:
        return r.headers.get("Content-Type", ""), r.read().decode()


def val(samples, name, labels=""):
    return samples.get(("edgelock_" + name, labels))


def scrape_all(urls):
    out = {}
    for i, url in urls.items():
        ctype, text = scrape(url)
        out[i] = (ctype, text, parse(text)[0])
    return out


def settled(res, leader):
    s = res[leader][2]
    applied = {val(r[2], "applied_index") for r in res.values()}
    return val(s, "locks") == 2 and len(applied) == 1


def status_counts(c, leader, locks, after):
    """STATUS's lock and session counts follow the table (the daemon keeps
    them between applied entries: they must not stay behind them)."""
    st = {}

    def counted():
        st.update(c.status(leader))
        return st.get(42) == locks and st.get(41, 0) >= 1
    check("STATUS after %s: %d locks, a session" % (after, locks), eventually(counted, 5.0),
          repr({k: st.get(k) for k in (41, 42)}))


def do_work(c, leader):
    st = c.status(leader)
    check("STATUS of the new cluster: no lock, no session", st.get(42, 0) == 0 and
          st.get(41, 0) == 0, repr(st))
    conn = c.connect(leader)
    try:
        rep = conn.call({1: 1, 9: 30000, 13: "metrics", 14: random.getrandbits(64)})
        s = rep.get(4, 0)
        check("work: session opened", s > 0, repr(rep))
        tokens = []
        for seq, name in ((1, "m-a"), (2, "m-b"), (3, "m-c")):
            rep = conn.call({1: 4, 4: s, 5: seq, 6: name})
            tokens.append(rep.get(11, 0))
        check("work: three locks acquired", all(t > 0 for t in tokens), repr(tokens))
        status_counts(c, leader, 3, "three locks acquired")
        rep = conn.call({1: 5, 4: s, 5: 4, 6: "m-c", 11: tokens[2]})
        check("work: one released", rep.get(3, 0) == 0, repr(rep))
        rep = conn.call({1: 5, 4: s, 5: 5, 6: "m-a", 11: tokens[0] + 1000})
        check("work: a release with a wrong token is refused ESTALE", rep.get(3) == -6, repr(rep))
        status_counts(c, leader, 2, "one released")
    finally:
        conn.close()


def check_histogram(s, types, name, who):
    full = "edgelock_" + name
    buckets = sorted(((float(lab[5:-2]) if "+Inf" not in lab else float("inf")), v)
                     for (n, lab), v in s.items() if n == full + "_bucket")
    counts = [v for _, v in buckets]
    check("%s %s: a histogram with buckets up to +Inf" % (who, name),
          types.get(full) == "histogram" and len(buckets) >= 2 and buckets[-1][0] == float("inf"),
          repr(buckets))
    check("%s %s: buckets cumulative, +Inf == count > 0" % (who, name),
          counts == sorted(counts) and counts[-1] == s.get((full + "_count", "")) and
          counts[-1] > 0 and s.get((full + "_sum", ""), -1) >= 0, repr(buckets))


def test_scrape(c, urls, leader):
    deadline = time.time() + 5
    res = scrape_all(urls)
    while not settled(res, leader) and time.time() < deadline:
        time.sleep(0.2)
        res = scrape_all(urls)
    for i, (ctype, _, _) in res.items():
        check("node%d: Content-Type text/plain; version=0.0.4" % i,
              ctype.startswith("text/plain; version=0.0.4"), ctype)
    roles = {i: [lab for (n, lab), v in r[2].items() if n == "edgelock_role" and v == 1]
             for i, r in res.items()}
    leaders = [i for i, labs in roles.items() if labs == ['{role="leader"}']]
    check("exactly one node reports role leader, the one STATUS names", leaders == [leader],
          repr(roles))
    terms = {val(r[2], "term") for r in res.values()}
    check("every node reports the same term", len(terms) == 1 and None not in terms, repr(terms))
    ids = {val(r[2], "leader_id") for r in res.values()}
    check("every node names the leader", ids == {float(leader)}, repr(ids))
    s = res[leader][2]
    check("leader: locks == 2", val(s, "locks") == 2, repr(val(s, "locks")))
    check("leader: holds == 2", val(s, "holds") == 2, repr(val(s, "holds")))
    check("leader: sessions >= 1", (val(s, "sessions") or 0) >= 1, repr(val(s, "sessions")))
    applied = {i: val(r[2], "applied_index") for i, r in res.items()}
    check("applied index > 0 and equal on every node",
          len(set(applied.values())) == 1 and min(applied.values()) > 0, repr(applied))
    check("leader: commit index >= applied index",
          val(s, "commit_index") >= val(s, "applied_index"))
    check("leader: window use <= window size",
          0 < val(s, "log_window_entries") <= val(s, "log_window_size_entries"))
    ups = {lab: v for (n, lab), v in s.items() if n == "edgelock_peer_up"}
    check("leader: two peers, both up", len(ups) == 2 and all(v == 1 for v in ups.values()),
          repr(ups))
    rtts = {lab: v for (n, lab), v in s.items() if n == "edgelock_peer_rtt_seconds"}
    check("leader: a heartbeat round trip per peer, above 0 and below 1 s",
          len(rtts) == 2 and set(rtts) == set(ups) and all(0 < v < 1 for v in rtts.values()),
          repr(rtts))
    print("     peer round trips on loopback: %s" % rtts)
    check("leader: request latency observed (6 commands)",
          (val(s, "request_seconds_count") or 0) >= 6, repr(val(s, "request_seconds_count")))
    check("leader: stale_replies_total == 1", val(s, "stale_replies_total") == 1,
          repr(val(s, "stale_replies_total")))
    check("leader: client connections gauge present",
          val(s, "client_connections") is not None)
    for i, r in res.items():
        samples, types = parse(r[1])
        check_histogram(samples, types, "storage_persist_seconds", "node%d" % i)
        check("node%d: every sample has a TYPE" % i,
              all(re.sub(r"_(bucket|sum|count)$", "", n) in types or n in types
                  for n, _ in samples), "")


def test_not_found(urls):
    base = urls[1].rsplit("/", 1)[0]
    for path in ("/", "/other", "/metrics/x"):
        try:
            urllib.request.urlopen(base + path, timeout=3)
            code = 200
        except urllib.error.HTTPError as e:
            code = e.code
        check("GET %s: 404" % path, code == 404, repr(code))


def test_bad_config(c):
    bad = os.path.join(c.dir, "bad-metrics.conf")
    with open(c.config(1)) as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write(text.replace("[node]\n", "[node]\nmetrics = tcp://127.0.0.1/x\n", 1))
    out = subprocess.run([c.bin, "--check-config", bad], capture_output=True, text=True,
                         timeout=10)
    check("check-config: a bad [node] metrics is named with its line",
          out.returncode == 1 and "bad-metrics.conf:2: [node] metrics" in out.stderr, out.stderr)
    out = subprocess.run([c.bin, "--check-config", c.config(1), "--metrics", "http://x:0/m"],
                         capture_output=True, text=True, timeout=10)
    check("--metrics: port 0 refused", out.returncode == 1 and "metrics" in out.stderr,
          out.stderr)
    # on the node's own client or peer port: the start would fail to listen
    # (exit 2, restarted by the unit for ever); refused as a config error
    for key, port in (("client_addr", c.client_port[1]), ("peer_addr", c.peer_port[1])):
        for host in ("127.0.0.1", "localhost", "*"):
            url = "http://%s:%d/metrics" % (host, port)
            for how in ("--check-config", "-c"):
                out = subprocess.run([c.bin, how, c.config(1), "--metrics", url],
                                     capture_output=True, text=True, timeout=10)
                check("%s: [node] metrics %s on %s's port refused, both named (exit 1)"
                      % (how, url, key), out.returncode == 1 and
                      "[node] metrics %s and %s tls+tcp://127.0.0.1:%d are the same address "
                      "and port" % (url, key, port) in out.stderr, out.stderr)


def test_busy_port(c):
    """A metrics address already taken: the daemon does not start (exit 2)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(1)
    try:
        url = "http://127.0.0.1:%d/metrics" % sock.getsockname()[1]
        p = c.start(1, "--metrics", url)
        try:
            rc = p.wait(timeout=10)
        finally:
            c.stop(1)
    finally:
        sock.close()
    with open(c.log(1)) as f:
        log = f.read()
    check("a metrics address in use: exit 2, named in the log",
          rc == 2 and "[node] metrics " + url in log, "rc %r" % rc)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    random.seed(int(os.environ.get("SEED", "1")))
    c = Cluster(build, 3)
    ports = free_ports(3)
    urls = {i: "http://127.0.0.1:%d/metrics" % ports[i - 1] for i in (1, 2, 3)}
    try:
        for i in sorted(c.peer_port):
            c.start(i, "--bootstrap", "--metrics", urls[i])
        leader = c.wait_leader()
        for t in (lambda: do_work(c, leader), lambda: test_scrape(c, urls, leader),
                  lambda: test_not_found(urls), lambda: test_bad_config(c)):
            try:
                t()
            except Exception as e:  # a crashed step fails, the rest still run
                check("step", False, "raised %r" % (e,))
    finally:
        for i in sorted(c.procs):
            rc, _ = c.stop(i)
            check("node%d: SIGTERM exits 0" % i, rc == 0, repr(rc))
        try:
            test_busy_port(c)
        except Exception as e:
            check("busy port", False, "raised %r" % (e,))
        check.no_sanitizer_reports(c)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
