#!/usr/bin/python3
"""rejoin.py BUILD - a leader cut off by dropped packets (nftables in
network namespaces, not a closed connection) rejoins soon after the
network heals.

Three real edgelockd over TLS, each in a namespace of its own (netns.py).
The leader's packets to and from both other nodes are dropped for 30 s,
by rules in its own namespace (Net.block_at: the others see real loss),
then let through again: it steps down (CheckQuorum), the other two elect a
new leader, and after the heal the old one must hear of it. Its peer connections stay open all along, and TCP
retransmits with a doubling backoff (0.2, 0.6, 1.4, 3.0, 6.2, 12.6, 25.4,
51 s after the cut): without a bound on unacknowledged bytes the old
leader heard of the new one 26 s after the heal (after a 60 s cut an
outside tester waited 48 s), the cluster running on two of three
meanwhile. With
TCP_USER_TIMEOUT on peer sockets the dead connection is closed within two
election timeouts and the dialer redials within its 2 s backoff: the
old leader must name the new one within 8 s of the heal (0.4 s measured
quiet, 2.8 s beside a build at -j2).

Needs root (namespaces). Prints "N passed, N failed".
"""
import json
import os
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
from elcluster import Checks  # noqa: E402
from netns import Net  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
PEER_PORT, CLIENT_PORT = 7000, 7100
CUT_S, REJOIN_BOUND_S = 30.0, 8.0


def ip(i):
    return "10.77.0.%d" % (10 + i)


class Cluster3:
    def __init__(self, net, out):
        self.net, self.out, self.procs = net, out, {}
        self.certs = os.path.join(BUILD, "certs")
        for i in (1, 2, 3):
            peers = "".join("%d = tls+tcp://%s:%d\n" % (m, ip(m), PEER_PORT) for m in (1, 2, 3))
            with open(self.conf(i), "w") as f:
                f.write("[node]\nid = %d\ndata_dir = %s/node%d\npeer_addr = tls+tcp://%s:%d\n"
                        "client_addr = tls+tcp://%s:%d\ncluster = rejoin\n\n"
                        "[tls]\nca_file = %s/ca.pem\ncert_key_file = %s/node%d.pem\n\n"
                        "[peers]\n%s\n[timing]\nelection_ms = 1000\nheartbeat_ms = 100\n\n"
                        "[log]\nlevel = info\n"
                        % (i, out, i, ip(i), PEER_PORT, ip(i), CLIENT_PORT, self.certs,
                           self.certs, i, peers))

    def conf(self, i):
        return os.path.join(self.out, "node%d.conf" % i)

    def start(self, i):
        with open(os.path.join(self.out, "node%d.log" % i), "a") as logf:
            self.procs[i] = subprocess.Popen(
                self.net.exec_args("n%d" % i) + [os.path.join(BUILD, "bin", "edgelockd"),
                                                 "-c", self.conf(i), "--bootstrap"],
                stdout=logf, stderr=subprocess.STDOUT)

    def status(self, i):
        """Node i's own status (dict), or {} when it did not answer."""
        try:
            r = subprocess.run(self.net.exec_args("ctl") + [
                os.path.join(BUILD, "bin", "edgelock"), "--endpoints",
                "tls+tcp://%s:%d" % (ip(i), CLIENT_PORT), "--ca", self.certs + "/ca.pem",
                "--cert", self.certs + "/client.pem", "--timeout", "2s", "status", "--json"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, timeout=10)
            return json.loads(r.stdout.splitlines()[0]) if r.stdout else {}
        except (subprocess.TimeoutExpired, ValueError, IndexError):
            return {}

    def stop(self):
        for p in self.procs.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in self.procs.values():
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()


def wait_for(pred, timeout):
    end = time.time() + timeout
    while time.time() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.2)
    return None


def main():
    check = Checks()
    out = os.path.join(BUILD, "chaos", "rejoin-%d" % os.getpid())
    subprocess.run(["rm", "-rf", out], check=True)
    os.makedirs(out)
    net = Net("elj%d" % os.getpid())
    c = None
    try:
        for i in (1, 2, 3):
            net.add("n%d" % i, ip(i))
        net.add("ctl", "10.77.0.200")
        c = Cluster3(net, out)
        for i in (1, 2, 3):
            c.start(i)
        leader = wait_for(lambda: c.status(1).get("leader", 0), 60)
        check("a leader", bool(leader))
        if not leader:
            return check.summary()
        victim = leader
        others = [i for i in (1, 2, 3) if i != victim]
        for o in others:
            net.block_at("n%d" % victim, "n%d" % o)
        left = wait_for(lambda: c.status(victim).get("leader", -1) == 0, 10)
        check("cut off: node %d knows no leader" % victim, bool(left))
        time.sleep(max(0.0, CUT_S - 2.0))
        net.heal()
        healed = time.time()
        back = wait_for(lambda: c.status(victim).get("leader", 0) not in (0, None), 30)
        took = time.time() - healed
        check("healed: node %d follows a leader again within %.0f s (took %.1f s)"
              % (victim, REJOIN_BOUND_S, took), bool(back) and took <= REJOIN_BOUND_S)
        rcs = {i: p.poll() for i, p in c.procs.items()}
        check("every node still runs", all(rc is None for rc in rcs.values()), repr(rcs))
    finally:
        if c is not None:
            c.stop()
        net.cleanup()
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
