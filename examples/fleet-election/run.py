"""run.py BUILD - the fleet-election example, end to end: three edgelockd on
loopback over TLS, five device processes campaigning for "fleet/leader"
(device.c), the leader SIGKILLed, then the next leader SIGSTOPped past its
2 s lease and resumed. Prints a timeline (who led when, with which token,
the failover gaps) and checks it: the resource accepted writes only in token
order, the paused leader's late write was refused, and each failover fit in
the session TTL plus the election bound. Also: the fence file is replaced by
a rename (never rewritten in place), a device on a damaged fence file writes
nothing, and a device that cannot reach the cluster keeps trying and says
why on stderr.

State goes to BUILD/tmp/cluster-PID (removed when every check passed); the
daemons listen on free ports of 127.0.0.1 picked at start.

Ends with "N passed, N failed". Run with /usr/bin/python3.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "daemon"))
from elcluster import Cluster, free_ports  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
TTL_S, ELECTION_BOUND_S = 2.0, 3.0
results = []


def check(ok, what):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def read_log(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                t, dev, token, verdict = line.split()
                rows.append((float(t), dev, int(token), verdict))
    return rows


def current_leader(log, after=0.0):
    rows = [r for r in read_log(log) if r[3] == "accepted" and r[0] > after]
    return rows[-1][1] if rows else None


def wait_new_leader(log, old, since, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        for t, dev, _, verdict in read_log(log):
            if verdict == "accepted" and dev != old and t > since:
                return dev, t
        time.sleep(0.05)
    return None, None


def timeline(rows):
    spans = []  # [device, token, first, last]
    for t, dev, token, verdict in rows:
        if verdict != "accepted":
            continue
        if spans and spans[-1][0] == dev and spans[-1][1] == token:
            spans[-1][3] = t
        else:
            spans.append([dev, token, t, t])
    return spans


def device(devices, name, log, env, **kw):
    devices[name] = subprocess.Popen([os.path.join(BUILD, "bin", "fleet-device"), name, log],
                                     env=env, **kw)


def damaged_fence(devices, log, env):
    """One device on a resource whose fence file is empty (what a crash
    between truncating and writing it leaves): its log lines, its stderr."""
    open(log + ".fence", "w").close()
    err = log + ".err"
    device(devices, "dev6", log, env, stderr=open(err, "w"))
    end = time.time() + 15.0
    while time.time() < end and len(read_log(log)) < 3:
        time.sleep(0.1)
    p = devices.pop("dev6")
    p.kill()
    p.wait()
    return read_log(log), open(err).read()


def main():
    cluster = Cluster(BUILD, 3, election_ms=600, heartbeat_ms=60)
    cluster.start_all(bootstrap=True)
    devices = {}
    log = os.path.join(cluster.dir, "resource.log")
    lost_err = os.path.join(cluster.dir, "lost.err")
    try:
        cluster.wait_leader()
        env = dict(os.environ,
                   EDGELOCK_ENDPOINTS=",".join(cluster.addr(i) for i in sorted(cluster.client_port)),
                   EDGELOCK_CA=cluster.certs + "/ca.pem", EDGELOCK_CERT=cluster.certs + "/client.pem")
        # A device whose cluster is a port nobody listens on: it keeps
        # trying all along the run and must say why.
        t_lost = time.time()
        device(devices, "lost", os.path.join(cluster.dir, "lost.log"),
               dict(env, EDGELOCK_ENDPOINTS="tls+tcp://127.0.0.1:%d" % free_ports(1)[0]),
               stderr=open(lost_err, "w"))
        for n in range(1, 6):
            device(devices, "dev%d" % n, log, env)
        time.sleep(2.0)
        first = current_leader(log)
        fence_inode = os.stat(log + ".fence").st_ino
        t_kill = time.time()
        devices[first].send_signal(signal.SIGKILL)
        second, t2 = wait_new_leader(log, first, t_kill)
        time.sleep(1.5)
        paused = current_leader(log, after=time.time() - 0.5)
        t_stop = time.time()
        devices[paused].send_signal(signal.SIGSTOP)
        third, t3 = wait_new_leader(log, paused, t_stop)
        time.sleep(max(0.0, t_stop + 2 * TTL_S - time.time()))
        devices[paused].send_signal(signal.SIGCONT)
        time.sleep(1.5)
        replaced = os.stat(log + ".fence").st_ino != fence_inode
        lost_running, lost_s = devices["lost"].poll() is None, time.time() - t_lost
        for n in range(1, 6):
            devices["dev%d" % n].kill()
        damaged, damaged_err = damaged_fence(devices, os.path.join(cluster.dir, "damaged.log"), env)
    finally:
        for p in devices.values():
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
            p.wait()
        cluster.stop_all()

    rows = read_log(log)
    print("timeline (who led, with which token, from .. to, seconds since the start):")
    t0 = rows[0][0] if rows else 0.0
    for dev, token, a, b in timeline(rows):
        print("  %-5s token %-5d %7.2f .. %7.2f" % (dev, token, a - t0, b - t0))
    for t, dev, token, verdict in rows:
        if verdict == "refused":
            print("  %-5s token %-5d %7.2f   REFUSED by the fence (a late write)" % (dev, token, t - t0))
    gap1 = (t2 - t_kill) if t2 else None
    gap2 = (t3 - t_stop) if t3 else None
    print("failover after SIGKILL of %s: %s ms; after SIGSTOP of %s: %s ms" % (
        first, "%.0f" % (gap1 * 1000) if gap1 else "none", paused,
        "%.0f" % (gap2 * 1000) if gap2 else "none"))
    accepted = [r[2] for r in rows if r[3] == "accepted"]
    check(len(accepted) > 10 and accepted == sorted(accepted),
          "the resource accepted writes only in token order (%d writes)" % len(accepted))
    check(len({d for d, *_ in timeline(rows)}) >= 3, "three leaders in turn: %s, %s, %s" % (first, second, third))
    check(gap1 is not None and gap1 <= TTL_S + ELECTION_BOUND_S,
          "failover after SIGKILL within TTL + election bound")
    check(gap2 is not None and gap2 <= TTL_S + ELECTION_BOUND_S,
          "failover after SIGSTOP within TTL + election bound")
    late = [r for r in rows if r[3] == "refused" and r[1] == paused]
    check(len(late) >= 1, "the paused leader's late write was refused by the fence")
    check(replaced, "the fence file was replaced by a rename, never rewritten in place")
    verdicts = sorted({r[3] for r in damaged})
    check(verdicts == ["failed"] and "fence: stored data corrupt: write refused" in damaged_err,
          "on an empty fence file a leader's writes all failed closed (%s)" % verdicts)
    said = open(lost_err).read().splitlines()
    print("the device without a cluster, %.0f s: %s" % (lost_s, said[:1]))
    check(lost_running and 1 <= len(said) <= lost_s / 5 + 1
          and all("cannot open a session: no leader reachable" in ln for ln in said),
          "a device without a cluster kept trying and said why %d times in %.0f s" % (len(said), lost_s))
    n_ok = sum(results)
    print("%d passed, %d failed" % (n_ok, len(results) - n_ok))
    if n_ok < len(results):
        print("state kept in %s" % cluster.dir)
        return 1
    shutil.rmtree(cluster.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
