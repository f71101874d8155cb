#!/usr/bin/python3
"""ops_test.py BUILD - what an operator meets running edgelockd on real
daemons over TLS on loopback (docs/operations.md):

  (a) descriptors: three nodes under an open-files limit of 1,024 (soft and
      hard, as systemd's default soft limit was for the old unit), then
      1,100 idle TCP connections to the leader's metrics port and 1,100 to
      its client port while a client opened before keeps committing (600
      entries: snapshots and WAL writes open files). The leader lowers
      max_clients to what the limit holds (a warning naming the numbers),
      serves and commits throughout, never exits, never runs out of
      descriptors; the metrics server serves at most a few connections,
      closes idle ones within seconds, and answers a scrape meanwhile.
      Before: the connections took every descriptor and the next storage
      open failed with EMFILE (exit 3).
  (b) a full disk (a small tmpfs as the data directory, root only): the node
      stops with exit 3 and says to free space first; with space it
      restarts with its state.
  (b1) a read-only file system (root only): a start on it exits 2 (which
      the unit retries), saying to mend and remount it, the sandbox's
      StateDirectory= hint only under systemd; --check-config exits 1. The
      same words and exit when writes fail with EROFS on a file system that
      says it is writable (ext4 since Linux 6.12; the shim). A data_dir its
      own user may not write says chmod, not chown.
  (b2) a slow disk (an LD_PRELOAD shim, tests/daemon/slow_fsync.c, makes
      fdatasync take 400 ms): one warning names the write's duration, not
      one per write.
  (c) a removed node: the admin lines name the client; every node logs the
      membership changes as they apply (added as a learner, promoted,
      removed) with the entry; the members say node 4's link closed and is
      not redialed, as it is no longer a member; node 4 removed
      stops by itself (exit 0); started again on its data it refuses at once
      (exit 1) saying how to come back; without its "removed" file (stopped
      before it wrote it) it stops by itself again.
  (d) a node that is no member dialing for 6 s: each member logs the
      refusal once, not at every dial.
  (e) DATA_DIR/LOCK removed while node 1 runs: a second daemon on that
      data_dir (other ports) is refused, naming it.
  (f) whose data a data_dir holds (DATA_DIR/owner): node 3's config on node
      2's data is refused, by --check-config too, and node 2 still starts on
      it; data without the file (the last release) starts and gets it; a
      damaged file is refused.

Processes are started and stopped by PID. Prints "N passed, N failed".
"""
import errno
import os
import random
import re
import resource
import selectors
import socket
import subprocess
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elcluster import (Cluster, Checks, eventually, free_ports, mount_tmpfs,  # noqa: E402
                       umount_tmpfs)

check = Checks()
NOFILE = 1024
FLOOD = 1100


def log_text(c, i):
    with open(c.log(i)) as f:
        return f.read()


def start_limited(c, i, *flags):
    """c.start with RLIMIT_NOFILE = NOFILE, soft and hard."""
    def limit():
        resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))
    logf = open(c.log(i), "a")
    c.procs[i] = subprocess.Popen([c.bin, "-c", c.config(i)] + list(flags), stdout=logf,
                                  stderr=subprocess.STDOUT, preexec_fn=limit)
    logf.close()
    return c.procs[i]


def open_session(conn, label):
    return conn.call({1: 1, 9: 60000, 13: label, 14: random.getrandbits(64)}).get(4, 0)


def cycles(conn, s, seq, name, n):
    """n acquire/release pairs on session s; (ok count, next seq)."""
    ok = 0
    for _ in range(n):
        rep = conn.call({1: 4, 4: s, 5: seq, 6: name}, timeout=10.0)
        rel = conn.call({1: 5, 4: s, 5: seq + 1, 6: name, 11: rep.get(11, 0)}, timeout=10.0)
        seq += 2
        ok += rep.get(3, 0) == 0 and rep.get(11, 0) > 0 and rel.get(3, 0) == 0
    return ok, seq


def flood(port, n, within=5.0):
    """n idle TCP connections to port, dialled at once (non-blocking): the
    ones the kernel completed within `within` seconds. Dialled one by one,
    those past the listen backlog waited out SYN retransmits: 40 s a run."""
    pending, done = {}, []
    sel = selectors.DefaultSelector()
    for _ in range(n):
        k = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        k.setblocking(False)
        if k.connect_ex(("127.0.0.1", port)) not in (0, errno.EINPROGRESS):
            k.close()
            break
        pending[k.fileno()] = k
        sel.register(k, selectors.EVENT_WRITE)
    deadline = time.time() + within
    while pending and time.time() < deadline:
        for key, _ in sel.select(timeout=max(0.0, deadline - time.time())):
            k = pending.pop(key.fd)
            sel.unregister(k)
            if k.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR) == 0:
                k.setblocking(True)
                done.append(k)
            else:
                k.close()
    for k in pending.values():
        k.close()
    sel.close()
    return done


def closed_by_peer(sock, timeout):
    """True when the far end closed sock within timeout (EOF or reset)."""
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except OSError:
        return False


def fds(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return -1


def test_descriptors(build):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))  # this process: 2,200 sockets
    c = Cluster(build, 3, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "ops-fds-%d" % os.getpid()))
    mports = free_ports(3)
    murl = {i: "http://127.0.0.1:%d/metrics" % mports[i - 1] for i in (1, 2, 3)}
    socks = []
    try:
        for i in (1, 2, 3):
            start_limited(c, i, "--bootstrap", "--metrics", murl[i])
        leader = c.wait_leader()
        pid = c.procs[leader].pid
        log = log_text(c, leader)
        check("fds: the start names the limit and lowers max_clients to fit it",
              re.search(r"open files limit 1024 \(RLIMIT_NOFILE, hard 1024\) is below \[limits\] "
                        r"max_clients = 1024 \+ \d+ .*max_clients lowered to \d+", log),
              [ln for ln in log.splitlines() if "open files" in ln])
        conn = c.connect(leader)
        s = open_session(conn, "fds")
        seq = 1
        socks += flood(mports[leader - 1], FLOOD)
        socks += flood(c.client_port[leader], FLOOD)
        print("     %d idle connections opened; the leader holds %d descriptors"
              % (len(socks), fds(pid)), flush=True)
        most = fds(pid)
        ok, seq = cycles(conn, s, seq, "fds-a", 150)
        most = max(most, fds(pid))
        check("fds: commits go on during the flood (150 lock cycles)", ok == 150, "%d ok" % ok)
        quiet = socks[:50]  # metrics: the first served, then refused at once
        check("fds: the metrics server closed idle connections within 3 s",
              all(closed_by_peer(k, 3.0) for k in quiet))
        try:
            with urllib.request.urlopen(murl[leader], timeout=3) as r:
                body = r.read().decode()
            scraped = "edgelock_term" in body
        except OSError as e:
            scraped = repr(e)
        check("fds: a scrape is answered during the flood", scraped is True, scraped)
        socks += flood(mports[leader - 1], FLOOD)  # and again, once the first are gone
        # a session of its own: the first may be past its 60 s lease on a slow machine
        ok, seq = cycles(conn, open_session(conn, "fds-b"), 1, "fds-b", 150)
        most = max(most, fds(pid))
        check("fds: commits go on during a second flood (150 lock cycles)", ok == 150,
              "%d ok" % ok)
        print("     at most %d descriptors seen in the leader (limit %d)" % (most, NOFILE))
        check("fds: the leader stays below its open-files limit", 0 < most < NOFILE - 32,
              repr(most))
        check("fds: the leader still runs", c.procs[leader].poll() is None,
              "exit %r" % c.procs[leader].poll())
        conn.close()
        for k in socks:
            k.close()
        socks = []
        log = log_text(c, leader)
        check("fds: no descriptor ran out, no storage failure",
              "Too many open files" not in log and "storage" not in
              "".join(ln for ln in log.splitlines() if "error" in ln), log[-600:])
        check("fds: the metrics server logs its refusals with a count",
              re.search(r"metrics: \d+ connection\(s\) refused since the last such line", log))
        check("fds: a new client is served after the flood",
              eventually(lambda: c.status(leader).get(24, 0) > 0, 15.0))
    finally:
        for k in socks:
            k.close()
        for i in sorted(c.procs):
            rc, _ = c.stop(i)
            check("fds: node%d exits 0 on SIGTERM" % i, rc == 0, repr(rc))
        check.no_sanitizer_reports(c)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def leads(c, i):
    try:
        return c.status(i).get(23) == 3
    except (OSError, EOFError):
        return False


def test_disk_full(build):
    c = Cluster(build, 1, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "ops-disk-%d" % os.getpid()))
    data = c.data(1)
    if not mount_tmpfs(data, "2m", "the full disk"):
        return
    ballast = os.path.join(data, "ballast")
    try:
        c.start(1, "--bootstrap")
        c.wait_leader()
        conn = c.connect(1)
        s = open_session(conn, "disk")
        cycles(conn, s, 1, "before", 5)
        fd = os.open(ballast, os.O_WRONLY | os.O_CREAT, 0o600)
        try:  # every free page of the file system
            while os.write(fd, b"\0" * 4096) > 0:
                pass
        except OSError:
            pass
        os.close(fd)
        seq = 11
        try:
            for _ in range(2000):
                if c.procs[1].poll() is not None:
                    break
                _, seq = cycles(conn, s, seq, "full", 1)
        except (OSError, EOFError):
            pass
        try:
            rc = c.procs[1].wait(10.0)
        except subprocess.TimeoutExpired:
            rc = None
        log = log_text(c, 1)
        lines = [ln for ln in log.splitlines() if "storage" in ln and "error" in ln]
        check("disk full: the node stops with exit 3", rc == 3, "exit %r" % rc)
        check("disk full: it says to free space before a restart",
              any("disk full" in ln and "free space on its file system FIRST, then restart"
                  in ln for ln in lines), lines)
        c.procs.pop(1, None)
        os.unlink(ballast)
        c.start(1)
        check("disk full: with space again the node restarts and leads",
              eventually(lambda: leads(c, 1), 15.0))
    finally:
        c.stop_all()
        umount_tmpfs(data)


def start_exit(c, i, *flags, env=None):
    """Node i started with flags (and env added): (exit status within 5 s,
    or None if it runs, the log's new lines)."""
    c.stop(i)  # one left running by a failed check before
    before = len(log_text(c, i))
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        p = c.start(i, *flags)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    rc = exit_within(p, 5.0)
    if rc is not None:
        c.procs.pop(i, None)
    return rc, log_text(c, i)[before:]


def test_read_only(build):
    """A data_dir on a file system mounted read-only is a start failure
    that may pass (exit 2, which the unit retries), not a config error
    (exit 1: the unit stayed down after the remount), saying the file system
    is read-only and what to do; the systemd sandbox's StateDirectory= hint
    only under systemd ($INVOCATION_ID). --check-config still says it as an
    error (exit 1). The words are those of a storage failure on a file
    system the kernel made read-only while the node ran (exit 3), which a
    restart then meets the same way. Remounted read-write, it starts. A
    tmpfs of its own: root only; skipped, saying so, otherwise."""
    c = Cluster(build, 1, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "ops-ro-%d" % os.getpid()))
    data = c.data(1)
    if not mount_tmpfs(data, "8m", "the read-only file system"):
        return
    words = "data_dir %s is on a read-only file system: the file system went read-only" % data
    try:
        c.start(1, "--bootstrap")
        c.wait_leader()
        c.stop(1)
        subprocess.run(["mount", "-o", "remount,ro", data], check=True)
        rc, out = start_exit(c, 1)
        check("read-only data_dir: exit 2 (retried by the unit), not 1",
              rc == 2, "exit %r: %s" % (rc, out[-600:]))
        check("read-only data_dir: says so and to mend and remount the disk, no sandbox hint",
              words in out and "remount it read-write; not starting (exit 2" in out and
              "StateDirectory" not in out and "chown" not in out, out[-600:])
        rc, out = start_exit(c, 1, env={"INVOCATION_ID": "0123abcd"})
        check("read-only data_dir under systemd: exit 2, and the sandbox's way out too",
              rc == 2 and words in out and "ReadWritePaths=%s to the unit" % data in out,
              "exit %r: %s" % (rc, out[-800:]))
        chk = subprocess.run([c.bin, "--check-config", c.config(1)], capture_output=True,
                             text=True, timeout=20)
        check("read-only data_dir: --check-config says it, exit 1",
              chk.returncode == 1 and words in chk.stderr, chk.stderr[-600:])
        subprocess.run(["mount", "-o", "remount,rw", data], check=True)
        c.start(1)
        check("read-only data_dir remounted read-write: the node starts and leads",
              eventually(lambda: leads(c, 1), 15.0))
    finally:
        c.stop_all()
        umount_tmpfs(data)


def test_refused_writes(build):
    """A file system that refuses writes with EROFS while statvfs and the
    mount still say read-write (ext4's errors=remount-ro since Linux 6.12;
    here the LD_PRELOAD shim, tests/daemon/slow_fsync.c): the start fails
    opening LOCK, exit 2 as on a read-only mount, and now says the file
    system is read-only and what to do (before: only "cannot open lock
    file" and "storage I/O error"). No root needed."""
    shim = os.path.join(os.path.abspath(build), "tests", "slow_fsync.so")
    c = Cluster(build, 1, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "ops-erofs-%d" % os.getpid()))
    flag = os.path.join(c.dir, "erofs")
    env = {"LD_PRELOAD": shim, "EL_EROFS_FLAG": flag, "EL_EROFS_DIR": c.data(1),
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    try:
        c.start(1, "--bootstrap")
        c.wait_leader()
        c.stop(1)
        open(flag, "w").close()
        rc, out = start_exit(c, 1, env=env)
        check("writes refused with EROFS (ext4 since 6.12): exit 2, saying the file system "
              "is read-only and what to do",
              rc == 2 and "LOCK: Read-only file system" in out and
              "data_dir %s is on a read-only file system: the file system went read-only"
              % c.data(1) in out and "remount it read-write" in out,
              "exit %r: %s" % (rc, out[-800:]))
        os.unlink(flag)
        rc, out = start_exit(c, 1, env=env)
        check("writes refused with EROFS, then allowed again: the node starts and leads",
              rc is None and eventually(lambda: leads(c, 1), 15.0), "exit %r: %s"
              % (rc, out[-500:]))
    finally:
        c.stop_all()


def test_unwritable(build):
    """A data_dir its own user may not write (mode 0500) says chmod u+rwx,
    not chown (which would change nothing); another user's still says
    chown. Checked as uid 65534 (setpriv): root only; skipped otherwise."""
    if os.geteuid() != 0 or subprocess.run(["which", "setpriv"],
                                           capture_output=True).returncode != 0:
        print("skip the unwritable data_dir: needs root and setpriv")
        return
    c = Cluster(build, 1, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "ops-unwritable-%d" % os.getpid()))
    os.chmod(c.dir, 0o755)
    data = c.data(1)
    os.makedirs(data)
    os.chmod(c.config(1), 0o644)
    for owner, want, not_want in ((65534, "chmod u+rwx %s" % data, "chown"),
                                  (0, "chown it to the user edgelockd runs as", "chmod")):
        os.chown(data, owner, owner)
        os.chmod(data, 0o500)
        out = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                              c.bin, "--check-config", c.config(1)],
                             capture_output=True, text=True, timeout=20)
        line = [ln for ln in out.stderr.splitlines() if "data_dir" in ln]
        check("unwritable data_dir owned by %s: says %s" % (
            "the daemon's user" if owner else "another user", want.split(" %s" % data)[0]),
            out.returncode == 1 and len(line) == 1 and want in line[0] and
            not_want not in line[0], out.stderr[-600:])


def test_slow_disk(build):
    """fdatasync made 400 ms slow (over half the 600 ms election timeout)
    for a few writes: one warning with the duration, at most one per 10 s."""
    shim = os.path.join(os.path.abspath(build), "tests", "slow_fsync.so")
    c = Cluster(build, 1, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "ops-slow-%d" % os.getpid()))
    flag = os.path.join(c.dir, "slow")
    env = {"LD_PRELOAD": shim, "EL_SLOW_FSYNC_FLAG": flag, "EL_SLOW_FSYNC_MS": "400",
           # the ASan build's runtime must otherwise come first in the list
           "ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") + ":verify_asan_link_order=0"}
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        c.start(1, "--bootstrap")
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
    try:
        c.wait_leader()
        conn = c.connect(1)
        s = open_session(conn, "slow")
        open(flag, "w").close()
        t0 = time.time()
        ok, _ = cycles(conn, s, 1, "slow", 3)  # 6 writes, each 400 ms
        os.unlink(flag)
        secs = time.time() - t0
        conn.close()
        lines = [ln for ln in log_text(c, 1).splitlines() if "fdatasync" in ln]
        check("slow disk: the writes went on, slowly (%.1f s)" % secs, ok == 3 and secs >= 2.0,
              "%d ok" % ok)
        check("slow disk: one warning naming the write's duration and the bound",
              len(lines) == 1 and re.search(r": warning: storage: a write \+ fdatasync of \d+ "
                                            r"entr(y|ies) took (4\d\d|[5-9]\d\d) ms \(over 300 ms",
                                            lines[0]), lines)
    finally:
        c.stop_all()
        check.no_sanitizer_reports(c)


def peer_addr(c, i):
    return "tls+tcp://127.0.0.1:%d" % c.peer_port[i]


def knows_leader(c, i):
    try:
        return c.procs[i].poll() is None and c.status(i).get(17, 0) > 0
    except (OSError, EOFError, KeyError):
        return False


def members(c, i):
    return {m.get(20): m.get(23, 0) for m in c.status(i).get(28, [])}


def exit_within(p, secs):
    try:
        return p.wait(secs)
    except subprocess.TimeoutExpired:
        return None


def test_removed(c):
    c.add_node(4)
    c.start(4, "--join")
    # at whichever node leads: an election under a loaded run must not
    # leave node 4 half added, or a voter once stopped
    adder, rep = c.call_leader({1: 14, 20: 4, 21: peer_addr(c, 4), 22: c.addr(4)},
                               exclude=(4,))
    check("removed: node 4 added", rep.get(3, 0) == 0, repr(rep))
    check("removed: node 4 a voter",
          eventually(lambda: members(c, adder).get(4) == 1, 20.0), repr(members(c, adder)))
    remover, rep = c.call_leader({1: 15, 20: 4}, exclude=(4,))
    check("removed: members remove 4 accepted", rep.get(3, 0) == 0, repr(rep))
    for what, at in (("member-add", adder), ("member-remove", remover)):
        log = log_text(c, at)
        check("admin line names the client and its connection: %s" % what,
              re.search(r"client client conn \d+ req \d+: admin %s for node 4: ok" % what, log),
              [ln for ln in log.splitlines() if "admin" in ln])
    rc = exit_within(c.procs[4], 20.0)
    check("removed: node 4 stops by itself, exit 0", rc == 0, "exit %r" % rc)
    c.procs.pop(4, None)
    check_membership_lines(c)
    marker = os.path.join(c.data(4), "removed")
    check("removed: it leaves data_dir/removed", os.path.exists(marker))
    for flags in ((), ("--join",)):
        t0 = time.time()
        rc = exit_within(c.start(4, *flags), 10.0)
        c.stop(4)
        tail = log_text(c, 4)[-1500:]
        check("removed: started again on its data%s, it refuses at once, exit 1"
              % (" with --join" if flags else ""), rc == 1 and time.time() - t0 < 5, "exit %r" % rc)
        check("removed: the refusal says it was removed and how to come back%s"
              % (" (--join)" if flags else ""),
              "was removed from the cluster" in tail and "start it with --join" in tail and
              "members add 4" in tail, tail)
    os.unlink(marker)  # as a node stopped before it wrote the file, or an older release
    rc = exit_within(c.start(4), 25.0)
    c.stop(4)
    tail = log_text(c, 4)[-2000:]
    check("removed: without the file, a log that ends with its removal stops it again, exit 0",
          rc == 0 and "its log ends with its removal" in tail, "exit %r: %s" % (rc, tail))
    check("removed: ... and writes the file for the next start", os.path.exists(marker))


def check_membership_lines(c):
    """Each change applied is a line on every node, with its entry; a
    removed node's link is said closed for good, not redialed."""
    found = {}
    for i in (1, 2, 3, 4):  # node 4 too: the first configuration it applies adds it
        text = log_text(c, i)
        found[i] = [re.search(r"info: membership \(entry (\d+)\): node 4%s %s"
                              % (" \(this node\)" if i == 4 else "", what), text)
                    for what in ("added as a learner", "promoted to voter", "removed")]
    check("membership: every node logs node 4 added, promoted and removed, at the same entries",
          all(all(found[i]) for i in found) and
          len({tuple(m.group(1) for m in found[i]) for i in found}) == 1,
          {i: [m and m.group(0) for m in found[i]] for i in found})
    # its link closed then, or down already (a redial backing off under load)
    closed = lambda i: re.search(r"net: (link to node 4 closed|no link to node 4); it is no "
                                 r"longer a member: not redialing", log_text(c, i)) is not None
    check("membership: each member says node 4's link closed and is not redialed",
          eventually(lambda: all(closed(i) for i in (1, 2, 3)), 5.0),
          {i: closed(i) for i in (1, 2, 3)})
    check("membership: no member claims to redial node 4",
          not any("link to node 4 lost; redialing" in log_text(c, i) for i in (1, 2, 3)))


def test_refusal_rate(c):
    """Node 5, no member and in no member's [peers], dials every 1 to 2 s."""
    c.add_node(5)
    c.start(5, "--join")
    time.sleep(6.0)  # 3 to 6 dials: the old code logged each
    c.stop(5)
    counts = {i: len(re.findall(r"peer connection from \S+ \(node 5\): not a member",
                                log_text(c, i))) for i in (1, 2, 3)}
    check("refusal rate: each member logs a non-member's refusal once in 6 s",
          all(n == 1 for n in counts.values()), repr(counts))


def cli(c, *args):
    env = dict(os.environ, EDGELOCK_ENDPOINTS=",".join(c.addr(i) for i in (1, 2, 3)),
               EDGELOCK_CA=c.certs + "/ca.pem", EDGELOCK_CERT=c.certs + "/client.pem")
    return subprocess.run([os.path.join(c.build, "bin", "edgelock")] + list(args), env=env,
                          capture_output=True, text=True, timeout=60)


def test_swapped_addrs(c):
    """members add ID CLIENT_ADDR PEER_ADDR (the two given swapped): the
    leader dialed the node's client port, which refused its node
    certificate, and both logged it every 2 s for good (an outside tester).
    A node whose hello (refused: not a member yet) announced its addresses
    the other way round is refused at members add, exit 1, the leader's log
    saying so; a node added so before it dialed is said swapped once, at
    warning, with the commands that mend it; the leader's failed dials and
    the node's refusals are one line each, not one per dial; once the node
    is removed, the leader says its refusals ended (info)."""
    leader = c.wait_leader()
    subprocess.run(["rm", "-rf", c.data(5)], check=True)
    c.start(5, "--join")  # node 5 of test_refusal_rate: in no member's [peers]
    eventually(lambda: "(node 5): not a member" in log_text(c, leader)[-3000:], 10.0)
    r = cli(c, "members", "add", "5", c.addr(5), peer_addr(c, 5))
    c.stop(5)
    swapped = ("PEER_ADDR and CLIENT_ADDR given swapped: node 5 announces peer address %s, "
               "client address %s: members add 5 %s %s"
               % (peer_addr(c, 5), c.addr(5), peer_addr(c, 5), c.addr(5)))
    check("swapped: members add refused, exit 1, saying swapped as the node's hello said",
          r.returncode == 1 and "swapped" in r.stderr and
          eventually(lambda: any(swapped in log_text(c, i) for i in (1, 2, 3)), 3.0),
          "exit %d: %s" % (r.returncode, r.stderr.strip()))
    subprocess.run(["rm", "-rf", c.data(4)], check=True)  # removed by test_removed
    r = cli(c, "members", "add", "4", c.addr(4), peer_addr(c, 4), "--learner")
    before = {i: len(log_text(c, i)) for i in (1, 2, 3)}
    c.start(4, "--join")
    time.sleep(9.0)  # 4 or more redials of the leader every 2 s
    text = log_text(c, leader)[before[leader]:]
    dials = re.findall(r"our connection to node 4: a frame after our proof", text)
    node4 = re.findall(r"a node certificate \(node%d\) on the client port" % leader,
                       log_text(c, 4))
    check("swapped: the add taken (node 4 said nothing yet), then said swapped once, at warning",
          r.returncode == 0 and len(re.findall(r"warning: peer connection \(node 4\): node 4's "
                                               r"peer and client addresses look swapped", text)) == 1
          and "`edgelock members add 4 %s %s`" % (peer_addr(c, 4), c.addr(4)) in text,
          "exit %d %s: %s" % (r.returncode, r.stderr.strip(), text[-1500:]))
    check("swapped: the leader's failed dials to node 4's client port, one line in 9 s",
          len(dials) == 1, "%d: %s" % (len(dials), text[-1500:]))
    check("swapped: node 4's refusals of the leader's certificate, one line in 9 s",
          len(node4) == 1, "%d lines" % len(node4))
    r = cli(c, "members", "remove", "4")
    c.stop(4)
    ended = lambda: re.search(r"info: peer: our connection to node 4: none refused for 10 s now "
                              r"\(\d+ in all\): ended", log_text(c, leader)) is not None
    check("swapped: once node 4 is removed, the leader says its refusals ended",
          r.returncode == 0 and eventually(ended, 20.0), r.stderr.strip())


def test_lock_removed(c):
    """DATA_DIR/LOCK removed while node 1 runs (a "stale pidfile" cleaned
    up): a second edgelockd on that data_dir, on ports of its own, is
    refused. Before, it made a new LOCK, locked it and recovered the live WAL."""
    lock = os.path.join(c.data(1), "LOCK")
    os.unlink(lock)
    ports = free_ports(2)
    p = subprocess.Popen([c.bin, "-c", c.config(1), "--peer-addr",
                          "tls+tcp://127.0.0.1:%d" % ports[0], "--peer",
                          "1=tls+tcp://127.0.0.1:%d" % ports[0], "--client-addr",
                          "tls+tcp://127.0.0.1:%d" % ports[1]],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    rc = exit_within(p, 10.0)
    if rc is None:
        p.kill()
    out = p.communicate()[0]
    check("LOCK removed: a second daemon on the data_dir is refused, exit 2", rc == 2,
          "exit %r: %s" % (rc, out[-600:]))
    check("LOCK removed: it says a node runs there and what to do",
          "data_dir %s is in use by a running edgelockd (pid unknown: its LOCK file, which "
          "names it, was removed): this node already runs" % c.data(1) in out and
          "needs its own data_dir" in out, out[-600:])
    check("LOCK removed: the refused start made no new LOCK", not os.path.exists(lock))
    check("LOCK removed: node 1 still runs and serves",
          eventually(lambda: knows_leader(c, 1), 10.0))


OWNER_LINE = r"node %d crc32c [0-9a-f]{8}\n\Z"


def owner_of(c, i):
    try:
        with open(os.path.join(c.data(i), "owner")) as f:
            return f.read()
    except OSError as e:
        return repr(e)


def start_refused(c, i, *flags):
    """Node i's config started with flags: (exit status within 10 s, its log's new lines)."""
    before = len(log_text(c, i))
    rc = exit_within(c.start(i, *flags), 10.0)
    c.stop(i)
    return rc, log_text(c, i)[before:]


def test_owner(c):
    """Nodes 2 and 3 stopped, node 3's config on node 2's data is refused
    (before: it ran, and won elections as node 3 with node 2's votes and
    log), --check-config says so too, and node 2 still starts on it. Node
    3's data without its owner file (as the last release left it) starts
    and gets the file; a damaged file is refused."""
    for i in (2, 3):
        c.stop(i)
    check("owner: each data_dir names its node", all(
        re.match(OWNER_LINE % i, owner_of(c, i)) for i in (1, 2, 3)),
        repr([owner_of(c, i) for i in (1, 2, 3)]))
    rc, tail = start_refused(c, 3, "--data-dir", c.data(2))
    check("owner: node 3 on node 2's data_dir is refused at once, exit 1 (the unit does not restart it)", rc == 1,
          "exit %r: %s" % (rc, tail[-600:]))
    check("owner: the refusal names both nodes and what to do",
          "data_dir %s holds node 2's data (%s/owner), not node 3's ([node] id)"
          % (c.data(2), c.data(2)) in tail and "start this one only with node 2's config"
          in tail and "wipe it and start node 3 with --join" in tail, tail[-900:])
    chk = subprocess.run([c.bin, "--check-config", c.config(3), "--data-dir", c.data(2)],
                         capture_output=True, text=True, timeout=20)
    check("owner: --check-config says the same, exit 1", chk.returncode == 1 and
          "edgelockd: %s: data_dir %s holds node 2's data" % (c.config(3), c.data(2))
          in chk.stderr, "exit %d: %s" % (chk.returncode, chk.stderr[-600:]))
    c.start(2)
    c.start(3)
    check("owner: node 2 (and node 3) start on their own data afterwards",
          eventually(lambda: knows_leader(c, 2) and knows_leader(c, 3), 25.0) and
          re.match(OWNER_LINE % 2, owner_of(c, 2)), owner_of(c, 2))
    c.stop(3)
    os.unlink(os.path.join(c.data(3), "owner"))  # data of the last release: no such file
    before = len(log_text(c, 3))
    c.start(3)
    check("owner: data_dir without the file (last release) starts and gets it",
          eventually(lambda: knows_leader(c, 3), 20.0)
          and re.match(OWNER_LINE % 3, owner_of(c, 3)) and
          "no owner file (data of an earlier release): recording node 3" in
          log_text(c, 3)[before:], owner_of(c, 3))
    c.stop(3)
    good = owner_of(c, 3)
    with open(os.path.join(c.data(3), "owner"), "w") as f:
        f.write(good.replace("node 3 ", "node 2 "))  # a flipped digit: its checksum is 3's
    rc, tail = start_refused(c, 3)
    check("owner: a damaged owner file is refused, exit 1, saying so",
          rc == 1 and "%s/owner is damaged" % c.data(3) in tail, "exit %r: %s"
          % (rc, tail[-600:]))
    with open(os.path.join(c.data(3), "owner"), "w") as f:
        f.write(good)
    c.start(3)


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    random.seed(int(os.environ.get("SEED", "1")))
    for t in (test_descriptors, test_disk_full, test_read_only, test_refused_writes,
              test_unwritable, test_slow_disk):
        try:
            t(build)
        except Exception as e:  # noqa: BLE001 - a crashed step fails, the rest still run
            check(t.__name__, False, "raised %r" % (e,))
    c = Cluster(build, 3)
    try:
        c.start_all(bootstrap=True)
        c.wait_leader()
        for t in (test_removed, test_refusal_rate, test_swapped_addrs, test_lock_removed,
                  test_owner):
            try:
                t(c)
            except Exception as e:  # noqa: BLE001
                check(t.__name__, False, "raised %r" % (e,))
    finally:
        c.stop_all()
        check.no_sanitizer_reports(c)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
