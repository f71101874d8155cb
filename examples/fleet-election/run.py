"""run.py BUILD - the fleet-election example, end to end: three edgelockd on
loopback over TLS with the [acl] of dist/edgelockd.conf.example, five device
processes (certificates sensor-1..5 from tools/dev-certs.sh) campaigning for
"fleet/leader" (device.c), the leader SIGKILLed, then the next leader
stopped between its lease check and its write (device.c's test_pause) past
its 2 s lease and resumed. Prints a timeline (who led when, with which
token, the failover gaps) and checks it: the resource accepted writes only
in token order, every accepted write ended before its device's local lease
deadline, the paused leader's late write was refused, and each failover fit
in the session TTL plus the election bound. Also: a device whose only link
to the cluster is cut (a relay that turns into a black hole) stops writing
before its local deadline and says so; a device the [acl] refuses exits 77
saying what to fix; the fence file is replaced by a rename (never rewritten
in place), a device on a damaged fence file writes nothing, and a device
that cannot reach the cluster keeps trying and says why on stderr.

State goes to BUILD/tmp/cluster-PID (removed when every check passed); the
daemons listen on free ports of 127.0.0.1 picked at start.

Ends with "N passed, N failed". Run with /usr/bin/python3.
"""
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "daemon"))
from elcluster import Cluster, free_ports  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
TTL_S, ELECTION_BOUND_S = 2.0, 3.0
EXAMPLE_CONF = os.path.join(HERE, "..", "..", "dist", "edgelockd.conf.example")
results = []


def shipped_acl():
    """The [acl] section of dist/edgelockd.conf.example, as shipped: the
    devices must be able to campaign under it."""
    lines, inside = [], False
    with open(EXAMPLE_CONF) as f:
        for line in f:
            if line.startswith("["):
                inside = line.strip() == "[acl]"
            if inside:
                lines.append(line)
    return "".join(lines)


def check(ok, what):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def read_log(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                t, dev, token, verdict, left = line.split()
                rows.append((float(t), dev, int(token), verdict, int(left)))
    return rows


def current_leader(log, after=0.0):
    rows = [r for r in read_log(log) if r[3] == "accepted" and r[0] > after]
    return rows[-1][1] if rows else None


def wait_new_leader(log, old, since, timeout=20.0):
    end = time.time() + timeout
    while time.time() < end:
        for t, dev, _, verdict, _ in read_log(log):
            if verdict == "accepted" and dev != old and t > since:
                return dev, t
        time.sleep(0.05)
    return None, None


def timeline(rows):
    spans = []  # [device, token, first, last]
    for t, dev, token, verdict, _ in rows:
        if verdict != "accepted":
            continue
        if spans and spans[-1][0] == dev and spans[-1][1] == token:
            spans[-1][3] = t
        else:
            spans.append([dev, token, t, t])
    return spans


def device(devices, name, log, env, **kw):
    """Device devN, with the certificate sensor-N, its stdout in devN.out."""
    cert = os.path.join(BUILD, "certs", "sensor-%s.pem" % name[3:])
    if "stdout" not in kw:
        kw["stdout"] = open(os.path.join(os.path.dirname(log), name + ".out"), "a")
    devices[name] = subprocess.Popen([os.path.join(BUILD, "bin", "fleet-device"), name, log],
                                     env=dict({"EDGELOCK_CERT": cert}, **env), **kw)


def said(log, name):
    with open(os.path.join(os.path.dirname(log), name + ".out")) as f:
        return f.read()


class Relay:
    """A TCP relay on a free port of 127.0.0.1 to port: a device's only link
    to the cluster. cut() makes it a black hole, as a pulled cable would:
    nothing passes either way any more, its connections stay open, and new
    ones are accepted and never answered."""

    def __init__(self, port):
        self.srv = socket.create_server(("127.0.0.1", 0))
        self.port, self.to, self.is_cut, self.socks = self.srv.getsockname()[1], port, False, []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                a, _ = self.srv.accept()
                self.socks.append(a)
                if self.is_cut:
                    continue
                b = socket.create_connection(("127.0.0.1", self.to))
            except OSError:
                return
            self.socks.append(b)
            for x, y in ((a, b), (b, a)):
                threading.Thread(target=self.pipe, args=(x, y), daemon=True).start()

    def pipe(self, x, y):
        try:
            while True:
                data = x.recv(65536)
                if not data or self.is_cut:
                    return  # after the cut: dropped, and nothing read any more
                y.sendall(data)
        except OSError:
            return

    def cut(self):
        self.is_cut = True

    def close(self):
        for s in [self.srv] + self.socks:
            s.close()


def cut_link(cluster, leader, env):
    """dev7 leads a resource of its own through a relay to the cluster's
    leader (its only endpoint: no redirect can route around it), then the
    relay is cut. Returns (its log rows, the cut's time, its stdout)."""
    log = os.path.join(cluster.dir, "cut.log")
    relay = Relay(cluster.client_port[leader])
    devices = {}
    device(devices, "dev7", log, dict(env, EDGELOCK_ENDPOINTS="tls+tcp://127.0.0.1:%d" % relay.port),
           stderr=subprocess.DEVNULL)
    try:
        end = time.time() + 20.0
        while time.time() < end and len(read_log(log)) < 5:
            time.sleep(0.1)
        t_cut = time.time()
        relay.cut()
        time.sleep(TTL_S + 1.0)
    finally:
        devices["dev7"].kill()
        devices["dev7"].wait()
        relay.close()
    return read_log(log), t_cut, said(log, "dev7")


def pause_between_check_and_write(proc, log, name):
    """Stop device name right after its next lease check, before its write
    (device.c's test_pause); the time it stopped, None if it did not."""
    open("%s.pause-%s" % (log, name), "w").close()
    end = time.time() + 5.0
    while time.time() < end:
        with open("/proc/%d/stat" % proc.pid) as f:
            if f.read().rsplit(")", 1)[1].split()[0] == "T":
                return time.time()
        time.sleep(0.01)
    return None


def refused_by_acl(cluster, env):
    """A device with the certificate CN=client, which the shipped [acl]
    grants nothing to: (exit status or None if still running after 15 s,
    stderr)."""
    err = os.path.join(cluster.dir, "refused.err")
    p = subprocess.Popen([os.path.join(BUILD, "bin", "fleet-device"), "dev8",
                          os.path.join(cluster.dir, "refused.log")],
                         env=dict(env, EDGELOCK_CERT=os.path.join(BUILD, "certs", "client.pem")),
                         stdout=subprocess.DEVNULL, stderr=open(err, "w"))
    try:
        rc = p.wait(15)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        rc = None
    return rc, open(err).read()


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
    # the devices' certificates: sensor-N, which the shipped [acl] matches
    subprocess.run([os.path.join(HERE, "..", "..", "tools", "dev-certs.sh"),
                    os.path.join(BUILD, "certs"), "5"] + ["sensor-%d" % n for n in range(1, 8)],
                   check=True, stdout=subprocess.DEVNULL)
    # The [acl] as shipped, and one line more for this test's STATUS polls
    # (elcluster.py's client.pem): it grants observe only, no session.
    cluster = Cluster(BUILD, 3, election_ms=600, heartbeat_ms=60,
                      extra="\n" + shipped_acl() + "client = observe : *\n")
    cluster.start_all(bootstrap=True)
    devices = {}
    log = os.path.join(cluster.dir, "resource.log")
    lost_err = os.path.join(cluster.dir, "lost.err")
    try:
        cluster.wait_leader()
        env = dict(os.environ,
                   EDGELOCK_ENDPOINTS=",".join(cluster.addr(i) for i in sorted(cluster.client_port)),
                   EDGELOCK_CA=cluster.certs + "/ca.pem", FLEET_DEVICE_TEST_PAUSE="1")
        env.pop("EDGELOCK_CERT", None)
        refused_rc, refused_err = refused_by_acl(cluster, env)
        # A device whose cluster is a port nobody listens on: it keeps
        # trying all along the run and must say why.
        t_lost = time.time()
        device(devices, "lost", os.path.join(cluster.dir, "lost.log"),
               dict(env, EDGELOCK_ENDPOINTS="tls+tcp://127.0.0.1:%d" % free_ports(1)[0],
                    EDGELOCK_CERT=cluster.certs + "/client.pem"),
               stderr=open(lost_err, "w"))
        for n in range(1, 6):
            device(devices, "dev%d" % n, log, env)
        time.sleep(2.0)
        first = current_leader(log)
        check(first is not None, "a device leads fleet/leader under the [acl] of "
              "dist/edgelockd.conf.example")
        if first is None:
            return finish(cluster)
        fence_inode = os.stat(log + ".fence").st_ino
        t_kill = time.time()
        devices[first].send_signal(signal.SIGKILL)
        second, t2 = wait_new_leader(log, first, t_kill)
        time.sleep(1.5)
        paused = current_leader(log, after=time.time() - 0.5)
        t_stop = pause_between_check_and_write(devices[paused], log, paused)
        third, t3 = wait_new_leader(log, paused, t_stop or time.time())
        time.sleep(max(0.0, (t_stop or time.time()) + 2 * TTL_S - time.time()))
        devices[paused].send_signal(signal.SIGCONT)
        time.sleep(1.5)
        replaced = os.stat(log + ".fence").st_ino != fence_inode
        lost_running, lost_s = devices["lost"].poll() is None, time.time() - t_lost
        for n in range(1, 6):
            devices["dev%d" % n].kill()
        cut_rows, t_cut, cut_said = cut_link(cluster, cluster.wait_leader(), env)
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
    for t, dev, token, verdict, left in rows:
        if verdict == "refused":
            print("  %-5s token %-5d %7.2f   REFUSED by the fence (a late write, %d ms of lease "
                  "left)" % (dev, token, t - t0, left))
    gap1 = (t2 - t_kill) if t2 else None
    gap2 = (t3 - t_stop) if t3 and t_stop else None
    print("failover after SIGKILL of %s: %s ms; after the pause of %s: %s ms" % (
        first, "%.0f" % (gap1 * 1000) if gap1 else "none", paused,
        "%.0f" % (gap2 * 1000) if gap2 else "none"))
    accepted = [r for r in rows if r[3] == "accepted"]
    check(len(accepted) > 10 and [r[2] for r in accepted] == sorted(r[2] for r in accepted),
          "the resource accepted writes only in token order (%d writes)" % len(accepted))
    check(all(r[4] > 0 for r in accepted),
          "every accepted write ended before its device's local lease deadline (least left: "
          "%s ms)" % min((r[4] for r in accepted), default=None))
    check(len({d for d, *_ in timeline(rows)}) >= 3, "three leaders in turn: %s, %s, %s" % (first, second, third))
    check(gap1 is not None and gap1 <= TTL_S + ELECTION_BOUND_S,
          "failover after SIGKILL within TTL + election bound")
    check(gap2 is not None and gap2 <= TTL_S + ELECTION_BOUND_S,
          "failover after the pause within TTL + election bound")
    late = [r for r in rows if r[3] == "refused" and r[1] == paused]
    check(len(late) >= 1, "the leader paused between its lease check and its write: its late "
          "write was refused by the fence")
    told = {d: said(log, d) for d in ("dev%d" % n for n in range(1, 6))}
    check(all(("%s: leading fleet/leader, token " % d) in told[d] for d in (first, second, third))
          and ("%s: stepped down: the fence refused token" % paused) in told[paused],
          "each leader printed when it led, and the paused one why it stepped down")
    after = [r for r in cut_rows if r[0] > t_cut]
    print("the device whose link was cut: %d writes after the cut, the last %.0f ms after it, "
          "least lease left %s ms; %r" % (len(after), (after[-1][0] - t_cut) * 1000 if after else 0,
                                          min((r[4] for r in cut_rows), default=None),
                                          cut_said.splitlines()))
    check(len(after) >= 1 and all(r[4] > 0 for r in cut_rows),
          "a device cut from the cluster wrote only before its local lease deadline")
    check("dev7: leading fleet/leader, token " in cut_said and
          ("dev7: stepped down: lease left " in cut_said or "dev7: stepped down: lease lost" in cut_said),
          "... and said it stepped down for its lease")
    print("the device [acl] refuses: exit %s, %r" % (refused_rc, refused_err))
    check(refused_rc == 77 and "refused (EL_EPERM)" in refused_err and "[acl]" in refused_err,
          "a device refused by [acl] exits 77 naming the [acl] rule to fix")
    check(replaced, "the fence file was replaced by a rename, never rewritten in place")
    verdicts = sorted({r[3] for r in damaged})
    check(verdicts == ["failed"] and "fence: stored data corrupt: write refused" in damaged_err,
          "on an empty fence file a leader's writes all failed closed (%s)" % verdicts)
    lines = open(lost_err).read().splitlines()
    print("the device without a cluster, %.0f s: %s" % (lost_s, lines[:1]))
    check(lost_running and 1 <= len(lines) <= lost_s / 5 + 1
          and all("cannot open a session: no leader reachable" in ln for ln in lines),
          "a device without a cluster kept trying and said why %d times in %.0f s" % (len(lines), lost_s))
    return finish(cluster)


def finish(cluster):
    n_ok = sum(results)
    print("%d passed, %d failed" % (n_ok, len(results) - n_ok))
    if n_ok < len(results):
        print("state kept in %s" % cluster.dir)
        return 1
    shutil.rmtree(cluster.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
