"""run.py BUILD - the staged-rollout example, end to end: three edgelockd on
loopback over TLS (tests/daemon/elcluster.py) and a fleet of ten "devices",
all told at once to apply an update. Each runs

    edgelock lock -n 3 fleet/rollout -- update.sh DEVICE TIMELINE

so at most three devices are updating (and rebooting) at any moment while
the rest wait their turn in FIFO order. It prints the timeline, one line per
start and stop with how many devices were updating, and checks that every
device updated, that never more than three did at once, that the rollout did
run three abreast (so the semaphore, not a lock, set the pace), and that
every permit came with its own fencing token. Then one more device's CLI
is SIGKILLed mid-update: nothing of its update may go on running.
Ends with "N passed, N failed". Run with /usr/bin/python3.

State goes to BUILD/tmp/cluster-PID (removed when every check passed); the
daemons listen on free ports of 127.0.0.1 picked at start.
"""
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "daemon"))
from elcluster import Cluster  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
DEVICES, PERMITS = 10, 3
results = []


def check(ok, what):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def cluster_env(cluster):
    return dict(os.environ,
                EDGELOCK_ENDPOINTS=",".join(cluster.addr(i) for i in sorted(cluster.client_port)),
                EDGELOCK_CA=cluster.certs + "/ca.pem", EDGELOCK_CERT=cluster.certs + "/client.pem")


def update(device, timeline, env):
    """One device: its update under one permit, through the CLI."""
    return subprocess.Popen([os.path.join(BUILD, "bin", "edgelock"), "lock", "-n", str(PERMITS),
                             "--ttl", "5s", "fleet/rollout", "--",
                             os.path.join(HERE, "update.sh"), device, timeline], env=env)


def roll_out(cluster, timeline):
    """Start every device at once; returns their exit statuses."""
    fleet = [update("dev%02d" % d, timeline, cluster_env(cluster)) for d in range(1, DEVICES + 1)]
    return [p.wait(120) for p in fleet]


def proc_read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return b""  # gone meanwhile


def group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False


def cli_killed(cluster, timeline):
    """A device whose CLI is SIGKILLed 0.5 s into a 30 s update: True when
    nothing of update.sh's process group (the CLI runs CMD in a group of its
    own) is left 3 s later, None when the update never started."""
    p = update("dev11", timeline, dict(cluster_env(cluster), UPDATE_SECONDS="30"))
    end = time.time() + 15.0
    while time.time() < end and not os.path.exists(timeline):
        time.sleep(0.05)
    time.sleep(0.5)
    cmd = [k for k in proc_read("/proc/%d/task/%d/children" % (p.pid, p.pid)).split()
           if b"update.sh" in proc_read("/proc/%s/cmdline" % k.decode())]
    p.kill()
    p.wait()
    if not cmd:
        return None
    pgid = int(cmd[0])
    end = time.time() + 3.0
    while time.time() < end and group_alive(pgid):
        time.sleep(0.05)
    gone = not group_alive(pgid)
    if not gone:
        os.killpg(pgid, signal.SIGKILL)  # what the old update.sh left running
    return gone


def timeline_of(path):
    """[(ms, kind, device, token)] sorted by time; at one ms, stops first
    (a device stops before the next takes its permit)."""
    rows = []
    for line in open(path) if os.path.exists(path) else []:
        f = line.split()
        rows.append((int(f[1]), f[0], f[2], int(f[3]) if f[0] == "start" else 0))
    return sorted(rows, key=lambda r: (r[0], r[1] != "stop"))


def show(rows):
    """Print the timeline; returns the most devices updating at once."""
    t0 = rows[0][0] if rows else 0
    updating, most = set(), 0
    print("timeline (ms from the first start; # = a device updating):")
    for ms, kind, device, token in rows:
        if kind == "start":
            updating.add(device)
        else:
            updating.discard(device)
        most = max(most, len(updating))
        what = "starts, token %d" % token if kind == "start" else "done"
        print("  %6d  %-6s %-18s %-3s %s" % (ms - t0, device, what, len(updating),
                                             "#" * len(updating)))
    return most


def main():
    cluster = Cluster(BUILD, 3, election_ms=600, heartbeat_ms=60)
    timeline = os.path.join(cluster.dir, "timeline.log")
    codes, gone = [], None
    try:
        cluster.start_all(bootstrap=True)
        cluster.wait_leader()
        codes = roll_out(cluster, timeline)
        gone = cli_killed(cluster, os.path.join(cluster.dir, "killed.log"))
    finally:
        cluster.stop_all()
    rows = timeline_of(timeline)
    most = show(rows)
    started = sorted(d for _, k, d, _ in rows if k == "start")
    stopped = sorted(d for _, k, d, _ in rows if k == "stop")
    tokens = [t for _, k, _, t in rows if k == "start"]
    check(codes == [0] * DEVICES and started == stopped and len(started) == DEVICES,
          "all %d devices updated (exit statuses %s)" % (DEVICES, sorted(set(codes))))
    check(most <= PERMITS, "never more than %d devices updating at once (at most %d)" % (PERMITS, most))
    check(most >= 2, "the rollout ran devices side by side (up to %d at once)" % most)
    check(len(set(tokens)) == len(tokens) and all(t > 0 for t in tokens),
          "each permit had its own fencing token")
    check(gone is True, "a device's CLI SIGKILLed mid-update left nothing of the update running (%s)"
          % {None: "it never started", True: "all gone", False: "a child of update.sh ran on"}[gone])
    n_ok = sum(results)
    print("%d passed, %d failed" % (n_ok, len(results) - n_ok))
    if n_ok < len(results):
        print("state kept in %s" % cluster.dir)
        return 1
    shutil.rmtree(cluster.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
