#!/usr/bin/python3
"""recovery_test.py BUILD - backup, restore and the lost-quorum procedure on
real daemons.

Backup and restore: three edgelockd over TLS hold a lock and a session;
`edgelock snapshot save` writes a backup; a NEW cluster of three, each node
seeded with `edgelockd restore BACKUP`, starts normally with the backup's
sessions ended (EEXPIRED) and the locks they held in lock-delay (60 s,
the cap), and grants the next lock a higher token. Nodes restored
with other [peers] lists refuse each other; a backup of another format
version is named as such.
A damaged backup and a restore over existing state are refused; a restore
that runs out of space (a small tmpfs, root only) removes what it wrote and
a retry with room works; so does a --bootstrap whose first write finds the
disk full, and a data directory whose WAL holds no whole batch (what that
left before, or a crash in the first write) is taken as empty: a plain
start says so, --bootstrap runs over it. The leader's backup line names the client.
In the restored cluster, a follower's incarnation file damaged (a flipped
bit: the checksum refuses it), an old release's line with a flipped
generation (the others' nonce: refused both ways, nobody stops) and the
file lost (the node stops, saying not to wipe it): each mended by copying
another member's file.

Lost quorum: two of the three are killed for good (SIGKILL, data
directories set aside) and the survivor too. The survivor restarts with
--force-new-cluster: it must lead alone (one member), keep the lock with its
token and the session, and grant the next lock a higher token; a plain
restart after that keeps the one-member cluster. The guards:
--force-new-cluster on an empty data directory and together with
--bootstrap are refused with a message. Then the step the docs forbid: the
two old members restarted on their old data stop by themselves, saying so
(the survivor's data is of a new incarnation and refuses theirs), and the
survivor leads on alone with rising tokens.

Prints "N passed, N failed". Needs Debian's python3-cbor2.
"""
import os
import random
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elcluster import (Cluster, Checks, eventually, free_ports, mount_tmpfs,  # noqa: E402
                       umount_tmpfs)

check = Checks()




def members(c, i):
    return {m.get(20): m.get(23, 0) for m in c.status(i).get(28, [])}


def hold(c, leader, name, ttl=60000, mode=0):
    """A session on the leader holding lock name; (session, token)."""
    conn = c.connect(leader)
    try:
        s = conn.call({1: 1, 9: ttl, 13: "survivor-test", 14: random.getrandbits(64)}).get(4, 0)
        rep = conn.call({1: 4, 4: s, 5: 1, 6: name, 7: mode})
        return s, rep.get(11, 0)
    finally:
        conn.close()


def cli(c, *args):
    env = dict(os.environ, EDGELOCK_ENDPOINTS=",".join(c.addr(i) for i in sorted(c.procs)),
               EDGELOCK_CA=c.certs + "/ca.pem", EDGELOCK_CERT=c.certs + "/client.pem")
    return subprocess.run([os.path.join(c.build, "bin", "edgelock")] + list(args), env=env,
                          capture_output=True, text=True, timeout=60)


def test_backup_fresh(c):
    """A backup of a new cluster whose lock table never had an entry: the
    snapshot was named by the table's last index, 0, which also means "a new
    snapshot", and every save failed (the CLI retried and gave up)."""
    c.wait_leader()
    backup = os.path.join(c.dir, "fresh.snap")
    r = cli(c, "snapshot", "save", backup)
    check("snapshot save of a new cluster: exit 0 and the file written",
          r.returncode == 0 and os.path.exists(backup) and os.path.getsize(backup) > 0,
          r.stdout + r.stderr)
    n = Cluster(c.build, 1, tmp=os.path.join(c.dir, "fresh-restored"))
    try:
        out = subprocess.run([n.bin, "restore", backup, "-c", n.config(1)],
                             capture_output=True, text=True, timeout=30)
        check("restore of a new cluster's backup: exit 0", out.returncode == 0, out.stderr[-300:])
        n.start(1)
        check("... and the restored node leads", n.wait_leader() == 1)
        # Its WAL deleted beside the snapshot (an operator cleaning up): the
        # segments held its term, vote and newest entries; refused, with
        # the way back, not started on the snapshot alone.
        n.stop(1)
        for f in os.listdir(n.data(1)):
            if f.startswith("wal-"):
                os.unlink(os.path.join(n.data(1), f))
        before = len(open(n.log(1)).read())
        rc = n.start(1).wait(timeout=15)
        n.procs.pop(1, None)
        tail = open(n.log(1)).read()[before:]
        check("WAL deleted beside the snapshot: the start is refused, saying so and the "
              "way back", rc != 0 and "no WAL batch" in tail and "members remove 1" in tail,
              "exit %r: %s" % (rc, tail[-500:]))
    finally:
        n.stop_all()


def owner_of(data):
    try:
        with open(os.path.join(data, "owner")) as f:
            return f.read()
    except OSError as e:
        return repr(e)


def test_backup_restore(c):
    leader = c.wait_leader()
    s, token = hold(c, leader, "door")
    # short leases: the lock-delay after the restore is their TTL
    quick, _ = hold(c, leader, "quick", ttl=6000)
    readers = [hold(c, leader, "reads", ttl=6000, mode=1)[0] for _ in range(2)]
    backup = os.path.join(c.dir, "backup.snap")
    r = cli(c, "snapshot", "save", backup)
    check("snapshot save: exit 0 and the file written",
          r.returncode == 0 and os.path.getsize(backup) > 0, r.stdout + r.stderr)
    with open(c.log(leader)) as f:
        log = f.read()
    check("snapshot save: the leader's line names the client and its connection",
          re.search(r"client client conn \d+ req \d+: snapshot for a backup: index", log),
          [ln for ln in log.splitlines() if "backup" in ln][-3:])
    c.stop_all()
    # a new cluster in new data directories, seeded from the backup
    n = Cluster(c.build, 3, tmp=os.path.join(c.dir, "restored"))
    try:
        outs = [subprocess.run([n.bin, "restore", backup, "-c", n.config(i)],
                               capture_output=True, text=True, timeout=30) for i in sorted(n.peer_port)]
        check("restore: every node seeded (exit 0)", all(o.returncode == 0 for o in outs),
              "".join(o.stderr[-300:] for o in outs))
        owners = [owner_of(n.data(i)) for i in sorted(n.peer_port)]
        check("restore: each data_dir names its node in its owner file (owner.c)",
              all(re.match(r"node %d crc32c [0-9a-f]{8}\n\Z" % i, o)
                  for i, o in zip(sorted(n.peer_port), owners)), repr(owners))
        again = subprocess.run([n.bin, "restore", backup, "-c", n.config(1)],
                               capture_output=True, text=True, timeout=30)
        check("restore: over existing state is refused",
              again.returncode == 2 and "already holds" in again.stderr, again.stderr[-300:])
        n.start_all()
        nl = n.wait_leader(timeout=20)
        led = time.monotonic()
        conn = n.connect(nl)
        test_sessions_ended(conn, led, s, token, [quick] + readers)
        conn.close()
        try:  # its failures must not skip the rest of this test
            test_incarnation_damage(n, next(i for i in sorted(n.procs) if i != nl))
        except Exception as e:  # noqa: BLE001 - reported as a failed check
            check("test_incarnation_damage", False, "raised %r" % (e,))
    finally:
        n.stop_all()
    bad = os.path.join(c.dir, "bad.snap")
    with open(backup, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF
    with open(bad, "wb") as f:
        f.write(bytes(data))
    empty = Cluster(c.build, 1, tmp=os.path.join(c.dir, "bad-restore"))
    out = subprocess.run([empty.bin, "restore", bad, "-c", empty.config(1)],
                         capture_output=True, text=True, timeout=30)
    check("restore: a damaged backup is refused and seeds nothing",
          out.returncode == 2 and "damaged" in out.stderr and
          not os.path.exists(os.path.join(empty.data(1), "snapshot")), out.stderr[-300:])
    test_backup_checksum(backup, empty, os.path.join(c.dir, "legacy-restore"))
    test_restore_full_disk(c, backup, s, token)
    c.start_all()  # the original cluster again, for the lost-quorum test


def test_sessions_ended(conn, led, s, token, others):
    """No session of the backup goes on after a restore (before, each came
    back holding what it held at the backup, its keepalives healthy for
    good: two clients believed they held one lock). Each is ended: its
    keepalive gets EEXPIRED; each lock held at the backup (exclusive or
    shared) is in lock-delay for 60 s (the cap) from the restored leader,
    refused to a try (EDELAYED); the next token is above every one of the
    backup."""
    keep = [conn.call({1: 2, 4: i}).get(3, 0) for i in [s] + others]
    check("restore: every session of the backup is ended (keepalive EEXPIRED)",
          keep == [-7] * (1 + len(others)), repr(keep))
    q = {name: conn.call({1: 11, 6: name}) for name in ("door", "quick", "reads")}
    check("restore: the locks held at the backup have no holder and are in lock-delay",
          all(not v.get(29) and v.get(33) is True for v in q.values()), repr(q))
    t = conn.call({1: 1, 9: 20000, 13: "after-restore", 14: random.getrandbits(64)}).get(4, 0)
    tries = [conn.call({1: 4, 4: t, 5: seq, 6: name}).get(3, 0)
             for seq, name in ((1, "quick"), (2, "reads"), (3, "door"))]
    check("restore: a lock held at the backup is not granted during its delay (EDELAYED)",
          tries == [-16, -16, -16], repr(tries))
    rep = conn.call({1: 4, 4: t, 5: 4, 6: "gate"})
    check("restore: the next token is higher than every one in the backup",
          rep.get(3, 0) == 0 and rep.get(11, 0) > token, repr(rep))
    # Past the 6 s TTL of quick's and reads' holders at the backup, still
    # delayed: the lock may have passed since to a client of a longer TTL,
    # which a delay of the holders' TTL let the restored cluster overlap (an
    # outside retest). The delay is the cap, 60 s, for every such lock; its
    # end is the core's lock-delay (test_lock.c), not waited for here.
    time.sleep(max(0.0, led + 6.5 - time.monotonic()))
    got = [conn.call({1: 4, 4: t, 5: seq, 6: name}).get(3, 0)
           for seq, name in ((5, "quick"), (6, "reads"), (7, "door"))]
    check("restore: past their backup-time holders' 6 s TTL, the locks are still delayed "
          "(the delay is the 60 s cap, whoever held them)", got == [-16, -16, -16], repr(got))


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def incarnation_text(gen, nonce):
    """What edgelockd writes: the first line and its CRC-32C (incarnation.c)."""
    first = "generation %d nonce %s\n" % (gen, nonce)
    return first + "crc %08x\n" % crc32c(first.encode())


def owner_line(i):
    """What edgelockd writes into DATA_DIR/owner for node i (owner.c)."""
    head = "node %d" % i
    return "%s crc32c %08x\n" % (head, crc32c(head.encode()))


def running(n, ids):
    return all(n.procs.get(i) is not None and n.procs[i].poll() is None for i in ids)


def exits(n, i, timeout):
    """Node i's exit status once it stops by itself (popped), None if it runs on."""
    eventually(lambda: n.procs[i].poll() is not None, timeout=timeout)
    return n.stop(i)[0] if n.procs[i].poll() is not None else None


def restart_with(n, i, text):
    """Node i restarted on its data with text as its incarnation file (None:
    no file); the length of its log before, to read what it says next."""
    n.stop(i)
    path = os.path.join(n.data(i), "incarnation")
    if text is None:
        os.remove(path)
    else:
        with open(path, "w") as f:
            f.write(text)
    start = os.path.getsize(n.log(i))
    n.start(i)
    return start


def log_from(n, i, start):
    with open(n.log(i)) as f:
        f.seek(start)
        return f.read()


def test_incarnation_damage(n, f):
    """A restored cluster (generation 1, the backup's nonce) whose follower f
    gets a wrong incarnation file. Before, one flipped bit ("generation 1"
    read as 3) made both healthy members stop for good on f's hello, and f
    ran alone; the log's advice, wipe them, would have destroyed the good
    copies. Now a checksum refuses the damaged file; a last release's line
    (no checksum) with a flipped generation shares the others' nonce, which
    no force or restore makes, and is refused both ways; a lost file (read
    as generation 0) still stops f, saying not to wipe it and how to mend it;
    and copying another member's file mends each case."""
    healthy = [i for i in sorted(n.procs) if i != f]
    with open(os.path.join(n.data(f), "incarnation")) as fh:
        good = fh.read()
    m = re.match(r"generation 1 nonce ([0-9a-f]{16})\n", good)
    nonce = m.group(1) if m else "0" * 15 + "1"
    check("incarnation: the file is its line and the line's CRC-32C",
          good == incarnation_text(1, nonce), repr(good))
    # one flipped bit: '1' (0x31) -> '3' (0x33) in the generation
    path = os.path.join(n.data(f), "incarnation")
    at = restart_with(n, f, good.replace("generation 1", "generation 3", 1))
    code = exits(n, f, 10)
    said = log_from(n, f, at)
    check("incarnation: a flipped bit fails the checksum: exit 1, naming the file and the "
          "repair", code == 1 and path + " is damaged" in said and
          "compare the other members' files" in said and "--join" in said,
          "exit %r: %s" % (code, said[-600:]))
    time.sleep(1.0)  # had it run, its hellos would have reached them
    check("incarnation: ... and the healthy members run on and lead",
          running(n, healthy) and n.wait_leader(timeout=10) in healthy,
          "running %r" % [i for i in healthy if running(n, [i])])
    # the last release's line (no checksum), the same flip: the others' nonce
    legacy = "generation 3 nonce %s\n" % nonce
    at = {i: os.path.getsize(n.log(i)) for i in healthy}
    at[f] = restart_with(n, f, legacy)
    heard = eventually(lambda: all("share a nonce but not a generation" in log_from(n, i, at[i])
                                   for i in healthy + [f]), timeout=15)
    with open(path) as fh:
        rewritten = fh.read()
    check("incarnation: a last release's line loads and is rewritten with its checksum",
          rewritten == incarnation_text(3, nonce) and running(n, [f]), repr(rewritten))
    check("incarnation: another generation with the same nonce is refused both ways as "
          "damaged or tampered, and nobody stops", heard and running(n, healthy + [f]),
          "running %r: %s" % ([i for i in sorted(n.procs) if running(n, [i])],
                              log_from(n, healthy[0], at[healthy[0]])[-600:]))
    mend(n, f, healthy, "a same-nonce file")
    test_incarnation_lost(n, f, healthy)


def mend(n, f, healthy, what):
    """The advice: copy a healthy member's file over f's; f runs with them."""
    n.stop(f)
    shutil.copyfile(os.path.join(n.data(healthy[0]), "incarnation"),
                    os.path.join(n.data(f), "incarnation"))
    n.start(f)
    leader = n.wait_leader(timeout=15)
    time.sleep(1.0)
    check("incarnation: %s mended by copying a member's file: all three run" % what,
          running(n, healthy + [f]) and leader in healthy + [f],
          "running %r" % [i for i in sorted(n.procs) if running(n, [i])])


def test_incarnation_lost(n, f, healthy):
    """f's file deleted: its data reads as generation 0 and it stops on the
    others' hello, as before, but the lines no longer say only that its data
    predates a force or restore: they name a lost file and say not to wipe."""
    at = restart_with(n, f, None)
    code = exits(n, f, 15)
    said = log_from(n, f, at)
    advice = [ln for ln in said.splitlines() if "do NOT wipe" in ln]
    check("incarnation: a lost file stops the node, saying a file may be lost and not to "
          "wipe it (the line whole)", code is not None and advice and
          "lost or replaced" in advice[0] and advice[0].endswith("and start this node") and
          len(advice[0]) < 512, "exit %r: %s" % (code, said[-800:]))
    out = subprocess.run([n.bin, "-c", n.config(f)], capture_output=True, text=True, timeout=10)
    check("incarnation: its restart is refused, with the same advice",
          out.returncode == 1 and "do NOT wipe" in out.stderr, out.stderr[-600:])
    os.remove(os.path.join(n.data(f), "removed"))
    mend(n, f, healthy, "a lost file")


def restore(n, backup):
    return subprocess.run([n.bin, "restore", backup, "-c", n.config(1)],
                          capture_output=True, text=True, timeout=30)


def state_files(d):
    return sorted(f for f in os.listdir(d) if f.startswith(("snapshot", "wal-")))


def test_restore_full_disk(c, backup, s, token):
    """Restore into a data directory on a file system too small for it: the
    snapshot fits, the WAL's first segment (zeros written ahead) does not.
    Exit 2 saying nothing was restored and what it removed, the directory
    left with no state (before: a snapshot and part of a WAL, and a retry
    refused as "already holds a cluster's state"); with room, a retry works
    and the node starts holding the backup's lock. The data directory is a
    small tmpfs: needs root; skipped, saying so, otherwise."""
    n = Cluster(c.build, 1, tmp=os.path.join(c.dir, "full-restore"))
    data = n.data(1)
    if not mount_tmpfs(data, "128k", "restore on a full disk"):
        return
    try:
        out = restore(n, backup)
        check("restore on a full disk: exit 2, nothing restored, what it wrote removed",
              out.returncode == 2 and "disk full" in out.stderr and
              ": nothing restored; removed the" in out.stderr
              and "restore can run again" in out.stderr, out.stderr[-600:])
        check("restore on a full disk: no advice to restart a node (an offline command)",
              "restart the node" not in out.stderr, out.stderr[-600:])
        check("restore on a full disk: the data directory holds no state",
              state_files(data) == [], repr(os.listdir(data)))
        subprocess.run(["mount", "-o", "remount,size=8m", data], check=True)
        out = restore(n, backup)
        check("restore retried with room: exit 0, snapshot and WAL written",
              out.returncode == 0 and "snapshot" in state_files(data) and
              any(f.startswith("wal-") for f in state_files(data)), out.stderr[-600:])
        n.start(1)
        n.wait_leader(timeout=20)
        conn = n.connect(1)
        q = conn.call({1: 11, 6: "door"})
        keep = conn.call({1: 2, 4: s}).get(3, 0)
        conn.close()
        check("restore retried: the backup's lock in lock-delay, its session ended",
              not q.get(29) and q.get(33) is True and keep == -7, "%r %r" % (q, keep))
    finally:
        n.stop_all()
        umount_tmpfs(data)


def test_backup_checksum(backup, empty, legacy_dir):
    """One flipped bit anywhere in a backup is refused: the snapshot's own
    decoder takes many such files (a changed lock name, holder or token), the
    header's CRC-32C none. A backup of an older release (no header) still
    restores, with a warning."""
    with open(backup, "rb") as f:
        good = f.read()
    check("snapshot save: the file starts with its header (net/el_backup.h)",
          good[:4] == b"ELBK" and len(good) > 16, repr(good[:16]))
    bad = os.path.join(os.path.dirname(backup), "flipped.snap")
    offsets = sorted({5, 9, 13} | {16 + k * (len(good) - 17) // 23 for k in range(24)})
    taken = []
    for off in offsets:
        d = bytearray(good)
        d[off] ^= 0x01
        with open(bad, "wb") as f:
            f.write(bytes(d))
        out = subprocess.run([empty.bin, "restore", bad, "-c", empty.config(1)],
                             capture_output=True, text=True, timeout=30)
        # said once, naturally: "is damaged (checksum mismatch)"
        if out.returncode != 2 or out.stderr.count("damaged") != 1 or \
                os.path.exists(os.path.join(empty.data(1), "snapshot")):
            taken.append((off, out.returncode, out.stderr[-200:]))
    check("restore: a bit flipped at any of %d offsets is refused as damaged" % len(offsets),
          not taken, repr(taken[:3]))
    for version, words in ((2, "of format version 2, newer than this edgelockd's 1: written by "
                               "a newer release; restore it with that release's edgelockd"),
                           (0, "of format version 0, older than this edgelockd's 1")):
        d = bytearray(good)
        d[4:8] = version.to_bytes(4, "little")
        with open(bad, "wb") as f:
            f.write(bytes(d))
        out = subprocess.run([empty.bin, "restore", bad, "-c", empty.config(1)],
                             capture_output=True, text=True, timeout=30)
        check("restore: a backup of format version %d is named as such, not only damaged"
              % version, out.returncode == 2 and words in out.stderr and
              "nothing was changed" in out.stderr and
              not os.path.exists(os.path.join(empty.data(1), "snapshot")), out.stderr[-400:])
    legacy = os.path.join(os.path.dirname(backup), "legacy.snap")
    with open(legacy, "wb") as f:
        f.write(good[16:])
    old = Cluster(empty.build, 1, tmp=legacy_dir)
    out = subprocess.run([old.bin, "restore", legacy, "-c", old.config(1)],
                         capture_output=True, text=True, timeout=30)
    check("restore: an older release's backup (no header) still restores, with a warning",
          out.returncode == 0 and "no checksum" in out.stderr, out.stderr[-300:])
    # Any other file (a hostname file, say): refused as not a backup, not
    # first warned of as an older release's backup (an outside tester saw
    # `restore /etc/hostname` say both).
    other = os.path.join(os.path.dirname(backup), "hostname")
    with open(other, "w") as f:
        f.write("board-7\n")
    out = subprocess.run([empty.bin, "restore", other, "-c", empty.config(1)],
                         capture_output=True, text=True, timeout=30)
    check("restore: a file that is no backup is refused as such, with no warning of an "
          "older release", out.returncode == 2 and "is not an edgelock backup" in out.stderr
          and "older release" not in out.stderr.replace("nor an older release", "") and
          not os.path.exists(os.path.join(empty.data(1), "snapshot")), out.stderr[-300:])


def test_force_new_cluster(c):
    leader = c.wait_leader()
    s, token = hold(c, leader, "pump")
    check("before: a lock held with a token", s != 0 and token > 0, "%r %r" % (s, token))
    survivor = next(i for i in sorted(c.procs) if i != leader)
    time.sleep(1.0)  # the followers have it (committed and applied)
    for i in list(c.procs):
        c.kill(i)
    stale = {}
    for i in c.peer_port:
        if i != survivor:  # gone, but kept aside for test_stale_members
            stale[i] = os.path.join(c.dir, "stale-%d" % i)
            shutil.move(c.data(i), stale[i])
    c.start(survivor, "--force-new-cluster")
    try:
        got = c.wait_leader(timeout=20)
    except Exception as e:  # noqa: BLE001 - reported as a failed check
        got = repr(e)
    check("force-new-cluster: the survivor leads alone", got == survivor, repr(got))
    check("force-new-cluster: the configuration is the survivor only",
          members(c, survivor) == {survivor: 1}, repr(members(c, survivor)))
    conn = c.connect(survivor)
    q = conn.call({1: 11, 6: "pump"})
    h = q.get(29, [{}])[0]
    check("force-new-cluster: the hold and its token are there",
          h.get(4) == s and h.get(11) == token, repr(q))
    rep = conn.call({1: 2, 4: s})
    check("force-new-cluster: the session is there (keepalive ok)", rep.get(3, 0) == 0, repr(rep))
    rep = conn.call({1: 4, 4: s, 5: 2, 6: "window"})
    check("force-new-cluster: the next token is higher than every earlier one",
          rep.get(3, 0) == 0 and rep.get(11, 0) > token, repr(rep))
    conn.close()
    with open(c.log(survivor)) as f:
        text = f.read()
    check("force-new-cluster: the log warns loudly", "ONLY voter" in text and "wipe them" in text)
    c.stop(survivor)
    c.start(survivor)  # a plain restart keeps the new configuration
    check("restart: still a one-member cluster that leads",
          c.wait_leader(timeout=20) == survivor and members(c, survivor) == {survivor: 1})
    test_stale_members(c, survivor, stale, rep.get(11, 0))


def test_stale_members(c, survivor, stale, token):
    """The step the docs forbid: the old members restarted on their old data.
    They held a quorum of the old configuration between them, elected a
    leader at a higher term, pulled the survivor back as its follower and
    granted tokens below the survivor's. Now the survivor's data is of a new
    incarnation: it refuses them, they stop by themselves when they hear of
    it (and a restart on that data is refused), and the survivor leads on
    alone with rising tokens."""
    for i, d in stale.items():
        shutil.move(d, c.data(i))
        c.start(i)
    deadline = time.time() + 20
    while time.time() < deadline and any(c.procs[i].poll() is None for i in stale):
        time.sleep(0.1)
    codes = {i: c.procs[i].poll() for i in stale}
    for i in stale:
        c.stop(i)
    texts = {i: open(c.log(i)).read() for i in stale}
    check("stale members: each stops by itself, saying its data predates the new incarnation",
          all(code is not None for code in codes.values()) and
          all("predates a --force-new-cluster" in t for t in texts.values()),
          "%r %r" % (codes, [t[-400:] for t in texts.values()]))
    # exit 1, which the shipped unit does not restart and shows failed: it
    # exited 0 as a clean stop (an outside tester); and the advice covers a
    # restore run on some nodes only, where the stopped ones are the good ones
    check("stale members: they exit 1 (a person must act), advising not to wipe them when "
          "the restore or force was run on some nodes only",
          all(code == 1 for code in codes.values()) and
          all("run on some nodes only" in t and "exit: stopped for good" in t
              for t in texts.values()), "%r" % (codes,))
    with open(c.log(survivor)) as f:
        text = f.read()
    check("stale members: the survivor refused them, saying why",
          "predates this cluster's --force-new-cluster" in text, text[-600:])
    check("stale members: the survivor still leads alone",
          c.wait_leader(timeout=20) == survivor and members(c, survivor) == {survivor: 1},
          repr(members(c, survivor)))
    conn = c.connect(survivor)
    s = conn.call({1: 1, 9: 10000}).get(4, 0)
    rep = conn.call({1: 4, 4: s, 5: 1, 6: "after-stale"})
    conn.close()
    check("stale members: the next token is higher than the survivor's last",
          rep.get(3, 0) == 0 and rep.get(11, 0) > token, "%r after %r" % (rep, token))
    i = min(stale)
    out = subprocess.run([c.bin, "-c", c.config(i)], capture_output=True, text=True, timeout=10)
    check("stale members: a restart on that data is refused, saying how to come back "
          "whole (the advice's end, members remove, was cut off)",
          out.returncode == 1 and "--join" in out.stderr and
          "members remove %d` first)" % i in out.stderr, out.stderr[-600:])


def test_guards(c):
    cfg = c.config(1)
    empty = os.path.join(c.dir, "empty")
    out = subprocess.run([c.bin, "-c", cfg, "--data-dir", empty, "--force-new-cluster"],
                         capture_output=True, text=True, timeout=10)
    check("guard: --force-new-cluster on an empty data dir is refused, exit 1",
          out.returncode == 1 and "empty" in out.stderr, out.stderr[-300:])
    out = subprocess.run([c.bin, "-c", cfg, "--force-new-cluster", "--bootstrap"],
                         capture_output=True, text=True, timeout=10)
    check("guard: --force-new-cluster with --bootstrap is refused",
          out.returncode == 1 and "exclude" in out.stderr, out.stderr[-300:])


def test_bootstrap_leftover(c):
    """A restore that failed can leave its incarnation file (generation 1)
    in a data directory with no state. --bootstrap starts a new cluster,
    generation 0: it must replace that file, or the node's next plain
    restart claims generation 1 and the other members, hearing a newer
    incarnation, stop for good as outdated."""
    n = Cluster(c.build, 3, tmp=os.path.join(c.dir, "leftover"))
    try:
        os.makedirs(n.data(1))
        leftover = os.path.join(n.data(1), "incarnation")
        with open(leftover, "w") as f:
            f.write("generation 1 nonce 00000000deadbeef\n")
        n.start_all(bootstrap=True)
        n.wait_leader()
        with open(leftover) as f:
            text = f.read()
        check("bootstrap: a failed restore's incarnation file is replaced by generation 0",
              text.startswith("generation 0 nonce ") and "deadbeef" not in text, repr(text))
        n.stop(1)
        n.start(1)
        leader = n.wait_leader()
        time.sleep(1.0)  # time for hellos both ways
        alive = [i for i in (1, 2, 3) if n.procs.get(i) and n.procs[i].poll() is None]
        check("bootstrap over a leftover file: after a restart every member still runs",
              alive == [1, 2, 3] and leader in (1, 2, 3), "alive %r leader %r" % (alive, leader))
    finally:
        n.stop_all()


def test_bootstrap_lists(c):
    """Nodes bootstrapped with other [peers] lists are other clusters: node
    3 lists a node 4 besides 1, 2 and 3. 1 and 2 elect a leader of their
    own; node 3, whose incarnation (generation 0, the digest of its voters)
    differs, is refused both ways with why, and follows no leader: it took
    their entries before (its own configuration contradicting theirs)."""
    n = Cluster(c.build, 3, tmp=os.path.join(c.dir, "lists"))
    try:
        n.write_config(3, [1, 2, 3])
        with open(n.config(3)) as f:
            text = f.read()
        with open(n.config(3), "w") as f:
            f.write(text.replace("[peers]\n", "[peers]\n4 = tls+tcp://127.0.0.1:%d\n"
                                 % free_ports(1)[0]))
        n.start_all(bootstrap=True)
        leader = n.wait_leader(timeout=20, exclude=(3,))
        files = {}
        for i in (1, 2, 3):
            with open(os.path.join(n.data(i), "incarnation")) as f:
                files[i] = f.read()
        check("bootstrap lists: one [peers] list, one incarnation; another list, another",
              files[1] == files[2] != files[3] and
              all(t.startswith("generation 0 nonce ") for t in files.values()), repr(files))
        words = "it was bootstrapped with another [peers] list of voters than this node"
        said = eventually(lambda: all(words in log_from(n, i, 0) for i in (1, 2, 3)), 10.0)
        check("bootstrap lists: each node says why it refuses the other list's",
              said, repr({i: log_from(n, i, 0)[-400:] for i in (1, 2, 3)}))
        time.sleep(1.0)
        st = n.status(3)
        check("bootstrap lists: 1 and 2 lead their cluster; node 3 follows no leader",
              leader in (1, 2) and st.get(17, 0) not in (1, 2) and
              "contradict what this node knew committed" not in log_from(n, 3, 0),
              "leader %r, node 3 %r" % (leader, st))
    finally:
        n.stop_all()


def test_restore_lists(c):
    """Nodes restored from one backup with other [peers] lists are other
    clusters, as --bootstrap's are: nodes 1 and 2 list {1,2,3} (node 2 in
    another order: the same incarnation), nodes 3, 4 and 5 list {1,...,5}
    (so that their hellos pass the [peers] check). Before, all five were
    restored to one incarnation (the backup's digest alone), node 3 a
    member of both quorums' clusters (an outside tester saw two such
    clusters grant one lock with one token). Now they differ, are refused both ways
    saying the lists differ, and a node added later with --join (node 5,
    wiped) takes the incarnation of the cluster it joins."""
    backup = os.path.join(c.dir, "backup.snap")  # test_backup_restore's
    n = Cluster(c.build, 5, tmp=os.path.join(c.dir, "restore-lists"))
    try:
        for i, peers in ((1, [1, 2, 3]), (2, [3, 2, 1]), (3, [1, 2, 3, 4, 5]),
                         (4, [1, 2, 3, 4, 5]), (5, [5, 4, 3, 2, 1])):
            n.write_config(i, peers)
        outs = [subprocess.run([n.bin, "restore", backup, "-c", n.config(i)],
                               capture_output=True, text=True, timeout=30) for i in range(1, 6)]
        check("restore lists: every node seeded (exit 0)", all(o.returncode == 0 for o in outs),
              "".join(o.stderr[-300:] for o in outs))
        files = {}
        for i in range(1, 6):
            with open(os.path.join(n.data(i), "incarnation")) as f:
                files[i] = f.read()
        check("restore lists: one [peers] list (in any order), one incarnation; another, "
              "another", files[1] == files[2] and files[3] == files[4] == files[5] and
              files[1] != files[3] and all(t.startswith("generation 1 nonce ")
                                           for t in files.values()), repr(files))
        n.start_all()
        words = "it was restored from the same backup with another [peers] list of voters"
        said = eventually(lambda: words in log_from(n, 3, 0) and
                          any(words in log_from(n, i, 0) for i in (1, 2)), 15.0)
        check("restore lists: nodes of the two lists refuse each other, saying the lists differ",
              said, repr({i: log_from(n, i, 0)[-400:] for i in (1, 3)}))
        a = n.wait_leader(timeout=20, exclude=(3, 4, 5))
        b = n.wait_leader(timeout=20, exclude=(1, 2))
        check("restore lists: each list is a cluster of its own, node 3 in {1,...,5}'s only",
              a in (1, 2) and b in (3, 4, 5) and n.status(3).get(17, 0) in (3, 4, 5),
              "leaders %r %r, node 3 %r" % (a, b, n.status(3)))
        for i in (3, 4, 5):  # {1,...,5} given up: node 5 wiped, joins {1,2,3}'s
            n.stop(i)
        shutil.rmtree(n.data(5))
        n.write_config(5, [1, 2, 5])
        n.start(5, "--join")
        env = dict(os.environ, EDGELOCK_ENDPOINTS=",".join(n.addr(i) for i in (1, 2)),
                   EDGELOCK_CA=n.certs + "/ca.pem", EDGELOCK_CERT=n.certs + "/client.pem")
        r = subprocess.run([os.path.join(n.build, "bin", "edgelock"), "members", "add", "5",
                            "tls+tcp://127.0.0.1:%d" % n.peer_port[5], n.addr(5)], env=env,
                           capture_output=True, text=True, timeout=60)

        def joined():
            try:
                with open(os.path.join(n.data(5), "incarnation")) as f:
                    return f.read() == files[1]
            except OSError:
                return False
        check("restore lists: a node added with --join takes its cluster's incarnation",
              r.returncode == 0 and eventually(joined, 15.0) and running(n, [5]),
              "exit %d %s" % (r.returncode, r.stderr[-300:]))
    finally:
        n.stop_all()


def test_two_leaders(c):
    """Two single-node clusters of one name, each bootstrapped with only
    itself in [peers]: both lead term 1. `edgelock status` over both
    endpoints says they are two clusters and exits 1 (it exited 0 showing
    both leaders: an outside tester)."""
    n = Cluster(c.build, 2, tmp=os.path.join(c.dir, "two-leaders"))
    try:
        for i in (1, 2):
            n.write_config(i, [i])
        n.start_all(bootstrap=True)
        def leads(i):
            try:
                return n.status(i).get(23) == 3
            except OSError:  # not listening yet
                return False
        both = eventually(lambda: leads(1) and leads(2), 20.0)
        out = cli(n, "status")
        check("two leaders of one term: status says two clusters, exit 1",
              both and out.returncode == 1 and re.search(r"nodes [12] and [12] both lead term "
                                                         r"1: they are two clusters", out.stderr),
              "both %r, exit %d: %s" % (both, out.returncode, out.stderr[-400:]))
    finally:
        n.stop_all()


def bootstrap(n, *flags):
    """Node 1 of n started with flags: (exit status or None if it runs after
    3 s, the log's new lines)."""
    n.stop(1)  # one left running by a failed check before
    before = os.path.getsize(n.log(1)) if os.path.exists(n.log(1)) else 0
    p = n.start(1, *flags)
    try:
        rc = p.wait(3.0)
        n.procs.pop(1, None)
    except subprocess.TimeoutExpired:
        rc = None
    with open(n.log(1)) as f:
        return rc, f.read()[before:]


def test_bootstrap_full_disk(c):
    """--bootstrap on a file system too small for its first WAL batch (the
    zeros written ahead of it): exit 3, saying nothing of the bootstrap was
    kept and to run --bootstrap again (not "restart the node"), the data
    directory left with no state. Before: owner, LOCK and a WAL segment of
    zeros stayed; the plain restart the line advised ran with 0 members for
    ever, and --bootstrap was refused over it. With room, a plain start says
    the directory is empty (exit 1) and --bootstrap makes a cluster; a second
    --bootstrap over it is refused. A small tmpfs: root only; skipped,
    saying so, otherwise."""
    n = Cluster(c.build, 1, tmp=os.path.join(c.dir, "full-bootstrap"))
    data = n.data(1)
    if not mount_tmpfs(data, "200k", "bootstrap on a full disk"):
        return
    try:
        rc, out = bootstrap(n, "--bootstrap")
        check("bootstrap on a full disk: exit 3, nothing of it kept, run --bootstrap again",
              rc == 3 and "disk full" in out and "nothing of the bootstrap kept" in out
              and "free space and run --bootstrap again" in out, out[-700:])
        check("bootstrap on a full disk: no advice to restart the node",
              "restart the node" not in out, out[-700:])
        check("bootstrap on a full disk: the data directory holds no state",
              state_files(data) == [] and "owner" not in os.listdir(data),
              repr(os.listdir(data)))
        subprocess.run(["mount", "-o", "remount,size=8m", data], check=True)
        rc, out = bootstrap(n)
        check("bootstrap on a full disk, then a plain start: empty, exit 1",
              rc == 1 and "is empty: start a new cluster with --bootstrap" in out, out[-500:])
        rc, out = bootstrap(n, "--bootstrap")
        check("bootstrap on a full disk, retried with room: the node leads",
              rc is None and n.wait_leader(timeout=20) == 1, "exit %r: %s" % (rc, out[-500:]))
        n.stop(1)
        rc, out = bootstrap(n, "--bootstrap")
        check("a second --bootstrap over its state is refused, exit 1",
              rc == 1 and "already holds a cluster's state" in out, out[-500:])
    finally:
        n.stop_all()
        umount_tmpfs(data)


def test_bootstrap_over_nothing(c):
    """A data directory whose WAL holds nothing of a cluster, as a
    --bootstrap on a full disk left it before (the owner file and a first
    segment of 196,608 zeros), or a crash in a bootstrap before its
    configuration (the snapshot file) was written (a first batch of a hard
    state of zeros, whole or cut short): a plain start says it is empty
    (exit 1; before, it ran with 0 members for ever, no leader), --bootstrap
    runs over it (before: refused) and the node leads, and restarts on that
    state. A WAL whose batch holds a vote is state: --bootstrap is refused."""
    n = Cluster(c.build, 1, tmp=os.path.join(c.dir, "boot-nothing"))
    data = n.data(1)
    seg = os.path.join(data, "wal-0000000000000001.log")

    def leftover(wal, what):
        shutil.rmtree(data, ignore_errors=True)
        os.makedirs(data)
        with open(seg, "wb") as f:
            f.write(wal)
        with open(os.path.join(data, "owner"), "w") as f:
            f.write(owner_line(1))
        rc, out = bootstrap(n)
        check("%s: a plain start says the data_dir is empty, exit 1" % what,
              rc == 1 and "is empty: start a new cluster with --bootstrap" in out, out[-500:])
        rc, out = bootstrap(n, "--bootstrap")
        check("%s: --bootstrap runs over it and the node leads" % what,
              rc is None and n.wait_leader(timeout=20) == 1, "exit %r: %s" % (rc, out[-500:]))
        n.stop(1)

    try:
        leftover(bytes(196608), "a WAL of zeros")
        rc, out = bootstrap(n)
        check("a WAL of zeros bootstrapped over: a plain restart leads",
              rc is None and n.wait_leader(timeout=20) == 1, "exit %r: %s" % (rc, out[-500:]))
        n.stop(1)
        with open(seg, "rb") as f:
            wal = f.read()
        first = batch_ends(wal)
        check("a bootstrap's WAL: a first batch of a zero hard state, then one with a term",
              len(first) >= 2 and first[0] == 46, repr(first))
        if len(first) < 2:
            return
        leftover(wal[:first[0]] + bytes(4096), "a crash before the configuration")
        leftover(wal[:first[0] - 9] + bytes(4096), "a first batch cut short")
        shutil.rmtree(data)
        os.makedirs(data)
        with open(seg, "wb") as f:  # the batch with the vote, its snapshot gone
            f.write(wal[:first[1]] + bytes(4096))
        rc, out = bootstrap(n, "--bootstrap")
        check("a WAL with a vote: --bootstrap refused, exit 1",
              rc == 1 and "already holds a cluster's state" in out, out[-500:])
    finally:
        n.stop_all()


def batch_ends(wal):
    """The offsets just past each BATCH_END record of a WAL segment
    (records: len u32, crc u32, then len bytes, the first the type; 4 is
    BATCH_END), up to the zeros written ahead."""
    off, ends = 0, []
    while off + 9 <= len(wal):
        size = int.from_bytes(wal[off:off + 4], "little")
        if size == 0:
            break
        off += 8 + size
        if wal[off - size] == 4:
            ends.append(off)
    return ends


def test_restore_beside_running(c):
    """A restore run on one lost node while the others run (the way to
    bring one node back is --join): it made a node of a newer incarnation,
    and the two healthy members, hearing it, stopped for good (an outside
    tester). Now restore refuses when another node of [peers] answers at
    its address: exit 1, naming it and what to do, nothing written; the
    cluster goes on."""
    n = Cluster(c.build, 3, tmp=os.path.join(c.dir, "restore-beside"))
    try:
        n.start_all(bootstrap=True)
        leader = n.wait_leader()
        backup = os.path.join(n.dir, "one.snap")
        r = cli(n, "snapshot", "save", backup)
        lost = next(i for i in sorted(n.procs) if i != leader)
        n.kill(lost)
        shutil.rmtree(n.data(lost))
        out = subprocess.run([n.bin, "restore", backup, "-c", n.config(lost)],
                             capture_output=True, text=True, timeout=30)
        check("restore beside running nodes: refused, exit 1, naming a running node and --join",
              r.returncode == 0 and out.returncode == 1 and
              "accepts connections at node" in out.stderr and "--join" in out.stderr and
              (not os.path.exists(n.data(lost)) or state_files(n.data(lost)) == []),
              "exit %d: %s" % (out.returncode, out.stderr[-500:]))
        check("restore beside running nodes: the cluster still leads",
              n.wait_leader(timeout=10) == leader)
        # The whole cluster down but for the lost node's own edgelockd,
        # started with --join (no state yet): its data_dir is in use. The
        # restore refused, but removed the joiner's incarnation and owner
        # files as "the 2 file(s) it wrote".
        n.stop_all()
        n.start(lost, "--join")
        eventually(lambda: os.path.exists(os.path.join(n.data(lost), "incarnation")), 10)
        before = sorted(os.listdir(n.data(lost)))
        out = subprocess.run([n.bin, "restore", backup, "-c", n.config(lost)],
                             capture_output=True, text=True, timeout=30)
        after = sorted(os.listdir(n.data(lost)))
        check("restore on a data_dir a running edgelockd uses: refused, nothing removed",
              out.returncode == 2 and "in use" in out.stderr and "nothing removed" in
              out.stderr and "incarnation" in before and after == before,
              "exit %d, files %s -> %s: %s" % (out.returncode, before, after,
                                                out.stderr[-400:]))
    finally:
        n.stop_all()


def test_token_floor(c):
    """Tokens the old cluster granted after its backup are not in it, and
    after a full restore the new tokens started above the backup's index
    only: reused (an outside tester saw 5,247 grants reuse tokens, one
    client's go from 29127 back to 3180). `restore --token-floor N` starts
    the restored log at N: the next token is above N. A node restored with
    another N is of another incarnation. A bad N is refused, nothing written."""
    n = Cluster(c.build, 3, tmp=os.path.join(c.dir, "token-floor"))
    try:
        n.start_all(bootstrap=True)
        leader = n.wait_leader()
        _, token = hold(n, leader, "before")
        backup = os.path.join(n.dir, "floor.snap")
        r = cli(n, "snapshot", "save", backup)
        n.stop_all()
        floor = token + 1000000
        for i in sorted(n.peer_port):
            shutil.rmtree(n.data(i))
        bad = subprocess.run([n.bin, "restore", backup, "-c", n.config(1), "--token-floor",
                              "12x"], capture_output=True, text=True, timeout=30)
        check("token floor: a bad N is refused (exit 1), naming it, nothing written",
              bad.returncode == 1 and "--token-floor" in bad.stderr and
              not os.path.exists(os.path.join(n.data(1), "incarnation")), bad.stderr[-300:])
        args = {1: ["--token-floor", str(floor)], 2: ["--token-floor=%d" % floor],
                3: ["--token-floor", str(floor + 1)]}
        outs = [subprocess.run([n.bin, "restore", backup, "-c", n.config(i)] + args[i],
                               capture_output=True, text=True, timeout=30)
                for i in sorted(n.peer_port)]
        files = {}
        for i in sorted(n.peer_port):
            try:
                with open(os.path.join(n.data(i), "incarnation")) as f:
                    files[i] = f.read()
            except OSError as e:
                files[i] = repr(e)
        check("token floor: every node restored (exit 0); the one given another N is of "
              "another incarnation", r.returncode == 0 and
              all(o.returncode == 0 for o in outs) and files[1] == files[2] != files[3],
              "".join(o.stderr[-200:] for o in outs))
        n.start(1)
        n.start(2)
        nl = n.wait_leader(timeout=20, exclude=(3,))
        # a backup before any lock was taken: the table still ends below N
        early = os.path.join(n.dir, "floor-early.snap")
        r = cli(n, "snapshot", "save", early)
        _, after = hold(n, nl, "after")
        check("token floor: the next token is above N", after > floor,
              "token %d, N %d" % (after, floor))
        check("token floor: a backup taken right after the restored start",
              r.returncode == 0, r.stderr[-300:])
        n.stop_all()
        for i in (1, 2):  # node 3 restored with another N: left as it was
            shutil.rmtree(n.data(i))
        outs = [subprocess.run([n.bin, "restore", early, "-c", n.config(i)],
                               capture_output=True, text=True, timeout=30) for i in (1, 2)]
        n.start(1)
        n.start(2)
        nl = n.wait_leader(timeout=20, exclude=(3,))
        _, again = hold(n, nl, "again")
        check("token floor: restored from that backup (no --token-floor), tokens stay above N "
              "(the backup says the index its table was read at, not the table's last entry)",
              all(o.returncode == 0 for o in outs) and again > floor,
              "token %d, N %d: %s" % (again, floor, "".join(o.stderr[-200:] for o in outs)))
    finally:
        n.stop_all()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    random.seed(int(os.environ.get("SEED", "1")))
    c = Cluster(build, 3, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "recovery-%d" % os.getpid()))
    try:
        c.start_all(bootstrap=True)
        for t in (test_backup_fresh, test_backup_restore, test_restore_lists,
                  test_force_new_cluster, test_guards,
                  test_bootstrap_leftover, test_bootstrap_lists, test_two_leaders,
                  test_bootstrap_full_disk,
                  test_bootstrap_over_nothing, test_restore_beside_running,
                  test_token_floor):
            try:
                t(c)
            except Exception as e:  # noqa: BLE001 - a crashed step fails, the rest still run
                check(t.__name__, False, "raised %r" % (e,))
    finally:
        c.stop_all()
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
