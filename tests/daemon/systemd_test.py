"""systemd_test.py BUILD - edgelockd under a fake systemd (cmd/edgelockd/notify.c).

The test binds a Unix datagram socket, starts edgelockd with NOTIFY_SOCKET
pointing at it (and WATCHDOG_USEC=400000, WATCHDOG_PID the daemon's own pid:
`sh -c 'export WATCHDOG_PID=$$; exec edgelockd ...'`), and checks what
systemd would see: READY=1 and STATUS= once the loop runs, WATCHDOG=1 every
~200 ms from the loop (none while the process is SIGSTOPped, again after
SIGCONT), the unit's ExecReload= run as systemctl reload runs it (the
certificates reloaded), STOPPING=1 on SIGTERM and exit 0, and a warning
that 400 ms is too short a watchdog for the loop. Then a restart whose
WATCHDOG_PID is another process (no watchdog); one whose settings are
unusable and whose socket is gone (the errors named in words, not
numbers); and a --join node (READY before it is a member; once added and
removed, STATUS says it was removed). One-node clusters; processes stopped
by PID.

Prints "ok NAME" / "FAIL NAME: why" per check and "N passed, N failed".
"""
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elcluster import Cluster, Checks, eventually  # noqa: E402

check = Checks()




class Notify:
    """The NOTIFY_SOCKET end: every datagram with its arrival time."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.1)
        self.msgs = []  # (time, line)
        self.lock = threading.Lock()
        self.done = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while not self.done:
            try:
                data = self.sock.recv(4096)
            except socket.timeout:
                continue
            except OSError:
                return
            now = time.time()
            with self.lock:
                for line in data.decode(errors="replace").split("\n"):
                    self.msgs.append((now, line))

    def lines(self, prefix, since=0.0, until=None):
        with self.lock:
            return [(t, m) for t, m in self.msgs
                    if m.startswith(prefix) and t >= since and (until is None or t < until)]

    def wait(self, prefix, timeout, since=0.0, contains=""):
        deadline = time.time() + timeout
        while time.time() < deadline:
            for t, m in self.lines(prefix, since):
                if contains in m:
                    return m
            time.sleep(0.02)
        return None

    def close(self):
        self.done = True
        self.thread.join()
        self.sock.close()
        os.unlink(self.path)


def start(c, i, notify, watchdog_pid="$$", *flags):
    """edgelockd for node i through sh, so WATCHDOG_PID can be its own pid."""
    env = dict(os.environ, NOTIFY_SOCKET=notify.path, WATCHDOG_USEC="400000")
    cmd = "export WATCHDOG_PID=%s; exec \"$0\" \"$@\"" % watchdog_pid
    logf = open(c.log(i), "a")
    p = subprocess.Popen(["sh", "-c", cmd, c.bin, "-c", c.config(i)] + list(flags),
                         env=env, stdout=logf, stderr=subprocess.STDOUT)
    logf.close()
    c.procs[i] = p
    return p


def test_watched(c, n):
    p = start(c, 1, n, "$$", "--bootstrap")
    t0 = time.time()
    ready = n.wait("READY=1", 10.0)
    check("READY=1 once the loop runs", ready is not None)
    st = n.wait("STATUS=", 1.0)
    check("STATUS= with READY", st is not None and st.startswith("STATUS=node 1: "), st)
    st = n.wait("STATUS=", 5.0, contains=": leader, term")
    check("STATUS= follows the role: node 1 leader", st is not None, repr(n.lines("STATUS=")))
    print("     %s (%.2f s after the start)" % (st, time.time() - t0))
    t = time.time()
    time.sleep(2.0)
    wd = n.lines("WATCHDOG=1", t, t + 2.0)
    check("WATCHDOG=1 at least 3 times in 2 s", len(wd) >= 3, "got %d" % len(wd))
    gaps = [b[0] - a[0] for a, b in zip(wd, wd[1:])]
    check("pings every ~200 ms (half of 400 ms), every gap below the 400 ms timeout",
          gaps and max(gaps) < 0.4 and min(gaps) > 0.1, repr(gaps))
    os.kill(p.pid, signal.SIGSTOP)
    t = time.time()
    time.sleep(1.1)
    late = n.lines("WATCHDOG=1", t + 0.05, time.time())
    check("no WATCHDOG=1 while the process is stopped (1 s)", not late, "got %d" % len(late))
    t = time.time()
    os.kill(p.pid, signal.SIGCONT)
    check("WATCHDOG=1 again after SIGCONT", n.wait("WATCHDOG=1", 1.0, t) is not None)
    reload_as_unit(c, p)
    t = time.time()
    rc, secs = c.stop(1)
    check("SIGTERM: STOPPING=1", n.lines("STOPPING=1", t) != [])
    check("SIGTERM: exit 0", rc == 0, "rc %s after %.1f s" % (rc, secs))
    st = n.lines("STATUS=", t)
    check("STATUS= says stopping, and stays so", st and st[-1][1] == "STATUS=node 1: stopping",
          repr(st))
    with open(c.log(1)) as f:
        short = [ln for ln in f if "too short for the loop" in ln]
    check("a 400 ms watchdog: a warning says it is too short, and what to set",
          len(short) == 1 and ": warning: systemd watchdog of 400 ms is too short" in short[0] and
          "WatchdogSec=2s or more" in short[0], short)


def test_other_pid(c, n):
    """A restart (no --bootstrap) whose WATCHDOG_PID names another process:
    systemd's watchdog is not for this one, so no pings, but READY all the same."""
    t = time.time()
    start(c, 1, n, "1")
    check("restart: READY=1", n.wait("READY=1", 10.0, t) is not None)
    time.sleep(1.0)
    check("WATCHDOG_PID of another process: no WATCHDOG=1", not n.lines("WATCHDOG=1", t))
    rc, _ = c.stop(1)
    check("restart: SIGTERM exit 0", rc == 0, "rc %s" % rc)


def test_errors_named(c, n):
    """A WATCHDOG_USEC that is no number and a NOTIFY_SOCKET whose file is
    gone: both warnings say what is wrong in words (they said "error 22")."""
    env = dict(os.environ, NOTIFY_SOCKET=os.path.join(c.dir, "gone.sock"), WATCHDOG_USEC="abc")
    logf = open(c.log(1), "a")
    size = logf.tell()
    c.procs[1] = subprocess.Popen([c.bin, "-c", c.config(1)], env=env, stdout=logf,
                                  stderr=subprocess.STDOUT)
    logf.close()
    c.wait_leader()
    rc, _ = c.stop(1)
    with open(c.log(1)) as f:
        text = f.read()[size:]
    check("WATCHDOG_USEC=abc: the warning names the error in words",
          "systemd watchdog settings unusable: WATCHDOG_USEC or WATCHDOG_PID: Invalid argument "
          "(no watchdog)" in text, text[-600:])
    check("NOTIFY_SOCKET gone: the warning names the error in words",
          re.search(r"sd_notify\(.*\) failed: No such file or directory \(logged once\)", text),
          text[-600:])
    check("errors named: SIGTERM exit 0", rc == 0, "rc %s" % rc)


def members(c, i):
    return {m.get(20): m.get(23, 0) for m in c.status(i).get(28, [])}


def test_join(c, n):
    """--join: READY=1 while not a member yet (it must run to be added);
    added by node 1, then removed: STATUS says it was removed, not that it
    waits to be added."""
    c.add_node(2)
    t = time.time()
    start(c, 2, n, "$$", "--join")
    check("--join: READY=1 before being added", n.wait("READY=1", 10.0, t) is not None)
    st = n.wait("STATUS=", 1.0, t)
    check("--join: STATUS says waiting to be added", st and "waiting to be added" in st, st)
    check("--join: WATCHDOG=1", n.wait("WATCHDOG=1", 1.0, t) is not None)
    c.start(1)  # no NOTIFY_SOCKET: the lines seen are node 2's
    c.wait_leader(exclude=(2,))
    admin = c.connect(1)
    rep = admin.call({1: 14, 20: 2, 21: "tls+tcp://127.0.0.1:%d" % c.peer_port[2],
                      22: c.addr(2)})
    added = rep.get(3, 0) == 0 and n.wait("STATUS=", 10.0, t, "node 2: follower of 1")
    check("--join: added, STATUS says follower of 1", added, repr(rep))
    deadline = time.time() + 10.0
    while time.time() < deadline and members(c, 1).get(2) != 1:
        time.sleep(0.1)
    t = time.time()
    rep = admin.call({1: 15, 20: 2})
    admin.close()
    st = n.wait("STATUS=", 10.0, t, "node 2: removed")
    check("--join, then removed: STATUS says removed, with the entry",
          rep.get(3, 0) == 0 and st and re.match(r"STATUS=node 2: removed from the cluster "
                                                 r"\(entry \d+\), term \d+$", st),
          "%r %r" % (rep, n.lines("STATUS=", t)))
    rc, _ = c.stop(2)
    check("--join: SIGTERM exit 0", rc == 0, "rc %s" % rc)
    c.stop(1)


JOURNAL_LINE = re.compile(r"^<(\d)>edgelock node1( term (\d+))?: (debug|info|warning|error): ")
PRIORITY = {"debug": "7", "info": "6", "warning": "4", "error": "3"}


def test_journal_priority(c, n):
    """stderr the journal's stream (JOURNAL_STREAM = its device:inode): every
    line starts with its syslog priority and names the node, and from the
    node's first role line on, the term that line reports; a request's lines
    (debug level) name its connection and request id; another stream (the
    earlier runs' log file without the variable) gets no prefix."""
    path = os.path.join(c.dir, "journal.log")
    logf = open(path, "w")
    st = os.fstat(logf.fileno())
    env = dict(os.environ, JOURNAL_STREAM="%d:%d" % (st.st_dev, st.st_ino))
    p = subprocess.Popen([c.bin, "-c", c.config(1), "--log-level", "debug"], env=env,
                         stdout=logf, stderr=logf)
    logf.close()
    c.procs[1] = p
    c.wait_leader()
    conn = c.connect(1)
    conn.next_id = 4242
    rep = conn.call({1: 1, 9: 5000, 13: "journal"})
    check("journal: a session opens", rep.get(3, 0) == 0 and rep.get(4, 0) > 0, repr(rep))
    conn.close()
    rc, _ = c.stop(1)
    with open(path) as f:
        lines = [ln for ln in f.read().splitlines() if ln]
    parsed = [JOURNAL_LINE.match(ln) for ln in lines]
    check("journal: every line has its level's priority prefix and the node's tag",
          lines and all(m and m.group(1) == PRIORITY[m.group(4)] for m in parsed),
          repr([ln for ln, m in zip(lines, parsed) if not m][:3] or lines[:3]))
    role = next((i for i, ln in enumerate(lines) if "node 1: leader, term" in ln), None)
    term = role is not None and re.search(r"leader, term (\d+)", lines[role]).group(1)
    check("journal: from the role line on, every line names the term it reports",
          role is not None and all(m and m.group(3) == term for m in parsed[role:]),
          repr(lines[role:role + 3] if role is not None else lines[-3:]))
    req = [ln for ln in lines if re.search(r" conn \d+ req 4242: open-session", ln)]
    check("journal: the request and its reply name its connection and request id",
          len(req) == 2 and " client " in req[0] and ": ok, token" in req[1], repr(req))
    with open(c.log(1)) as f:
        plain = [ln for ln in f.read().splitlines()
                 if re.match(r"\S+ edgelock node1( term \d+)?: info:", ln)]
    check("not the journal: no priority prefix, the UTC time to the ms first",
          plain and all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z edgelock ", ln)
                        for ln in plain), repr(plain[:2]))
    check("journal run: SIGTERM exit 0", rc == 0, "rc %s" % rc)


def unit_text():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    with open(os.path.join(root, "dist", "edgelockd.service")) as f:
        return f.read()


def reload_as_unit(c, p):
    """`systemctl reload edgelockd` runs the unit's ExecReload= with
    $MAINPID the daemon's pid: it must be the SIGHUP reload."""
    m = re.search(r"^ExecReload=(.*)$", unit_text(), re.M)
    check("unit: ExecReload= sends SIGHUP to the main process",
          m is not None and m.group(1) == "/bin/kill -HUP $MAINPID",
          m.group(0) if m else "no ExecReload= (systemctl reload fails)")
    if m is None:
        return
    with open(c.log(1)) as f:
        before = f.read().count("SIGHUP: reloaded")
    rc = subprocess.run(m.group(1).replace("$MAINPID", str(p.pid)).split(), timeout=10).returncode

    def reloaded():
        with open(c.log(1)) as f:
            return f.read().count("SIGHUP: reloaded") > before
    check("systemctl reload (its ExecReload= run): the certificates reloaded, still running",
          rc == 0 and eventually(reloaded, 5.0) and p.poll() is None, "rc %d" % rc)


def test_unit_file(c):
    """dist/edgelockd.service as systemd reads it: `systemd-analyze verify`
    finds nothing wrong (its ExecStart pointed at this build's binary, since
    /usr/bin/edgelockd is not installed here) and the hardening keeps the
    exposure score of `systemd-analyze security` at "OK" (below 2.0)."""
    unit = unit_text()
    check("unit: ExecStart runs /usr/bin/edgelockd", "ExecStart=/usr/bin/edgelockd " in unit)
    # its own lines carry their priority; the unprefixed ones are the config
    # errors printed before logging starts: errors, not info (an outside
    # tester's `journalctl -p warning` hid why the unit failed)
    check("unit: SyslogLevel=err (unprefixed lines are the start's errors)",
          re.search(r"^SyslogLevel=err$", unit, re.M) is not None)
    path = os.path.join(c.dir, "edgelockd.service")
    with open(path, "w") as f:
        f.write(unit.replace("ExecStart=/usr/bin/edgelockd ", "ExecStart=%s " % os.path.abspath(c.bin)))
    p = subprocess.run(["systemd-analyze", "verify", path], capture_output=True, text=True)
    check("unit: systemd-analyze verify is clean", p.returncode == 0 and not p.stderr.strip(),
          "rc %d: %s" % (p.returncode, p.stderr[-400:]))
    p = subprocess.run(["systemd-analyze", "security", "--offline=yes", path],
                       capture_output=True, text=True)
    m = re.search(r"Overall exposure level for edgelockd.service: ([0-9.]+)", p.stdout + p.stderr)
    check("unit: systemd-analyze security exposure below 2.0", m and float(m.group(1)) < 2.0,
          (p.stdout + p.stderr)[-300:])


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    c = Cluster(build, n=1)
    n = Notify(os.path.join(c.dir, "notify.sock"))
    try:
        test_unit_file(c)
        for test in (test_watched, test_other_pid, test_errors_named, test_join,
                     test_journal_priority):
            with n.lock:
                n.msgs.clear()
            test(c, n)
    finally:
        c.stop_all()
        n.close()
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
