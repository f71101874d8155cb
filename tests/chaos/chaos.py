"""chaos.py BUILD [--seconds N] [--fencing on|off] [--seed S] [--out DIR]
[--faults KIND,...] - the chaos run
(tests/chaos/README.md): five edgelockd (build/chaos/edgelockd, with the
power-cut seam) in network namespaces, clients doing read-modify-writes on
fenced resources under a lock, an election and `edgelock lock -- CMD`, and
random faults (nemeses.py), always healed. At the end the history is merged
into RUN/history.jsonl, checked (check.py), and the verdict written to
RUN/verdict.json and printed. Exits 1 on any violation (with --fencing on)
or when the control (--fencing off) finds no lost update. Needs root.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check  # noqa: E402
from netns import Net  # noqa: E402
from nemeses import Nemeses  # noqa: E402

NODES = 5
PEER_PORT, CLIENT_PORT = 7000, 7100
TTL_MS, LOCK_DELAY_MS = 1500, 300
ELECTION_MS, HEARTBEAT_MS = 1000, 100
STUCK_S = 60  # every library call returns within its wait + 2 request timeouts (14 s)
ELECTION_BOUND_MS = 3 * ELECTION_MS + 2000  # randomized timeouts, PreVote, a retry, a busy host
FULL_DISK_NODE, TMPFS = NODES, "32m"


class Run:
    """The cluster, the resources and the clients of one run, by PID."""

    def __init__(self, build, out, fencing, seed):
        self.build, self.out, self.fencing, self.seed = build, out, fencing, seed
        self.hist = os.path.join(out, "history")
        os.makedirs(self.hist)
        self.certs = os.path.join(build, "certs")
        self.daemon = os.path.join(build, "chaos", "edgelockd")
        self.cli = os.path.join(build, "bin", "edgelock")
        self.worker = os.path.join(build, "bin", "chaos-worker")
        self.net = Net("elc%d" % os.getpid())
        self.nodes, self.clients, self.resources = {}, {}, {}
        self.gen = {}
        self.stopping = False
        self.lock = threading.Lock()
        self.nemesis_fd = os.open(os.path.join(self.hist, "nemesis.jsonl"),
                                  os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.cli_threads = []
        self.mounted = None
        self.stuck = {}  # proc -> the operation it is stuck in
        self.crashed = {}  # proc -> its exit status, when no fault killed it
        self.killed = set()  # procs the kill-client fault killed
        self.ttl_s, self.lock_delay_s = TTL_MS / 1000.0, LOCK_DELAY_MS / 1000.0
        self.regrant_bound_s = (TTL_MS + LOCK_DELAY_MS + ELECTION_BOUND_MS) / 1000.0
        self.full_disk_node, self.peer_port, self.client_port = FULL_DISK_NODE, PEER_PORT, CLIENT_PORT

    # ---- history ----------------------------------------------------------
    def record(self, fd, **fields):
        os.write(fd, (json.dumps(dict({"t": time.monotonic()}, **fields)) + "\n").encode())

    def nemesis(self, **fields):
        self.record(self.nemesis_fd, proc="nemesis", type="info", **fields)

    # ---- nodes ------------------------------------------------------------
    def ip(self, i):
        return "10.77.0.%d" % (10 + i)

    def data(self, i):
        return os.path.join(self.out, "node%d" % i)

    def conf(self, i):
        return os.path.join(self.out, "node%d.conf" % i)

    def log(self, i):
        return os.path.join(self.out, "node%d.log" % i)

    def endpoints(self, nodes=None):
        return ",".join("tls+tcp://%s:%d" % (self.ip(i), CLIENT_PORT)
                        for i in (nodes or range(1, NODES + 1)))

    def write_config(self, i):
        peers = "".join("%d = tls+tcp://%s:%d\n" % (m, self.ip(m), PEER_PORT)
                        for m in range(1, NODES + 1))
        with open(self.conf(i), "w") as f:
            f.write("[node]\nid = %d\ndata_dir = %s\npeer_addr = tls+tcp://%s:%d\n"
                    "client_addr = tls+tcp://%s:%d\ncluster = chaos\n\n"
                    "[tls]\nca_file = %s/ca.pem\ncert_key_file = %s/node%d.pem\n\n"
                    "[peers]\n%s\n[timing]\nelection_ms = %d\nheartbeat_ms = %d\n\n"
                    "[log]\nlevel = info\n"
                    % (i, self.data(i), self.ip(i), PEER_PORT, self.ip(i), CLIENT_PORT,
                       self.certs, self.certs, i, peers, ELECTION_MS, HEARTBEAT_MS))

    def start_node(self, i, *flags):
        if not flags and os.path.isdir(self.data(i)) and not os.listdir(self.data(i)):
            flags = ("--join",)  # wiped by the membership fault, not yet sent anything
        logf = open(self.log(i), "a")
        env = dict(os.environ, CHAOS_SEED=str(self.seed * 100 + i))
        self.nodes[i] = subprocess.Popen(self.net.exec_args("n%d" % i) +
                                         [self.daemon, "-c", self.conf(i)] + list(flags),
                                         stdout=logf, stderr=subprocess.STDOUT, env=env)
        logf.close()

    def node_up(self, i):
        p = self.nodes.get(i)
        return p is not None and p.poll() is None

    def mount_tmpfs(self, i):
        os.makedirs(self.data(i))
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + TMPFS, "chaos", self.data(i)],
                       check=True)
        self.mounted = self.data(i)

    # ---- CLI --------------------------------------------------------------
    def cli_args(self, member, *args):
        return self.net.exec_args(member) + [self.cli, "--endpoints", self.endpoints(),
                                             "--ca", self.certs + "/ca.pem",
                                             "--cert", self.certs + "/client.pem"] + list(args)

    def cli_run(self, member, *args):
        """The CLI's exit status; its last line of output in self.cli_said."""
        try:
            r = subprocess.run(self.cli_args(member, *args), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, timeout=30)
        except subprocess.TimeoutExpired:
            self.cli_said = "timed out"
            return -1
        self.cli_said = (r.stdout.strip().splitlines() or [""])[-1]
        return r.returncode

    def last_writer(self, res):
        """The client of resource res's last accepted write (None: none yet)."""
        try:
            with open(os.path.join(self.resources[res][1], "writes.jsonl"), "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - 300))
                return json.loads(f.read().splitlines()[-1])["client"]
        except (OSError, ValueError, IndexError, KeyError):
            return None

    def status(self):
        """{node: status dict} of the nodes that answered (from the ctl namespace)."""
        try:
            r = subprocess.run(self.cli_args("ctl", "status", "--json"), stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, text=True, timeout=10)
        except subprocess.TimeoutExpired:
            return {}
        out = {}
        for line in r.stdout.splitlines():
            try:
                st = json.loads(line)
            except ValueError:
                continue
            if "node" in st:
                out[st["node"]] = st
        return out

    def leader_status(self):
        """The status of the leader of the newest term that answered, or None."""
        leaders = [s for s in self.status().values() if s["role"] == "leader"]
        return max(leaders, key=lambda s: s["term"]) if leaders else None

    def leader(self):
        st = self.leader_status()
        return st["node"] if st else None

    def wait_writes(self, timeout):
        """True once every resource accepted a write after this call."""
        start = {r: self.count_writes(r) for r in self.resources}
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if all(self.count_writes(r) > n for r, n in start.items()):
                return True
            time.sleep(0.2)
        return False

    def count_writes(self, res):
        with open(os.path.join(self.resources[res][1], "writes.jsonl"), "rb") as f:
            return f.read().count(b"\n")

    def wait_leader(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            lead = self.leader()
            if lead is not None:
                return lead
            time.sleep(0.3)
        return None

    # ---- resources and clients --------------------------------------------
    def start_resource(self, name):
        d = os.path.join(self.out, "resource-" + name)
        os.makedirs(d)
        args = [os.path.join(self.build, "bin", "fenced-resource"), d]
        if self.fencing == "off":
            args.append("--no-fence")
        self.resources[name] = (subprocess.Popen(args, stdout=open(d + "/out", "w"),
                                                 stderr=subprocess.STDOUT), d)
        end = time.monotonic() + 10
        while not os.path.exists(d + "/sock") and time.monotonic() < end:
            time.sleep(0.05)

    def client_env(self, proc, lock, resource):
        return dict(os.environ, EDGELOCK_ENDPOINTS=self.endpoints(),
                    EDGELOCK_CA=self.certs + "/ca.pem", EDGELOCK_CERT=self.certs + "/client.pem",
                    CHAOS_SOCK=self.resources[resource][1] + "/sock",
                    CHAOS_HISTORY=os.path.join(self.hist, proc + ".jsonl"), CHAOS_LOCK=lock,
                    CHAOS_TTL_MS=str(TTL_MS), CHAOS_LOCK_DELAY_MS=str(LOCK_DELAY_MS))

    def start_client(self, slot):
        """A library worker in its slot (name, mode, lock, resource, namespace);
        each incarnation is a process of its own in the history (w1.1, w1.2)."""
        name, mode, lock, res, member = slot
        self.gen[name] = self.gen.get(name, 0) + 1
        proc = "%s.%d" % (name, self.gen[name])
        p = subprocess.Popen(self.net.exec_args(member) + [self.worker, mode, proc],
                             env=self.client_env(proc, lock, res), stdout=subprocess.DEVNULL,
                             stderr=open(os.path.join(self.out, proc + ".err"), "w"))
        self.clients[name] = (p, proc, slot)

    def watch_stuck(self):
        """A library call is bounded (request timeout, wait + 2 timeouts): a
        worker whose last operation was invoked STUCK_S ago and never
        completed is stuck. Its threads' stacks go to RUN/stuck-PROC.txt."""
        while not self.stopping:
            time.sleep(5)
            for p, proc, slot in list(self.clients.values()):
                if p.poll() is not None and proc not in self.killed and not self.stopping:
                    self.crashed[proc] = p.returncode  # a client library crash: start anew
                    self.killed.add(proc)
                    self.start_client(slot)
                if proc in self.stuck or p.poll() is not None:
                    continue
                try:
                    with open(os.path.join(self.hist, proc + ".jsonl"), "rb") as f:
                        f.seek(max(0, os.fstat(f.fileno()).st_size - 400))
                        last = json.loads(f.read().splitlines()[-1])
                except (OSError, ValueError, IndexError):
                    continue
                if last["type"] == "invoke" and time.monotonic() - last["t"] > STUCK_S:
                    self.stuck[proc] = last
                    with open(os.path.join(self.out, "stuck-%s.txt" % proc), "w") as out:
                        subprocess.run(["gdb", "-p", str(p.pid), "-batch", "-ex",
                                        "thread apply all bt"], stdout=out,
                                       stderr=subprocess.STDOUT, timeout=60)

    def cli_loop(self, name, member, lock, res):
        """`edgelock lock LOCK -- chaos-worker cmd`, again and again."""
        proc = name
        env = self.client_env(proc, lock, res)
        fd = os.open(env["CHAOS_HISTORY"], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        while not self.stopping:
            self.record(fd, proc=proc, type="invoke", f="cli-lock", lock=lock)
            args = self.cli_args(member, "lock", lock, "--ttl", "%dms" % TTL_MS, "--wait", "4s",
                                 "--lock-delay", "%dms" % LOCK_DELAY_MS, "--",
                                 self.worker, "cmd", proc)
            try:
                rc = subprocess.run(args, env=env, stdout=subprocess.DEVNULL,
                                    stderr=subprocess.DEVNULL, timeout=60).returncode
            except subprocess.TimeoutExpired:
                rc = -1
            typ = "ok" if rc == 0 else ("fail" if rc == 75 else "info")
            self.record(fd, proc=proc, type=typ, f="cli-lock", lock=lock, exit=rc)
            time.sleep(random.uniform(0.05, 0.3))

    # ---- the run ----------------------------------------------------------
    def setup(self):
        for i in range(1, NODES + 1):
            self.net.add("n%d" % i, self.ip(i))
        self.net.add("c1", "10.77.0.101")
        self.net.add("c2", "10.77.0.102")
        self.net.add("ctl", "10.77.0.200")
        self.mount_tmpfs(FULL_DISK_NODE)
        for i in range(1, NODES + 1):
            self.write_config(i)
            self.start_node(i, "--bootstrap")
        if self.wait_leader(60) is None:
            raise RuntimeError("no leader within 60 s")
        self.start_resource("A")
        self.start_resource("B")
        self.slots = [("w1", "lock", "chaos/rmw", "A", "c1"), ("w2", "lock", "chaos/rmw", "A", "c1"),
                      ("w3", "lock", "chaos/rmw", "A", "c2"), ("e1", "elect", "chaos/leader", "B", "c1"),
                      ("e2", "elect", "chaos/leader", "B", "c2")]
        for slot in self.slots:
            self.start_client(slot)
        t = threading.Thread(target=self.cli_loop, args=("cli1", "c2", "chaos/rmw", "A"), daemon=True)
        t.start()
        self.cli_threads.append(t)
        threading.Thread(target=self.watch_stuck, daemon=True).start()

    def teardown(self):
        self.stopping = True
        for p, _, _ in self.clients.values():
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                os.kill(p.pid, signal.SIGTERM)
        for p, _, _ in self.clients.values():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        for t in self.cli_threads:
            t.join(70)
        for i, p in list(self.nodes.items()):
            if p.poll() is None:
                os.kill(p.pid, signal.SIGCONT)
                os.kill(p.pid, signal.SIGTERM)
        for i, p in list(self.nodes.items()):
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        for p, _ in self.resources.values():
            p.terminate()
            p.wait()

    def cleanup(self):
        """Always: every process of ours by PID, the tmpfs, the namespaces."""
        for p in list(self.nodes.values()) + [c[0] for c in self.clients.values()] + \
                [r[0] for r in self.resources.values()]:
            if p.poll() is None:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
        if self.mounted:
            subprocess.run(["umount", "-l", self.mounted], check=False)
            self.mounted = None
        self.net.cleanup()


def merge_history(run):
    """Every process's file and the resources' accepted writes, in time order."""
    events = []
    for name in sorted(os.listdir(run.hist)):
        with open(os.path.join(run.hist, name), errors="replace") as f:
            for line in f:
                try:
                    events.append(json.loads(line))
                except ValueError:
                    pass  # a line cut by SIGKILL
    for res, (_, d) in run.resources.items():
        with open(os.path.join(d, "writes.jsonl")) as f:
            for line in f:
                w = json.loads(line)
                events.append(dict(w, proc="resource-" + res, type="ok", f="accepted", resource=res))
    events.sort(key=lambda e: e["t"])
    with open(os.path.join(run.out, "history.jsonl"), "w") as f:
        for e in events:
            f.write(json.dumps(e) + "\n")
    return events


def verdict(run, events, nem, seconds, recovered):
    violations, counts = check.check(events, TTL_MS, LOCK_DELAY_MS, ELECTION_BOUND_MS)
    for name in sorted(os.listdir(run.out)):
        if name.endswith(".err"):
            with open(os.path.join(run.out, name), errors="replace") as f:
                bad = [ln.strip() for ln in f if "Sanitizer" in ln or "runtime error" in ln]
            if bad:
                violations.append({"kind": "client-sanitizer", "what": "%s: %s" % (name, bad[0])})
    for proc, rc in sorted(run.crashed.items()):
        violations.append({"kind": "client-crashed", "what": "%s exited %d on its own (signal "
                           "%d: see dmesg)" % (proc, rc, -rc)})
    for proc, op in sorted(run.stuck.items()):
        violations.append({"kind": "stuck-client", "what": "%s: %s invoked at %.3f never "
                           "returned (stacks in stuck-%s.txt)" % (proc, op["f"], op["t"], proc)})
    if not recovered:
        violations.append({"kind": "no-recovery", "what": "healed, the cluster did not serve "
                           "the clients again within 60 s"})
    kinds = {}
    for v in violations:
        kinds[v["kind"]] = kinds.get(v["kind"], 0) + 1
    v = {"seconds": seconds, "fencing": run.fencing, "seed": run.seed,
         "operations": counts["operations"], "holds": counts["holds"],
         "accepted_writes": counts["accepted_writes"],
         "regrants_measured": counts["regrants_measured"],
         "faults": nem.counts, "findings": nem.findings, "violations": len(violations), "violations_by_kind": kinds,
         "examples": [x["kind"] + ": " + x["what"] for x in violations[:20]]}
    with open(os.path.join(run.out, "verdict.json"), "w") as f:
        json.dump(v, f, indent=1)
    return v


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=float, default=600)
    ap.add_argument("--fencing", choices=("on", "off"), default="on")
    ap.add_argument("--seed", type=int, default=int(time.time()) % 100000)
    ap.add_argument("--out")
    ap.add_argument("--faults", help="only these nemeses (comma-separated)")
    a = ap.parse_args()
    build = os.path.abspath(a.build)
    out = a.out or os.path.join(build, "chaos", "run-%d" % os.getpid())
    subprocess.run(["rm", "-rf", out], check=True)
    os.makedirs(out)
    random.seed(a.seed)
    print("chaos: %.0f s, fencing %s, seed %d, in %s" % (a.seconds, a.fencing, a.seed, out), flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    run = None
    try:
        run = Run(build, out, a.fencing, a.seed)
        run.setup()
        nem = Nemeses(run, random.Random(a.seed))
        nem.run_for(a.seconds, a.faults.split(",") if a.faults else None)
        nem.heal_all()
        run.wait_leader(60)
        recovered = run.wait_writes(60)  # healed, every resource is written again
        time.sleep(3)  # a quiet end: the clients finish what they started
        run.teardown()
        events = merge_history(run)
    finally:
        if run is not None:
            run.cleanup()
    v = verdict(run, events, nem, a.seconds, recovered)
    print(json.dumps(v, indent=1), flush=True)
    if a.fencing == "on":
        return 1 if v["violations"] else 0
    return 0 if v["violations_by_kind"].get("lost-update") else 1


if __name__ == "__main__":
    sys.exit(main())
