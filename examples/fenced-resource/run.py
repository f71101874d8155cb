"""run.py BUILD - the fenced-resource example, end to end: three edgelockd on
loopback over TLS (tests/daemon/elcluster.py), the resource server
(resource.c) and two clients (client.c). Client A takes the lock and writes;
A is SIGSTOPped past its 2 s session TTL; the cluster expires A's session and
B takes the lock (a higher token) and writes; A is resumed and its late write
with the old token is refused by the resource's fence; the server is
restarted and still refuses A's token (the highest token was persisted).
Then the server's edges: a client that connects and stays silent holds the
others off for at most 2 s; a damaged DIR/fence stops the server at start
(never read as 0); a DIR/value with a higher token than DIR/fence raises the
fence; READ 0 is answered with the reason, like WRITE 0.

State goes to BUILD/tmp/cluster-PID (removed when every check passed); the
daemons listen on free ports of 127.0.0.1 picked at start.

Ends with "N passed, N failed". Run with /usr/bin/python3.
"""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "daemon"))
from elcluster import Cluster  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
TTL_S = 2.0
results = []
procs = []


def check(ok, what):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def wait_line(path, pattern, timeout=20.0):
    """The first match of pattern in the file a process writes, or None."""
    end = time.time() + timeout
    while time.time() < end:
        if os.path.exists(path):
            m = re.search(pattern, open(path).read())
            if m:
                return m
        time.sleep(0.05)
    return None


def resource_call(sock, line, timeout=5.0):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.connect(sock)
    s.sendall(line.encode() + b"\n")
    reply = s.recv(256).decode().strip()
    s.close()
    return reply


def start(args, out, **kw):
    p = subprocess.Popen(args, stdout=open(out, "a"), stderr=subprocess.STDOUT, **kw)
    procs.append(p)
    return p


def stop(p):
    """By PID: resume if stopped, SIGTERM, SIGKILL after 5 s."""
    if p.poll() is None:
        os.kill(p.pid, signal.SIGCONT)
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(5.0)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
    p.wait()


def start_resource(d, out):
    """Start the server; returns it and the highest token it restored."""
    before = open(out).read().count("resource: serving") if os.path.exists(out) else 0
    p = start([os.path.join(BUILD, "bin", "fenced-resource"), d], out)
    end = time.time() + 10.0
    while time.time() < end:
        starts = re.findall(r"resource: serving \S+, highest token (\d+)", open(out).read())
        if len(starts) > before:
            return p, int(starts[-1])
        time.sleep(0.05)
    return p, None


def client(name, value, env, d):
    out = os.path.join(d, "client-%s.out" % name)
    p = start([os.path.join(BUILD, "bin", "fenced-client"), name, os.path.join(d, "sock"), value],
              out, env=env, stdin=subprocess.PIPE)
    return p, out


def silent_client(sock):
    """A client connects and never writes (as a SIGSTOPped one would), then
    another one READs: (seconds the READ took, None if unanswered in 10 s;
    whether the server closed the silent connection)."""
    silent = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    silent.connect(sock)
    t0 = time.time()
    try:
        took = time.time() - t0 if resource_call(sock, "READ", 10.0).startswith("VALUE") else None
    except OSError:
        took = None
    silent.settimeout(1.0)
    try:
        closed = silent.recv(16) == b""
    except OSError:
        closed = False
    silent.close()
    return took, closed


def damaged_start(d, files):
    """Start a server on a new DIR holding files {name: text}: (its exit
    status, None while it runs; its output; its answer to WRITE 3 if it runs)."""
    os.makedirs(d)
    for name, text in files.items():
        if text is None:  # a dangling symlink: a state partition that did not mount
            os.symlink("nowhere", os.path.join(d, name))
            continue
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    out = os.path.join(d, "out")
    p = start([os.path.join(BUILD, "bin", "fenced-resource"), d], out)
    try:
        rc = p.wait(3.0)
    except subprocess.TimeoutExpired:
        rc = None
    answer = resource_call(os.path.join(d, "sock"), "WRITE 3 late") if rc is None else None
    stop(p)
    return rc, open(out).read().strip(), answer


def edges(d):
    """The server's edges, on the restarted server and on new DIRs."""
    sock = os.path.join(d, "sock")
    r = dict(read0=resource_call(sock, "READ 0"), write0=resource_call(sock, "WRITE 0 x"))
    r["silent"] = silent_client(sock)
    r["garbled"] = damaged_start(d + "-garbled", {"fence": "x78\n"})
    r["empty"] = damaged_start(d + "-empty", {"fence": ""})  # what a torn rewrite leaves
    r["value"] = damaged_start(d + "-value", {"fence": "3\n", "value": "78 from-B\n"})
    r["dangling"] = damaged_start(d + "-dangling", {"fence": None})
    for what in ("silent", "garbled", "empty", "value", "dangling"):
        print("%s: %s" % (what, r[what]), flush=True)
    return r


def check_edges(e):
    took, closed = e["silent"]
    check(took is not None and took < 4.0 and closed,
          "a silent client held the others off %s, then was closed (%s)" % (
              "%.1f s" % took if took is not None else "for good", closed))
    for what in ("garbled", "empty"):
        rc, out, answer = e[what]
        check(rc == 65 and "fence: stored data corrupt: refusing to start" in out and answer is None,
              "a DIR/fence %s stops the server at start (exit %s; WRITE 3: %s)" % (what, rc, answer))
    rc, out, answer = e["dangling"]
    check(rc == 65 and "refusing to start" in out and answer is None,
          "a DIR/fence that is a dangling symlink stops the server at start, never reads as 0 "
          "(exit %s; WRITE 3: %s)" % (rc, answer))
    check(e["value"][2] == "STALE 78",
          "DIR/value's higher token raises the fence: WRITE 3 answered %s" % e["value"][2])
    check(e["read0"].startswith("ERR ") and e["read0"] == e["write0"],
          "READ 0 says what is wrong, like WRITE 0: %s / %s" % (e["read0"], e["write0"]))


def scenario(cluster, d, env):
    """The steps; returns what the checks need."""
    res_out = os.path.join(d, "resource.out")
    res, _ = start_resource(d, res_out)
    a, a_out = client("A", "from-A", env, d)
    m = wait_line(a_out, r"write from-A token (\d+) accepted")
    tok_a = int(m.group(1)) if m else None
    t_stop = time.time()
    os.kill(a.pid, signal.SIGSTOP)
    print("A wrote with token %s, then SIGSTOP" % tok_a, flush=True)
    b, b_out = client("B", "from-B", env, d)
    m = wait_line(b_out, r"write from-B token (\d+) accepted", timeout=30.0)
    tok_b, t_b = (int(m.group(1)), time.time()) if m else (None, None)
    print("B wrote with token %s, %.1f s after A stopped" % (tok_b, (t_b or t_stop) - t_stop), flush=True)
    time.sleep(max(0.0, t_stop + 2 * TTL_S - time.time()))
    os.kill(a.pid, signal.SIGCONT)
    a.stdin.write(b"late-from-A\n")
    a.stdin.close()
    a_rc = a.wait(20.0)
    late = wait_line(a_out, r"write late-from-A token \d+ REFUSED[^\n]*", timeout=1.0)
    print("A resumed: %s (exit %d)" % (late.group(0) if late else "no refusal", a_rc), flush=True)
    value = resource_call(os.path.join(d, "sock"), "READ")
    stop(res)
    res, restored = start_resource(d, res_out)
    after_a = resource_call(os.path.join(d, "sock"), "WRITE %d replay-from-A" % tok_a) if tok_a else ""
    value_after = resource_call(os.path.join(d, "sock"), "READ")
    print("restart: highest token %s restored; A's token now: %s; value: %s"
          % (restored, after_a, value_after), flush=True)
    b.stdin.close()
    b_rc = b.wait(20.0)
    e = edges(d)
    return dict(edges=e, tok_a=tok_a, tok_b=tok_b, t_b=t_b, t_stop=t_stop, a_rc=a_rc, late=late, b_rc=b_rc,
                value=value, restored=restored, after_a=after_a, value_after=value_after)


def main():
    cluster = Cluster(BUILD, 3, election_ms=600, heartbeat_ms=60)
    cluster.start_all(bootstrap=True)
    d = os.path.join(cluster.dir, "resource")
    os.makedirs(d)
    try:
        cluster.wait_leader()
        env = dict(os.environ,
                   EDGELOCK_ENDPOINTS=",".join(cluster.addr(i) for i in sorted(cluster.client_port)),
                   EDGELOCK_CA=cluster.certs + "/ca.pem", EDGELOCK_CERT=cluster.certs + "/client.pem")
        r = scenario(cluster, d, env)
    finally:
        for p in procs:
            stop(p)
        cluster.stop_all()
    for name in ("client-A.out", "client-B.out", "resource.out"):
        print("%s:" % name)
        for line in open(os.path.join(d, name)):
            print("  " + line.rstrip())
    ok_tokens = r["tok_a"] is not None and r["tok_b"] is not None
    check(ok_tokens, "A and B each wrote with their token (A %s, B %s)" % (r["tok_a"], r["tok_b"]))
    check(ok_tokens and r["tok_b"] > r["tok_a"], "B's token is higher than A's")
    # A renews every TTL/3, so its session expires TTL*2/3 .. TTL after the stop.
    check(r["t_b"] is not None and r["t_b"] - r["t_stop"] >= TTL_S * 2 / 3 - 0.1,
          "B was granted only once A's session expired (TTL %.0f s)" % TTL_S)
    check(r["late"] is not None and r["a_rc"] == 3,
          "A's late write with the old token was REFUSED as stale (exit %s)" % r["a_rc"])
    check(ok_tokens and r["value"] == "VALUE %d from-B" % r["tok_b"],
          "the stored value is B's: %s" % r["value"])
    check(ok_tokens and r["restored"] == r["tok_b"],
          "after a restart the server restored highest token %s" % r["restored"])
    check(ok_tokens and r["after_a"] == "STALE %d" % r["tok_b"],
          "after the restart A's token is still refused: %s" % r["after_a"])
    check(ok_tokens and r["value_after"] == r["value"], "the value survived the restart")
    check(r["b_rc"] == 0, "B's writes were all accepted (exit %s)" % r["b_rc"])
    check_edges(r["edges"])
    n_ok = sum(results)
    print("%d passed, %d failed" % (n_ok, len(results) - n_ok))
    if n_ok < len(results):
        print("state kept in %s" % cluster.dir)
        return 1
    shutil.rmtree(cluster.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
