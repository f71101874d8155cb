"""linux_board_test.py BUILD BOARD QEMU [QEMU_ARGS...] - an ARM Linux board's
edgelockd (build/BOARD/bin/edgelockd, cross-built by mk/linux-boards.mk) run
under qemu-user (QEMU, e.g. qemu-aarch64) as node 1 of a three-node cluster whose
nodes 2 and 3 are the x86-64 edgelockd: TLS peer sessions between the two
architectures on loopback, driven by the real CLIs of both.

Checks: one leader is agreed by all three; the board's CLI (its libedgelock)
reads `status` from every node; leadership moves to an x86-64 node, then to
the board's node, and a lock is granted through it (x86-64 CLI); with node 3 SIGKILLed the board's
node and node 2 alone are a quorum, so a lock the board's CLI takes there
(a higher token) was replicated to the x86-64 node; SIGTERM stops the board's
daemon cleanly (status 0). Prints, as figures, the idle VmRSS of the qemu
process (the daemon and qemu's own memory: translated code, guest mappings)
and of an x86-64 daemon. Ends with "N passed, N failed".
"""
import json
import os
import subprocess
import sys
import time

from elcluster import Checks, Cluster, eventually

BUILD = os.path.abspath(sys.argv[1])
BOARD, QEMU = sys.argv[2], sys.argv[3:]  # QEMU: the qemu-user argv
BOARD_BIN = os.path.join(BUILD, BOARD, "bin")
X86_CLI = [os.path.join(BUILD, "bin", "edgelock")]
BOARD_CLI = QEMU + [os.path.join(BOARD_BIN, "edgelock")]
TOKEN_CMD = ["--", "sh", "-c", 'echo "token $EDGELOCK_TOKEN"']

check = Checks()


def cli(c, argv, *args, nodes=None):
    """Run a CLI (argv: its command) against the given nodes (default all)."""
    eps = ",".join(c.addr(i) for i in (nodes or sorted(c.procs)))
    env = dict(os.environ, EDGELOCK_ENDPOINTS=eps, EDGELOCK_CA=c.certs + "/ca.pem",
               EDGELOCK_CERT=c.certs + "/client.pem")
    return subprocess.run(argv + ["--timeout", "20s"] + list(args), env=env,
                          capture_output=True, text=True, timeout=90)


def token_of(r):
    """The token a `lock -- echo` run printed (None when it did not run)."""
    for line in r.stdout.splitlines():
        if line.startswith("token "):
            return int(line.split()[1])
    return None


def vm_rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return None


def leads(c, i, timeout=30.0):
    """Node i is the leader every running node names, within timeout."""
    def now():
        try:
            return c.wait_leader(5.0) == i
        except TimeoutError:
            return False
    return eventually(now, timeout)


def board_status(c):
    r = cli(c, BOARD_CLI, "status", "--json")
    rows = [json.loads(ln) for ln in r.stdout.splitlines() if ln.startswith("{")]
    ok = (r.returncode == 0 and len(rows) == 3 and all("error" not in x for x in rows)
          and len({x["leader"] for x in rows}) == 1)
    check("%s CLI: status of all 3 nodes, one leader" % BOARD, ok, r.stdout + r.stderr)
    mine = [x for x in rows if x.get("node") == 1]
    check("%s node reports 3 reachable voters" % BOARD,
          len(mine) == 1 and sum(m["reachable"] for m in mine[0]["members"]) == 3, str(mine))


def applied(c, i):
    st = c.status(i)
    return st.get(25, 0), st.get(26, 0)  # commit, applied (docs/protocol.md)


def run(c):
    c.cmd[1] = QEMU + [os.path.join(BOARD_BIN, "edgelockd")]
    c.start_all(bootstrap=True)
    leader = c.wait_leader(timeout=60.0)
    check("one leader agreed by the %s node and two x86-64 nodes" % BOARD, leader in (1, 2, 3))
    time.sleep(2.0)  # idle: elected, heartbeats only
    rss_board, rss_x86 = vm_rss_kib(c.procs[1].pid), vm_rss_kib(c.procs[2].pid)
    print("figure: idle VmRSS %s edgelockd under %s %d KiB (qemu included), "
          "x86-64 edgelockd %d KiB" % (BOARD, QEMU[0], rss_board, rss_x86), flush=True)
    board_status(c)

    # Leadership to an x86-64 node (from wherever it is), then to the board's.
    x86 = 3 if leader == 2 else 2
    for to, who in ((x86, "x86-64 node %d" % x86), (1, "the %s node" % BOARD)):
        r = cli(c, X86_CLI, "transfer-leader", str(to))
        check("transfer-leader %d accepted" % to, r.returncode == 0, r.stdout + r.stderr)
        check("%s leads" % who, leads(c, to))
    r = cli(c, X86_CLI, "lock", "board-smoke", *TOKEN_CMD)
    t1 = token_of(r)
    check("x86-64 CLI: lock granted by the %s leader" % BOARD, r.returncode == 0 and t1,
          r.stdout + r.stderr)

    c.kill(3)  # now every commit needs node 1 (board) and node 2 (x86-64)
    r = cli(c, BOARD_CLI, "lock", "board-smoke", *TOKEN_CMD, nodes=[1, 2])
    t2 = token_of(r)
    check("%s CLI: lock granted by nodes 1+2 alone, higher token (%s > %s)" % (BOARD, t2, t1),
          r.returncode == 0 and t1 and t2 and t2 > t1, r.stdout + r.stderr)
    commit1 = applied(c, 1)[0]
    check("x86-64 node 2 applied what the %s node committed (%d)" % (BOARD, commit1),
          eventually(lambda: applied(c, 2)[1] >= commit1, 30.0))

    rc, secs = c.stop(1)
    check("SIGTERM stops the %s daemon cleanly under qemu (status %s, %.1f s)" % (BOARD, rc, secs),
          rc == 0)


def main():
    c = Cluster(BUILD, n=3, election_ms=1500, heartbeat_ms=150)
    try:
        run(c)
    except Exception as e:  # a broken cluster is a failed check, never a hang
        check("ran to the end", False, repr(e))
    finally:
        c.stop_all()
    if check.failed:
        for i in sorted(c.peer_port):
            print("---- node%d.log (tail)" % i)
            with open(c.log(i)) as f:
                print("".join(f.readlines()[-15:]))
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
