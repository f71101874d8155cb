"""metrics_test.py BUILD - the daemon's Prometheus metrics (docs/metrics.md).

Three real edgelockd over TLS on loopback, each with --metrics on a free
port; through the client protocol a session, three locks acquired, one
released and a release with a wrong token refused; then every node is
scraped with urllib and its text parsed: one leader, one term, the leader's
locks and sessions (and STATUS's counts after each step), applied indexes equal, the refused release counted
stale, the storage histogram cumulative and non-empty, the Content-Type,
404 for another path, 431 for a request head over 2 KiB, a bad [node]
metrics named with its line by --check-config, and one on the port of
client_addr or peer_addr refused, an IPv6 host in brackets taken
(node 2 serves on [::1], node 1 then on [::], answering on 127.0.0.1 and
::1) and one without them refused saying so, and edgelock_build_info, --version and
the first log line naming this tree's source revision. Then what an operator's alerts rest on:
edgelock_loop_turn_age_seconds small on a healthy node and growing while a
follower's loop thread alone is stopped (ptrace; SIGSTOP would stop the
HTTP thread too) with its other values frozen; 20 TCP connections that
never start TLS counted in edgelock_client_connections and
edgelock_client_handshakes; connections refused past the metrics port's cap
all logged within about 10 s, not with the next refusal. Every process is
started and stopped by PID (elcluster.py).

Prints "ok NAME" / "FAIL NAME: why" per check and "N passed, N failed".
"""
import ctypes
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
from ops_test import closed_by_peer  # noqa: E402

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
    types = parse(res[leader][1])[1]
    check("leader: client_queued_bytes (a gauge) and client_evictions_total (a counter), "
          "0 with clients that read",
          val(s, "client_queued_bytes") == 0 and val(s, "client_evictions_total") == 0 and
          types.get("edgelock_client_queued_bytes") == "gauge" and
          types.get("edgelock_client_evictions_total") == "counter",
          repr((val(s, "client_queued_bytes"), val(s, "client_evictions_total"))))
    ages = {i: val(r[2], "loop_turn_age_seconds") for i, r in res.items()}
    check("every node: edgelock_loop_turn_age_seconds, a gauge, under 1 s when healthy",
          all(a is not None and 0 <= a < 1.0 for a in ages.values()) and
          parse(res[leader][1])[1].get("edgelock_loop_turn_age_seconds") == "gauge", repr(ages))
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


# ptrace(2): stop one thread of a process (the node's loop) and no other.
PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT, WALL = 17, 0x4206, 0x4207, 0x40000000


def ptrace(req, tid):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    if libc.ptrace(req, tid, None, None) != 0:
        raise OSError(ctypes.get_errno(), "ptrace %#x of %d" % (req, tid))


def test_stalled_loop(c, urls, leader):
    """A loop stuck in a turn (as in a fsync hanging for seconds): the
    scrape still answers 200 with the values of before, and the turn age
    the HTTP thread adds grows. The loop is edgelockd's main thread (its
    tid is the pid); PTRACE_INTERRUPT stops that one thread alone."""
    follower = next(i for i in sorted(urls) if i != leader)
    tid = c.procs[follower].pid
    before = parse(scrape(urls[follower])[1])[0]
    try:
        ptrace(PTRACE_SEIZE, tid)
    except OSError as e:  # no CAP_SYS_PTRACE, or Yama's ptrace_scope 2 or 3
        print("skip the stopped loop (the gauge is checked above): %s" % e)
        return
    try:
        ptrace(PTRACE_INTERRUPT, tid)
        os.waitpid(tid, WALL)
        time.sleep(0.5)
        first = parse(scrape(urls[follower])[1])[0]
        conn = c.connect(leader)  # the cluster commits on: the follower's values do not follow
        try:
            conn.call({1: 1, 9: 30000, 13: "stalled", 14: random.getrandbits(64)})
        finally:
            conn.close()
        time.sleep(1.5)
        second = parse(scrape(urls[follower])[1])[0]
    finally:
        ptrace(PTRACE_DETACH, tid)
    a1, a2 = val(first, "loop_turn_age_seconds"), val(second, "loop_turn_age_seconds")
    print("     turn age with the loop stopped: %s s, then %s s" % (a1, a2))
    check("a stopped loop: scrapes still answered, the turn age grows (>= 1.5 s)",
          a1 is not None and a2 is not None and a2 >= 1.5 and a2 > a1, "%r %r" % (a1, a2))
    check("a stopped loop: its values stay as they were (commit index)",
          val(second, "commit_index") == val(first, "commit_index") ==
          val(before, "commit_index"), "%r %r %r" % (val(before, "commit_index"),
                                                     val(first, "commit_index"),
                                                     val(second, "commit_index")))
    check("a loop running again: the turn age back under 1 s",
          eventually(lambda: (val(parse(scrape(urls[follower])[1])[0],
                                  "loop_turn_age_seconds") or 99) < 1.0, 10.0))


def test_handshakes(c, urls, leader):
    """Connections in their TLS handshake count against max_clients, so the
    gauge of client connections counts them too (it read 0 while 20 such
    filled max_clients = 20), and edgelock_client_handshakes says which."""
    socks = [socket.create_connection(("127.0.0.1", c.client_port[leader]), timeout=5)
             for _ in range(20)]
    try:
        got = {}

        def counted():
            s = parse(scrape(urls[leader])[1])[0]
            got.update(conns=val(s, "client_connections"), hs=val(s, "client_handshakes"))
            return (got["conns"] or 0) >= 20 and (got["hs"] or 0) >= 20
        check("20 connections in their TLS handshake: in client_connections and "
              "client_handshakes", eventually(counted, 5.0), repr(got))
    finally:
        for k in socks:
            k.close()
    check("closed: client_handshakes back to 0",
          eventually(lambda: val(parse(scrape(urls[leader])[1])[0], "client_handshakes") == 0,
                     5.0))


def raw_request(url, head):
    """The status line's code of the answer to the request head `head`."""
    port = int(url.split(":")[2].split("/")[0])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as k:
        k.sendall(head)
        got = b""
        while b"\r\n" not in got:
            more = k.recv(4096)
            if not more:
                break
            got += more
    return int(got.split(b" ")[1]) if got.startswith(b"HTTP/1.1 ") else got[:40]


def test_head_size(urls):
    path = "/" + urls[1].rsplit("/", 1)[1]
    ok = ("GET %s HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n" % (path, "a" * 1900)).encode()
    big = ("GET %s HTTP/1.1\r\nHost: x\r\nX-Pad: %s\r\n\r\n" % (path, "a" * 3000)).encode()
    check("a request head of %d bytes (under 2 KiB): 200" % len(ok),
          raw_request(urls[1], ok) == 200)
    code = raw_request(urls[1], big)
    check("a request head over 2 KiB: 431 Request Header Fields Too Large", code == 431,
          repr(code))


def refused_counts(c, i):
    """The counts of node i's "N connection(s) refused" lines, and whether
    each names the last one's address."""
    with open(c.log(i)) as f:
        found = re.findall(r"metrics: (\d+) connection\(s\) refused since the last such line "
                           r"\(all connections busy(; the last from 127\.0\.0\.1:\d+)?\)",
                           f.read())
    return [int(n) for n, _ in found], all(a for _, a in found)


def test_refusals_logged(c, urls):
    """Past the 8 connections served at once, 5 more refused in a burst:
    the first gets its line at once, the other 4 one when the 10 s after it
    are over, with no refusal after them (they used to wait for the next)."""
    i = 3
    port = int(urls[i].split(":")[2].split("/")[0])
    time.sleep(1.0)  # earlier scrapes' connections gone (they linger up to 0.5 s)
    # 13 open together: 8 hold their places (for 2 s), 5 are refused;
    # none is closed before those 5 are, or its place would go to another
    socks = [socket.create_connection(("127.0.0.1", port), timeout=5) for _ in range(13)]
    eventually(lambda: sum(closed_by_peer(k, 0) for k in socks) >= 5, 1.5, 0.05)
    for k in socks:
        k.close()
    t0 = time.time()
    counts, named = [], [False]

    def told():
        counts[:], named[0] = refused_counts(c, i)
        return sum(counts) >= 5
    ok = eventually(told, 14.0, 0.5)
    check("metrics port: 5 connections refused in a burst, all logged within 14 s",
          ok and sum(counts) == 5 and len(counts) == 2,
          "%r after %.1f s" % (counts, time.time() - t0))
    check("metrics port: each such line names the last one's address", counts and named[0])


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
    # IPv6 hosts in brackets, as peer_addr and client_addr take them (they
    # were refused: "must be http://HOST:PORT/PATH", and the node did not start)
    port = free_ports(1)[0]
    for url in ("http://[::1]:%d/metrics" % port, "http://[::]:%d/metrics" % port):
        out = subprocess.run([c.bin, "--check-config", c.config(1), "--metrics", url],
                             capture_output=True, text=True, timeout=10)
        check("--metrics %s: an IPv6 host in brackets is valid" % url,
              out.returncode == 0 and "valid" in out.stdout + out.stderr, out.stderr)
    for flag, value, want in (
            ("--metrics", "http://::1:9119/metrics",
             "an IPv6 address goes in brackets: http://[::1]:9119/metrics"),
            ("--peer-addr", "tls+tcp://::1:9111",
             "an IPv6 address goes in brackets: tls+tcp://[::1]:9111")):
        out = subprocess.run([c.bin, "--check-config", c.config(1), flag, value],
                             capture_output=True, text=True, timeout=10)
        check("%s %s: refused, saying the brackets are missing" % (flag, value),
              out.returncode == 1 and want in out.stderr, out.stderr)
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


def ipv6_loopback():
    """Whether this machine has ::1 (a container may have no IPv6)."""
    try:
        with socket.socket(socket.AF_INET6) as k:
            k.bind(("::1", 0))
        return True
    except OSError:
        return False


def test_ipv6_wildcard(c):
    """[node] metrics = http://[::]:PORT/metrics: every address, IPv4 too
    (the node answers on 127.0.0.1 and ::1 alike)."""
    if not ipv6_loopback():
        print("skip: no IPv6 loopback here: http://[::]:PORT not tried")
        return
    port = free_ports(1)[0]
    c.start(1, "--metrics", "http://[::]:%d/metrics" % port)
    try:
        for host in ("127.0.0.1", "[::1]"):
            url = "http://%s:%d/metrics" % (host, port)
            check("metrics on http://[::]:%d/metrics answers at %s" % (port, url),
                  eventually(lambda: answers(url), 10.0, 0.2))
    finally:
        c.stop(1)


def answers(url):
    """True once url serves the metrics text, else None (to try again)."""
    try:
        return "edgelock_role" in scrape(url)[1] or None
    except OSError:
        return None


def expected_revision():
    """What the build should call itself: the tree's git describe (without
    -dirty, which a test run's own files may flip), or "unknown"."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        r = subprocess.run(["git", "-C", root, "describe", "--always", "--abbrev=12"],
                           capture_output=True, text=True)
    except OSError:  # no git on this machine
        return "unknown"
    return r.stdout.strip() if r.returncode == 0 and r.stdout.strip() else "unknown"


def test_build(c, urls):
    """Two builds of one release tell themselves apart (an upgrade half
    done): --version, the start line and edgelock_build_info all name the
    source revision of this tree, not a stale one."""
    want = expected_revision()
    ver = subprocess.run([c.bin, "--version"], capture_output=True, text=True).stdout
    m = re.match(r"edgelockd (\S+) \(revision ([A-Za-z0-9._+-]+)\), client protocol", ver)
    rev = m.group(2) if m else None
    check("edgelockd --version names the release and this tree's revision",
          m is not None and rev.removesuffix("-dirty") == want, "%r, want %r" % (ver, want))
    samples, types = parse(scrape(urls[1])[1])
    info = [k for k in samples if k[0] == "edgelock_build_info"]
    check("edgelock_build_info: a gauge of 1 labelled with the same version and revision",
          m is not None and types.get("edgelock_build_info") == "gauge" and
          info == [("edgelock_build_info", '{version="%s",revision="%s"}' % (m.group(1), rev))]
          and samples[info[0]] == 1, repr(info))
    with open(c.log(1)) as f:
        first = f.read().splitlines()[:3]
    check("the log starts with the build: edgelockd VERSION (revision REV) starting",
          m is not None and any("edgelockd %s (revision %s) starting" % (m.group(1), rev) in line
                                for line in first), repr(first))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    random.seed(int(os.environ.get("SEED", "1")))
    c = Cluster(build, 3)
    ports = free_ports(3)
    urls = {i: "http://127.0.0.1:%d/metrics" % ports[i - 1] for i in (1, 2, 3)}
    if ipv6_loopback():  # node 2 on an IPv6 address: every scrape below reaches it there
        urls[2] = "http://[::1]:%d/metrics" % ports[1]
    try:
        for i in sorted(c.peer_port):
            c.start(i, "--bootstrap", "--metrics", urls[i])
        leader = c.wait_leader()
        for t in (lambda: test_build(c, urls),
                  lambda: do_work(c, leader), lambda: test_scrape(c, urls, leader),
                  lambda: test_not_found(urls), lambda: test_head_size(urls),
                  lambda: test_bad_config(c), lambda: test_stalled_loop(c, urls, leader),
                  lambda: test_handshakes(c, urls, leader),
                  lambda: test_refusals_logged(c, urls)):
            try:
                t()
            except Exception as e:  # a crashed step fails, the rest still run
                check("step", False, "raised %r" % (e,))
    finally:
        for i in sorted(c.procs):
            rc, _ = c.stop(i)
            check("node%d: SIGTERM exits 0" % i, rc == 0, repr(rc))
        for t in (test_busy_port, test_ipv6_wildcard):
            try:
                t(c)
            except Exception as e:
                check(t.__name__, False, "raised %r" % (e,))
        check.no_sanitizer_reports(c)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
