"""mixed_test.py BUILD - a mixed cluster: edgelockd nodes 1 and 2 (the small
profile, BUILD/small/bin/edgelockd) and node 3 a firmware image under QEMU
(mps2-an385), its UART on a unix socket relayed to the peer network by
edgelock-uart-relay (docs/mixed-cluster.md).

  - the three form one cluster: a daemon leads, the firmware node follows
    and applies what the daemons commit, the CLI is granted locks;
  - SIGKILL the leading daemon: the firmware node and the other daemon (two
    of three, so the firmware's vote is needed) elect a leader and keep
    granting locks;
  - restart that daemon, then SIGKILL QEMU: the two daemons keep granting;
  - every fencing token of the run is higher than the one before;
  - the relay, as node 3 on the peer port, refuses a hello with other
    capacity limits or naming another node than its proof, and drops (never
    relays to the board) a message forged as another node's or garbled;
  - the UART is a noisy line (a bit flipped in every 997th byte each way):
    both ends drop and count the corrupt frames, and all of the above holds.

Processes are tracked and stopped by PID. UART_RELAY picks another relay binary
(a sanitizer build). Needs qemu-system-arm and python3-cbor2.
"""
import os
import re
import select
import signal
import socket
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "daemon"))
import cbor2  # noqa: E402
from cluster_test import closed, fnv1a, peer_conn  # noqa: E402
from elcluster import Checks, Cluster  # noqa: E402

check = Checks()
FW_STATUS = re.compile(r"node 3: (\w+) term (\d+) leader (\d+) commit (\d+) applied (\d+); "
                       r"frames in \d+, dropped (\d+) \(crc (\d+)\)")


class NoisyLine(threading.Thread):
    """The wire between QEMU's UART socket and the relay, flipping one bit
    of every EVERY-th byte each way (the frames around them must be dropped
    and counted, never applied). Ends when either side closes."""

    EVERY = 997

    def __init__(self, board_path, relay_path):
        super().__init__(daemon=True)
        self.board_path = board_path
        self.lst = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.lst.bind(relay_path)
        self.lst.listen(1)
        self.flips = {"to board": 0, "from board": 0}
        self.stop = False

    def noisy(self, data, way, seen):
        out = bytearray(data)
        for k in range(len(out)):
            if (seen + k) % self.EVERY == self.EVERY - 1:
                out[k] ^= 0x10
                self.flips[way] += 1
        return bytes(out)

    def accept_relay(self):
        while not self.stop:
            try:
                return self.lst.accept()[0]
            except socket.timeout:
                continue
        return None

    def connect_board(self):
        while not self.stop:
            board = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                board.connect(self.board_path)
                return board
            except OSError:
                board.close()
                time.sleep(0.1)
        return None

    def pump(self, relay, board):
        """Until either side closes (QEMU killed: the relay then reconnects)."""
        seen = {relay: 0, board: 0}
        way = {relay: "to board", board: "from board"}
        peer = {relay: board, board: relay}
        while not self.stop:
            ready, _, _ = select.select([relay, board], [], [], 0.2)
            for s in ready:
                try:
                    data = s.recv(65536)
                    if data:
                        peer[s].sendall(self.noisy(data, way[s], seen[s]))
                except OSError:
                    data = b""
                if not data:
                    return
                seen[s] += len(data)

    def run(self):
        self.lst.settimeout(0.2)
        while not self.stop:
            relay = self.accept_relay()
            board = self.connect_board() if relay is not None else None
            if board is not None:
                self.pump(relay, board)
            for s in (relay, board):
                if s is not None:
                    s.close()
        self.lst.close()


class Mixed:
    """Cluster's daemons 1 and 2, plus the firmware node 3 and its relay."""

    def __init__(self, build):
        os.environ.setdefault("EDGELOCKD", os.path.join(build, "small", "bin", "edgelockd"))
        # the firmware's timing (examples/firmware/mixed_node_main.c)
        self.c = Cluster(build, 3, election_ms=1000, heartbeat_ms=100)
        self.build = self.c.build
        self.uart = os.path.join(self.c.dir, "node3.uart")
        self.line = NoisyLine(self.uart, os.path.join(self.c.dir, "relay.uart"))
        self.qemu = self.relay = None

    def log(self, name):
        return os.path.join(self.c.dir, name + ".log")

    def start_firmware(self, image="mixed-node.elf"):
        with open(self.log("qemu"), "a") as f:
            self.qemu = subprocess.Popen(
                ["qemu-system-arm", "-M", "mps2-an385", "-display", "none", "-monitor", "none",
                 "-semihosting-config", "enable=on,target=native",
                 "-serial", "unix:%s,server=on,wait=off" % self.uart,
                 "-kernel", os.path.join(self.build, "boards", "mps2-an385", image)],
                stdout=f, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)

    def start_relay(self):
        c = self.c
        peers = sum((["--peer", "%d=tls+tcp://127.0.0.1:%d" % (i, c.peer_port[i])]
                     for i in (1, 2)), [])
        with open(self.log("relay"), "a") as f:
            self.relay = subprocess.Popen(
                [os.environ.get("UART_RELAY") or
                 os.path.join(self.build, "small", "bin", "edgelock-uart-relay"), "--id", "3",
                 "--cluster", "test", "--ca", c.certs + "/ca.pem", "--cert",
                 c.certs + "/node3.pem", "--listen", "tls+tcp://127.0.0.1:%d" % c.peer_port[3]]
                + peers + ["--uart", "unix:" + self.line.lst.getsockname()],
                stdout=f, stderr=subprocess.STDOUT)
        self.line.start()

    def kill_firmware(self):
        os.kill(self.qemu.pid, signal.SIGKILL)
        self.qemu.wait()
        self.qemu = None

    def stop_all(self):
        self.line.stop = True
        for p in (self.relay, self.qemu):  # the relay first: its stop, not a lost board
            if p is not None and p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.c.stop_all()

    def firmware_status(self):
        """The firmware's last status line: (role, term, leader, commit, applied)."""
        with open(self.log("qemu")) as f:
            found = FW_STATUS.findall(f.read())
        if not found:
            return None
        role, *nums = found[-1]
        return (role,) + tuple(int(n) for n in nums)

    def cli(self, *args):
        c = self.c
        env = dict(os.environ, EDGELOCK_ENDPOINTS=",".join(c.addr(i) for i in (1, 2)),
                   EDGELOCK_CA=c.certs + "/ca.pem", EDGELOCK_CERT=c.certs + "/client.pem")
        return subprocess.run([os.path.join(self.build, "bin", "edgelock"), "--timeout", "20s"]
                              + list(args), env=env, capture_output=True, text=True, timeout=60)

    def cli_lock(self, name):
        """Run `edgelock lock NAME -- sh -c 'echo $EDGELOCK_TOKEN'`: (token or 0, output)."""
        r = self.cli("lock", name, "--", "sh", "-c", "echo token $EDGELOCK_TOKEN")
        m = re.search(r"token (\d+)", r.stdout)
        return (int(m.group(1)) if r.returncode == 0 and m else 0), r.stdout + r.stderr


def wait_for(cond, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.2)
    return None


def firmware_applied_at_least(m, index):
    st = m.firmware_status()
    return st is not None and st[0] == "follower" and st[4] >= index


def commit_of(c, i):
    """Node i's commit index (STATUS key 25), or 0 while it does not answer."""
    try:
        return c.status(i).get(25, 0)
    except (OSError, EOFError):
        return 0


def voter3(c, i):
    """Node 3 is a voter (role 1) in node i's configuration."""
    try:
        return any(x.get(20) == 3 and x.get(23) == 1 for x in c.status(i).get(28, []))
    except (OSError, EOFError):
        return False


def node3_unreachable(c, i):
    try:
        return any(x.get(20) == 3 and not x.get(45) for x in c.status(i).get(28, []))
    except (OSError, EOFError):
        return False


def hello(m, node, profile_xor=0):
    ver = subprocess.run([m.c.bin, "--version"], capture_output=True, text=True).stdout
    profile = int(ver.split("capacity profile ")[1].split()[0], 16)
    return cbor2.dumps({0: 1, 1: 100, 2: node, 3: fnv1a("test"), 4: profile ^ profile_xor,
                        5: "", 6: ""}, canonical=True)


def test_relay_input(m):
    """Bad input on the relay's peer port (as node 1, proven): refused or
    dropped, and nothing of it reaches the board."""
    c = m.c
    conn = peer_conn(c, 3, cert="node1.pem")
    conn.send_frame(hello(m, 1, profile_xor=1))
    check("relay: a hello with other capacity limits closes the connection", closed(conn))
    conn = peer_conn(c, 3, cert="node1.pem")
    conn.send_frame(hello(m, 2))
    check("relay: a hello naming another node than its proof closes it", closed(conn))
    conn = peer_conn(c, 3, cert="node1.pem")
    conn.send_frame(hello(m, 1))
    # heartbeats of term 999: "from node 2" on node 1's connection, and one
    # from node 1 addressed to node 2; then bytes that are no message at all
    conn.send_frame(cbor2.dumps({0: 1, 1: 7, 3: 2, 4: 3, 5: 999}, canonical=True))
    conn.send_frame(cbor2.dumps({0: 1, 1: 7, 3: 1, 4: 2, 5: 999}, canonical=True))
    conn.send_frame(b"\xa5" + b"\xff" * 40)
    check("relay: forged and garbled messages are dropped, the connection kept",
          not closed(conn, 1.0))
    conn.close()
    time.sleep(2.5)  # a status line of the firmware after them
    st = m.firmware_status()
    check("relay: none of them reached the board (its term is not 999)",
          st is not None and st[1] < 999, repr(st))
    with open(m.log("relay")) as f:
        text = f.read()
    check("relay: the refusals are logged with their reason",
          "other capacity limits" in text and "claims a node its proof is not" in text)


def locks(m, label, tokens, n=3):
    for k in range(n):
        tok, out = m.cli_lock("mixed")
        check("%s: lock %d granted through the CLI (token %d)" % (label, k + 1, tok), tok > 0,
              out[-400:])
        tokens.append(tok)


def run(m):
    c, tokens = m.c, []
    c.start(1, "--bootstrap")
    c.start(2, "--bootstrap")
    m.start_firmware()
    m.start_relay()
    leader = c.wait_leader(timeout=30)
    check("formed: a daemon leads (node %d)" % leader, leader in (1, 2))
    members = {x.get(20): x for x in c.status(leader).get(28, [])}
    check("formed: the firmware node 3 is a voter, reachable",
          3 in members and members[3].get(45) is True, repr(members))
    locks(m, "all up", tokens)
    test_relay_input(m)
    idx = commit_of(c, leader)
    check("all up: the firmware node applied every entry the daemons committed (%d)" % idx,
          idx > 0 and
          wait_for(lambda: firmware_applied_at_least(m, idx), 15), repr(m.firmware_status()))

    c.kill(leader)  # SIGKILL
    other = 2 if leader == 1 else 1
    check("daemon %d killed: node %d leads with the firmware's vote" % (leader, other),
          c.wait_leader(timeout=30) == other)
    locks(m, "one daemon down", tokens)
    idx = commit_of(c, other)
    check("one daemon down: the firmware node applied them too (%d)" % idx, idx > 0 and
          wait_for(lambda: firmware_applied_at_least(m, idx), 15), repr(m.firmware_status()))

    c.start(leader)  # a restart from its data directory
    check("daemon %d restarted: it catches up" % leader,
          wait_for(lambda: commit_of(c, leader) >= idx, 20))
    fw = m.firmware_status()
    m.kill_firmware()
    check("firmware killed: the daemons see node 3 unreachable (the relay dropped its links)",
          wait_for(lambda: node3_unreachable(c, leader), 15))
    locks(m, "firmware killed", tokens)
    rejoin(m, tokens)
    check("every fencing token of the run rose: %s" % tokens,
          all(t > 0 for t in tokens) and all(a < b for a, b in zip(tokens, tokens[1:])))
    for i in (1, 2):
        with open(c.log(i)) as f:
            text = f.read()
        check("node%d: no peer refused for its limits" % i, "other capacity limits" not in text)
    return fw


def rejoin(m, tokens):
    """QEMU lost node 3's RAM store: node 3 is removed, then the join image
    (no bootstrap) is added back as a new member; it catches up and is a
    voter again: with one daemon killed, it keeps the cluster granting."""
    c = m.c
    r = m.cli("members", "remove", "3")
    check("rejoin: members remove 3", r.returncode == 0, r.stdout + r.stderr)
    m.start_firmware("mixed-node-join.elf")
    r = m.cli("members", "add", "3", "tls+tcp://127.0.0.1:%d" % c.peer_port[3], "")
    check("rejoin: members add 3 (the empty join image)", r.returncode == 0, r.stdout + r.stderr)
    leader = c.wait_leader(timeout=30)
    check("rejoin: node 3 caught up and is a voter again",
          wait_for(lambda: voter3(c, leader) and firmware_applied_at_least(m, commit_of(c, leader)),
                   20), repr(m.firmware_status()))
    c.kill(leader)
    locks(m, "rejoined, daemon %d killed" % leader, tokens, n=2)


def noise_checks(m, fw):
    """The noisy line's flipped bits were caught on both ends: frames dropped
    and counted (the cluster went on: every other check of the run)."""
    with open(m.log("relay")) as f:
        text = f.read()
    check("relay: no sanitizer report", "Sanitizer" not in text and "runtime error" not in text,
          text[-600:])
    last = re.findall(r"frames from board: (\d+) good, (\d+) bad CRC, (\d+) too long, "
                      r"(\d+) bad escape, (\d+) too short, (\d+) cut", text)
    bad = sum(int(x) for x in last[-1][1:]) if last else 0
    check("noisy line: %d bits flipped from the board, the relay dropped %d frames"
          % (m.line.flips["from board"], bad),
          m.line.flips["from board"] > 0 and bad > 0 and int(last[-1][0]) > 0, repr(last[-1:]))
    check("noisy line: %d bits flipped to the board, the firmware dropped %s frames"
          % (m.line.flips["to board"], fw and fw[5]),
          m.line.flips["to board"] > 0 and fw is not None and fw[5] > 0, repr(fw))


def test_relay_setup(m):
    """What the relay says about its own setup (an outside tester): another
    node's certificate for --id exits 2 at once, naming both (the peers
    refused every link, for ever, while the relay said "board connected");
    a --uart that cannot be opened is said, not retried in silence; a
    SIGTERM is a stop, not "UART closed ... until it is back"; --help exits
    0 on stdout, and a usage error names the flag."""
    c = m.c
    relay = os.environ.get("UART_RELAY") or os.path.join(m.build, "small", "bin",
                                                         "edgelock-uart-relay")
    base = [relay, "--id", "3", "--cluster", "test", "--ca", c.certs + "/ca.pem",
            "--listen", "tls+tcp://127.0.0.1:%d" % c.peer_port[3],
            "--peer", "1=tls+tcp://127.0.0.1:%d" % c.peer_port[1]]
    r = subprocess.run(base + ["--cert", c.certs + "/node2.pem", "--uart", "unix:/nonexistent"],
                       capture_output=True, text=True, timeout=10)
    check("relay: another node's certificate for --id exits 2, naming both",
          r.returncode == 2 and "node 3 needs a certificate with OU=node and CN=node3, this one "
          "is CN=node2" in r.stderr, "%d %s" % (r.returncode, r.stderr[-300:]))
    p = subprocess.Popen(base + ["--cert", c.certs + "/node3.pem", "--uart",
                                 "unix:" + os.path.join(c.dir, "no-such.uart")],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(2.5)
    p.terminate()
    out = p.communicate(timeout=10)[0]
    check("relay: a --uart it cannot open is said once (retried quietly), and SIGTERM exits 0",
          p.returncode == 0 and out.count("cannot open the board's UART unix:") == 1 and
          "No such file or directory" in out, out[-400:])
    # `--help` printed the usage on stderr and exited 1, and a wrong or
    # missing flag got the same bare usage, naming nothing (a newcomer
    # following cmd/edgelock-uart-relay/README.md)
    r = subprocess.run([relay, "--help"], capture_output=True, text=True, timeout=10)
    check("relay: --help prints the usage on stdout and exits 0",
          r.returncode == 0 and r.stdout.startswith("usage: edgelock-uart-relay"),
          "%d %r" % (r.returncode, r.stderr[-200:]))
    for args, said in ((["--bogus", "x"], "unknown option --bogus"),
                       (base[1:] + ["--cert", c.certs + "/node3.pem"], "missing --uart"),
                       (["--id"], "a value is missing after --id")):
        r = subprocess.run([relay] + args, capture_output=True, text=True, timeout=10)
        check("relay: %s exits 1 saying %r" % (" ".join(args[-2:]), said),
              r.returncode == 1 and said in r.stderr, "%d %r" % (r.returncode, r.stderr[-300:]))


def main():
    m = Mixed(sys.argv[1])
    t0 = time.time()
    fw = None
    try:
        test_relay_setup(m)
        fw = run(m)
    except Exception as e:  # noqa: BLE001 - a crash is a failed check, then cleanup
        check("no exception", False, repr(e))
    finally:
        m.stop_all()
    noise_checks(m, fw)
    with open(m.log("relay")) as f:
        last = f.read().strip().splitlines()[-1:]
    check("relay: its last line on SIGTERM says it stopped, not that the board went away",
          last and "relay: stopping" in last[0], repr(last))
    print("mixed cluster run: %.1f s" % (time.time() - t0))
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
