"""nemeses.py - the chaos suite's faults, started at random (at most two at a
time; every 30-60 s a client fault alone, so the checker can time how soon
its lock is granted again) and each healed
by itself: every one is a thread that breaks something, waits, and repairs
it. Each start and stop is a "nemesis" line in the history (README.md).

  kill-node          SIGKILL a node (the leader, more often than not), restart it
  pause-node         SIGSTOP a node (leader-biased) past the session TTL, SIGCONT
  crash-wal          a power cut at the node's next WAL fdatasync (crashpoint.c):
                     unsynced bytes lost, torn or bit-flipped; restart
  disk-full          fill the tmpfs data directory of node 5; it must stop
                     (exit 3, never acknowledging what it did not persist);
                     free it, restart
  partition-halves   the nodes cut into two sides (2 | 3)
  partition-leader   the leader cut off from every other node
  partition-bridge   two sides that only one node (the bridge) sees both of
  partition-clients  a client namespace cut off from some or all nodes
  pause-client       SIGSTOP a lock worker (the resource's last writer, more
                     often than not; often right after a read, before its
                     write) past TTL + lock-delay, SIGCONT
  kill-client        SIGKILL a lock worker (the holder, more often than not),
                     start a new one
  membership         remove a follower, wipe it, re-add it (`edgelock members`)
"""
import errno
import json
import os
import shutil
import signal
import subprocess
import threading
import time

WEIGHTS = {"kill-node": 2, "pause-node": 1, "crash-wal": 2, "disk-full": 1,
           "partition-halves": 1, "partition-leader": 1, "partition-bridge": 1,
           "partition-clients": 1, "pause-client": 2, "kill-client": 1, "membership": 1}


class Nemeses:
    def __init__(self, run, rng):
        self.run, self.rng = run, rng
        self.counts = {}
        self.busy = set()      # nodes some fault holds
        self.net_busy = False  # one partition at a time
        self.active = 0
        self.threads = []
        self.next_id = 0
        self.mu = threading.Lock()
        self.findings = []

    # ---- scheduling -------------------------------------------------------
    def run_for(self, seconds, only=None):
        end = time.monotonic() + seconds
        kinds = sorted(k for k in WEIGHTS if not only or k in only)
        weights = [WEIGHTS[k] for k in kinds]
        solo_kinds = [k for k in kinds if k in ("kill-client", "pause-client")]
        next_solo = time.monotonic() + 10.0
        while time.monotonic() < end:
            time.sleep(self.rng.uniform(0.5, 2.5))
            if solo_kinds and time.monotonic() >= next_solo:
                self.solo(self.rng.choice(solo_kinds))
                next_solo = time.monotonic() + self.rng.uniform(30.0, 60.0)
                continue
            with self.mu:
                if self.active >= 2:
                    continue
                self.active += 1
                self.next_id += 1
                fid = self.next_id
            kind = self.rng.choices(kinds, weights)[0]
            t = threading.Thread(target=self.fault, args=(kind, fid), daemon=True)
            t.start()
            self.threads.append(t)
        for t in self.threads:
            t.join(120)

    def solo(self, kind):
        """A client fault with nothing else going on, before and through its
        window, so the checker can time how soon the lock is granted again."""
        while True:
            with self.mu:
                if self.active == 0:
                    self.active += 1
                    self.next_id += 1
                    fid = self.next_id
                    break
            time.sleep(0.2)
        time.sleep(1.5)
        t0 = time.monotonic()
        self.fault(kind, fid)
        time.sleep(max(0.0, t0 + self.run.regrant_bound_s + 1.0 - time.monotonic()))

    def fault(self, kind, fid):
        try:
            getattr(self, kind.replace("-", "_"))(fid)
        except Exception as e:  # a fault that could not be set up is not injected
            self.findings.append("%s: %r" % (kind, e))
        finally:
            with self.mu:
                self.active -= 1

    def start(self, fid, kind, **fields):
        self.run.nemesis(f="start", id=fid, fault=kind, **fields)
        with self.mu:
            self.counts[kind] = self.counts.get(kind, 0) + 1

    def stop(self, fid, kind, **fields):
        self.run.nemesis(f="stop", id=fid, fault=kind, **fields)

    def take_node(self, prefer_leader, exclude=()):
        """A node no other fault holds (the leader, if asked and free)."""
        lead = self.run.leader() if prefer_leader and self.rng.random() < 0.6 else None
        with self.mu:
            free = [i for i in sorted(self.run.nodes) if i not in self.busy and i not in exclude
                    and self.run.node_up(i)]
            if len(self.busy) >= 2 or not free:
                return None
            i = lead if lead in free else self.rng.choice(free)
            self.busy.add(i)
            return i

    def free_node(self, i):
        with self.mu:
            self.busy.discard(i)

    # ---- nodes ------------------------------------------------------------
    def kill_node(self, fid):
        i = self.take_node(True)
        if i is None:
            return
        try:
            self.start(fid, "kill-node", target=i)
            p = self.run.nodes[i]
            p.kill()
            p.wait()
            time.sleep(self.rng.uniform(0.5, 4.0))
            self.run.start_node(i)
            self.stop(fid, "kill-node", target=i)
        finally:
            self.free_node(i)

    def pause_node(self, fid):
        i = self.take_node(True)
        if i is None:
            return
        try:
            p = self.run.nodes[i]
            self.start(fid, "pause-node", target=i)
            os.kill(p.pid, signal.SIGSTOP)
            time.sleep(self.rng.uniform(1.2, 3.0) * self.run.ttl_s)
            os.kill(p.pid, signal.SIGCONT)
            self.stop(fid, "pause-node", target=i)
        finally:
            self.free_node(i)

    def wait_exit(self, p, timeout):
        try:
            return p.wait(timeout)
        except subprocess.TimeoutExpired:
            return None

    def crash_wal(self, fid):
        i = self.take_node(True)
        if i is None:
            return
        try:
            p = self.run.nodes[i]
            before = self.crashpoint_lines(i)
            self.start(fid, "crash-wal", target=i)
            os.kill(p.pid, signal.SIGUSR2)
            rc = self.wait_exit(p, 10.0)
            if rc is None:  # no WAL write came: a plain kill then
                p.kill()
                p.wait()
            lines = self.crashpoint_lines(i)[len(before):]
            how = lines[-1].split(":")[1].split()[0] if lines else "not fired"
            with self.mu:
                key = "crash-wal-" + how.replace(" ", "-")
                self.counts[key] = self.counts.get(key, 0) + 1
            time.sleep(self.rng.uniform(0.5, 2.0))
            self.run.start_node(i)
            self.stop(fid, "crash-wal", target=i, damage=how)
        finally:
            self.free_node(i)

    def crashpoint_lines(self, i):
        with open(self.run.log(i), errors="replace") as f:
            return [ln.strip() for ln in f if ln.startswith("chaos-crashpoint:")]

    def disk_full(self, fid):
        i = self.run.full_disk_node
        with self.mu:
            if i in self.busy or len(self.busy) >= 2 or not self.run.node_up(i):
                return
            self.busy.add(i)
        ballast = os.path.join(self.run.data(i), "ballast")
        try:
            self.start(fid, "disk-full", target=i)
            try:
                with open(ballast, "wb") as f:
                    while True:
                        f.write(b"\0" * 65536)
                        f.flush()
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
            rc = self.wait_exit(self.run.nodes[i], 15.0)
            if rc is not None and rc != 3:
                self.findings.append("disk-full: node%d exited %s, not 3" % (i, rc))
            os.unlink(ballast)
            if rc is None:  # it wrote nothing meanwhile: it never saw the full disk
                self.run.nodes[i].kill()
                self.run.nodes[i].wait()
            time.sleep(self.rng.uniform(0.5, 2.0))
            self.run.start_node(i)
            self.stop(fid, "disk-full", target=i, exit=rc)
        finally:
            if os.path.exists(ballast):
                os.unlink(ballast)
            self.free_node(i)

    def membership(self, fid):
        lead = self.run.leader()
        i = self.take_node(False, exclude=(lead, self.run.full_disk_node))
        if i is None or lead is None:
            if i is not None:
                self.free_node(i)
            return
        try:
            rc = self.run.cli_run("ctl", "members", "remove", str(i))
            if rc == 69 and self.removal_took(i):
                rc = 0  # no answer in time, yet it took effect (documented: exit 69)
            if rc == 69:  # no leader within the CLI's 5 s (a fault under way): not done
                self.run.nemesis(f="skipped", fault="membership", target=i, said=self.run.cli_said)
                return
            if rc != 0:
                self.findings.append("membership: remove %d: exit %d: %s" % (i, rc, self.run.cli_said))
                return
            self.start(fid, "membership", target=i)
            p = self.run.nodes[i]
            if self.wait_exit(p, 5.0) is None:
                p.terminate()
                if self.wait_exit(p, 10.0) is None:
                    p.kill()
                    p.wait()
            shutil.rmtree(self.run.data(i))
            os.makedirs(self.run.data(i))
            self.run.start_node(i, "--join")
            ip = self.run.ip(i)
            end = time.monotonic() + 60
            while time.monotonic() < end:
                rc = self.run.cli_run("ctl", "members", "add", str(i),
                                      "tls+tcp://%s:%d" % (ip, self.run.peer_port),
                                      "tls+tcp://%s:%d" % (ip, self.run.client_port))
                if rc == 0:
                    break
                time.sleep(1.0)
            if rc != 0:
                self.findings.append("membership: re-adding node%d failed (exit %d: %s)"
                                     % (i, rc, self.run.cli_said))
            self.stop(fid, "membership", target=i, readded=rc == 0)
        finally:
            self.free_node(i)

    def removal_took(self, i, timeout=15.0):
        """After `members remove` exited 69 (no answer in time: the change
        may still take effect, cmd/edgelock/README.md): whether it did, as the
        leader's membership says once a leader answers. A chaos run saw a
        removal proposed by a leader that lost its quorum a moment later
        commit under its next term, after the CLI had given up: the node left
        on its own (exit 0) and was taken for a crash."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            lead = self.run.leader_status()
            if lead is not None:
                return all(m["node"] != i for m in lead.get("members", []))
            time.sleep(0.5)
        return False

    # ---- partitions -------------------------------------------------------
    def take_net(self):
        with self.mu:
            if self.net_busy:
                return False
            self.net_busy = True
            return True

    def partition(self, fid, kind, pairs, **fields):
        self.start(fid, kind, blocked=sorted(pairs), **fields)
        for a, b in pairs:
            self.run.net.block(a, b)
        time.sleep(self.rng.uniform(2.0, 8.0))
        self.run.net.heal()
        self.stop(fid, kind)
        with self.mu:
            self.net_busy = False

    def node_names(self):
        return ["n%d" % i for i in sorted(self.run.nodes)]

    def partition_halves(self, fid):
        if self.take_net():
            ns = self.node_names()
            self.rng.shuffle(ns)
            a, b = ns[:len(ns) // 2], ns[len(ns) // 2:]
            self.partition(fid, "partition-halves", [(x, y) for x in a for y in b])

    def partition_leader(self, fid):
        lead = self.run.leader()
        if lead is not None and self.take_net():
            me = "n%d" % lead
            self.partition(fid, "partition-leader", [(me, y) for y in self.node_names() if y != me],
                           target=lead)

    def partition_bridge(self, fid):
        if self.take_net():
            ns = self.node_names()
            self.rng.shuffle(ns)
            bridge, rest = ns[0], ns[1:]
            a, b = rest[:len(rest) // 2], rest[len(rest) // 2:]
            self.partition(fid, "partition-bridge", [(x, y) for x in a for y in b], target=bridge)

    def partition_clients(self, fid):
        if self.take_net():
            c = self.rng.choice(["c1", "c2"])
            ns = self.node_names()
            cut = ns if self.rng.random() < 0.5 else self.rng.sample(ns, self.rng.randint(1, len(ns)))
            self.partition(fid, "partition-clients", [(c, y) for y in cut], target=c)

    # ---- clients ----------------------------------------------------------
    def pick_client(self):
        """(slot name, its process) of a lock worker: the resource's last
        writer more often than not; and whether it was that writer."""
        last = self.run.last_writer("A")
        names = [n for n, (p, proc, slot) in self.run.clients.items()
                 if slot[1] == "lock" and p.poll() is None]
        holder = [n for n in names if self.run.clients[n][1] == last]
        if not names:
            return None, False
        if holder and self.rng.random() < 0.7:
            return holder[0], True
        n = self.rng.choice(names)
        return n, self.run.clients[n][1] == last

    def wait_for_read(self, proc, timeout):
        """Wait until proc's last history line is a completed read, so a pause
        lands between its read and its write (True), or give up."""
        path = os.path.join(self.run.hist, proc + ".jsonl")
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                with open(path, "rb") as f:
                    f.seek(max(0, os.fstat(f.fileno()).st_size - 400))
                    last = f.read().splitlines()[-1]
                if b'"type": "ok", "f": "read"' in last:
                    return True
            except (OSError, IndexError):
                pass
            time.sleep(0.002)
        return False

    def pause_client(self, fid):
        name, holder = self.pick_client()
        if name is None:
            return
        p, proc, slot = self.run.clients[name]
        if p.poll() is not None:
            return
        # more often than not, between a read and its write: the lost update's window
        in_window = self.rng.random() < 0.6 and self.wait_for_read(proc, 3.0)
        try:
            os.kill(p.pid, signal.SIGSTOP)
        except ProcessLookupError:  # killed meanwhile (kill-client)
            return
        self.start(fid, "pause-client", target=proc, holder=holder, lock=slot[2],
                   in_window=in_window)
        time.sleep(self.run.ttl_s + self.run.lock_delay_s + self.rng.uniform(0.5, 3.0))
        if p.poll() is None:
            os.kill(p.pid, signal.SIGCONT)
        self.stop(fid, "pause-client", target=proc)

    def kill_client(self, fid):
        name, holder = self.pick_client()
        if name is None:
            return
        p, proc, slot = self.run.clients[name]
        if p.poll() is not None:
            return
        self.start(fid, "kill-client", target=proc, holder=holder, lock=slot[2])
        self.run.killed.add(proc)
        p.kill()
        p.wait()
        time.sleep(self.rng.uniform(0.3, 1.0))
        self.run.start_client(slot)
        self.stop(fid, "kill-client", target=proc)

    # ---- the end ----------------------------------------------------------
    def heal_all(self):
        """Whatever a fault left: partitions healed, everything resumed and up."""
        self.run.net.heal()
        for i, p in list(self.run.nodes.items()):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
            else:  # no fault left it down: it stopped by itself
                self.findings.append("node%d was down at the end (exit %s)" % (i, p.returncode))
                self.run.start_node(i)
        for p, _, _ in self.run.clients.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
        self.run.nemesis(f="healed", counts=json.loads(json.dumps(self.counts)))
