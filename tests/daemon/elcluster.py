"""elcluster.py - start real edgelockd processes on loopback for tests, and
speak the client protocol (docs/protocol.md) to them.

    c = Cluster(build_dir, n=3)      # free ports, configs, certificates
    c.start_all(bootstrap=True)      # processes tracked by PID
    leader = c.wait_leader()         # node id, by STATUS over the protocol
    conn = c.connect(leader)         # TLS with the dev client certificate
    rep = conn.call({1: 1, 9: 10000})  # OPEN_SESSION; returns the reply map
    c.stop_all()                      # SIGTERM, then SIGKILL, by PID

Used by tests/daemon/cluster_test.py; other integration tests may use it.
Needs Debian's python3-cbor2 (run with /usr/bin/python3).
"""
import os
import signal
import socket
import ssl
import struct
import subprocess
import time

import cbor2

VERSION = 1


def write_private(path, text):
    """A certificate and private key file, mode 0600 whatever the umask:
    edgelockd refuses a cert_key_file every user may read."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)  # an older file of that name keeps its mode otherwise
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


def free_ports(n):
    """n distinct free TCP ports on 127.0.0.1 (held open together while picked)."""
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def mount_tmpfs(path, size, what):
    """A tmpfs of size (mount's "2m", "128k") made at path, for a test of a
    small or full disk: needs root. False, after a line saying the test
    `what` is skipped and why, when it cannot be mounted. Unmount with
    umount_tmpfs."""
    os.makedirs(path)
    m = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=" + size, "edgelock-test", path],
                       capture_output=True, text=True)
    if m.returncode != 0:
        print("skip %s: cannot mount a tmpfs (%s)" % (what, m.stderr.strip()))
    return m.returncode == 0


def umount_tmpfs(path):
    subprocess.run(["umount", "-l", path])


def tls_context(certs, cert="client.pem"):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.load_verify_locations(os.path.join(certs, "ca.pem"))
    ctx.check_hostname = False
    if cert:
        ctx.load_cert_chain(os.path.join(certs, cert))
    return ctx


class Conn:
    """One TLS connection speaking frames: 4-byte big-endian length + CBOR."""

    def __init__(self, port, certs, cert="client.pem", timeout=5.0, prove=True, proof_cert=None,
                 rcvbuf=None):
        """prove: answer the daemon's CHALLENGE (client port) with a PROOF by
        proof_cert (default: the TLS certificate), or, without a certificate
        or with proof_cert=False, go on as an anonymous client. prove=False leaves the challenge unread
        (the peer port's tests run the exchange themselves). rcvbuf: a small
        SO_RCVBUF set before connecting (a client that reads slowly fills
        the daemon's send queue sooner)."""
        raw = socket.socket()
        raw.settimeout(timeout)
        if rcvbuf is not None:
            raw.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
        raw.connect(("127.0.0.1", port))
        self.sock = tls_context(certs, cert).wrap_socket(raw)
        self.next_id = 1
        self.events = []
        self.challenge = None
        if prove:
            self.challenge = self.recv_frame(timeout)
            pem = cert if proof_cert is None else proof_cert  # False: no proof
            if pem:
                self.send_frame(ident_proof(os.path.join(certs, pem), self.challenge))

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def recv_frame(self, timeout=5.0):
        self.sock.settimeout(timeout)
        (n,) = struct.unpack(">I", self._read(4))
        return self._read(n)

    def prove(self, pem_path, expected=None):
        """Answer the listener's CHALLENGE (the first frame) with a PROOF."""
        self.send_frame(ident_proof(pem_path, self.recv_frame(), expected))

    def send_raw(self, data):
        self.sock.sendall(data)

    def send_frame(self, body):
        self.sock.sendall(struct.pack(">I", len(body)) + body)

    def send(self, msg):
        self.send_frame(cbor2.dumps(msg, canonical=True))

    def _read(self, n):
        return read_exact(self.sock, n)

    def recv(self, timeout=5.0):
        self.sock.settimeout(timeout)
        (n,) = struct.unpack(">I", self._read(4))
        return cbor2.loads(self._read(n))

    def call(self, fields, timeout=5.0):
        """Send a request (fields without 0 and 2) and wait for its reply;
        events that arrive meanwhile are kept in self.events."""
        rid = self.next_id
        self.next_id += 1
        msg = {0: VERSION, 2: rid}
        msg.update(fields)
        self.send(msg)
        deadline = time.time() + timeout
        while True:
            m = self.recv(max(0.05, deadline - time.time()))
            if m.get(1) == 128:
                self.events.append(m)
            elif m.get(2) == rid or m.get(1) == 129:
                return m

    def event(self, timeout=5.0):
        if self.events:
            return self.events.pop(0)
        m = self.recv(timeout)
        return m


IDENT_DOMAIN = b"edgelock-ident-v1\x00"


_IDENT_KEYS = {}


def _ident_key(pem_path):
    if pem_path not in _IDENT_KEYS:
        from cryptography import x509
        from cryptography.hazmat.primitives import serialization
        from cryptography.x509.oid import NameOID
        data = open(pem_path, "rb").read()
        cert = x509.load_pem_x509_certificate(data)
        key = serialization.load_pem_private_key(data, password=None)
        name = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value.encode()
        _IDENT_KEYS[pem_path] = (cert, key, name)
    return _IDENT_KEYS[pem_path]


def ident_proof(pem_path, challenge, expected=None):
    """The PROOF frame (net/el_ident.h) answering a CHALLENGE frame with the
    certificate and key in pem_path, signed for the listener name the
    challenge gives (or for expected, to play a dishonest prover)."""
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    ch = cbor2.loads(challenge)
    assert ch[0] == 1 and ch[1] == 1, ch
    nonce, listener = ch[2], (expected or ch[3])
    cert, key, name = _ident_key(pem_path)
    signed = (IDENT_DOMAIN + bytes([1, len(name)]) + name + bytes([len(listener)]) +
              listener.encode() + nonce)
    sig = key.sign(signed, ec.ECDSA(hashes.SHA256()))
    der = cert.public_bytes(serialization.Encoding.DER)
    return cbor2.dumps({0: 1, 1: 2, 2: der, 3: sig}, canonical=True)


def read_exact(sock, n):
    """n bytes from sock (EOFError when it closes first)."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise EOFError("connection closed")
        buf += chunk
    return buf


def read_frame(sock):
    """One length-prefixed frame's body from sock."""
    (n,) = struct.unpack(">I", read_exact(sock, 4))
    return read_exact(sock, n)


def eventually(pred, timeout=15.0, every=0.2):
    """True once pred() is, polling every `every` s; False after timeout."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(every)
    return False


class Cluster:
    def __init__(self, build, n=3, tmp=None, election_ms=600, heartbeat_ms=60, extra=""):
        self.build = os.path.abspath(build)
        self.bin = os.environ.get("EDGELOCKD") or os.path.join(self.build, "bin", "edgelockd")
        self.certs = os.path.join(self.build, "certs")
        self.dir = tmp or os.path.join(self.build, "tmp", "cluster-%d" % os.getpid())
        subprocess.run(["rm", "-rf", self.dir], check=True)
        os.makedirs(self.dir)
        ports = free_ports(2 * n)
        self.peer_port = {i + 1: ports[2 * i] for i in range(n)}
        self.client_port = {i + 1: ports[2 * i + 1] for i in range(n)}
        self.procs = {}
        self.election_ms = election_ms
        self.heartbeat_ms = heartbeat_ms
        self.extra = extra  # more config text for every node ([acl], [tls] client_auth)
        # node id -> the argv that runs its edgelockd (default [self.bin]); e.g. an
        # arm64 build under qemu-user (tests/daemon/linux_board_test.py)
        self.cmd = {}
        for i in self.peer_port:
            self.write_config(i, list(self.peer_port))

    def write_config(self, i, members):
        peers = "".join("%d = tls+tcp://127.0.0.1:%d\n" % (m, self.peer_port[m]) for m in members)
        with open(self.config(i), "w") as f:
            f.write("[node]\nid = %d\ndata_dir = %s\npeer_addr = tls+tcp://127.0.0.1:%d\n"
                    "client_addr = tls+tcp://127.0.0.1:%d\ncluster = test\n\n"
                    "[tls]\nca_file = %s/ca.pem\ncert_key_file = %s/node%d.pem\n\n"
                    "[peers]\n%s\n[timing]\nelection_ms = %d\nheartbeat_ms = %d\n"
                    "\n[log]\nlevel = info\n%s"
                    % (i, self.data(i), self.peer_port[i], self.client_port[i], self.certs,
                       self.certs, i, peers, self.election_ms, self.heartbeat_ms, self.extra))

    def add_node(self, i):
        """Ports and a config for node i (a later member)."""
        p = free_ports(2)
        self.peer_port[i], self.client_port[i] = p[0], p[1]
        self.write_config(i, list(self.peer_port))

    def config(self, i):
        return os.path.join(self.dir, "node%d.conf" % i)

    def data(self, i):
        return os.path.join(self.dir, "node%d" % i)

    def log(self, i):
        return os.path.join(self.dir, "node%d.log" % i)

    def call_leader(self, req, timeout=20.0, exclude=()):
        """(leader, reply): req sent to the node that leads now, and again
        to the next leader while the answer is "not the leader" (-3). Under
        a loaded CI run (ASan, other suites beside it) an election can fall
        between two steps of a test; a membership change sent to the old
        leader must still be made, or a stopped node is left a voter and
        every step after it finds no quorum. exclude: nodes that name no
        leader yet (a joiner not let in)."""
        deadline = time.time() + timeout
        while True:
            leader = self.wait_leader(timeout=max(1.0, deadline - time.time()),
                                      exclude=exclude)
            conn = self.connect(leader)
            try:
                rep = conn.call(req)
            finally:
                conn.close()
            if rep.get(3, 0) != -3 or time.time() > deadline:
                return leader, rep
            time.sleep(0.1)

    def print_leader_changes(self, last=12):
        """The last lines, over every node's log, that say why a leader
        changed (and a slow disk's, a likely cause), each prefixed "WHY":
        tests/summary.sh repeats them under a failed suite's name, so a CI
        that keeps only the tail of its output still shows whether an
        election fell inside a failed step."""
        pat = ("campaigning", "stepping down", "lost quorum", "handing leadership",
               "fdatasync of")  # a slow disk: diag.c's line
        lines = []
        for i in sorted(self.peer_port):
            if os.path.exists(self.log(i)):
                with open(self.log(i), errors="replace") as f:
                    lines += [ln.rstrip("\n") for ln in f if any(p in ln for p in pat)]
        for ln in sorted(lines)[-last:]:  # each line starts with its UTC time
            print("WHY " + ln[:240])

    def slow_disk(self, i, flag, ms):
        """Run node i (at its next start) behind the fdatasync shim
        (tests/daemon/slow_fsync.c): each sync ms slower while the file
        flag exists."""
        shim = os.path.join(self.build, "tests", "slow_fsync.so")
        self.cmd[i] = ["env", "LD_PRELOAD=" + shim, "EL_SLOW_FSYNC_FLAG=" + flag,
                       "EL_SLOW_FSYNC_MS=%d" % ms,
                       # the ASan build's runtime must otherwise come first
                       "ASAN_OPTIONS=%s:verify_asan_link_order=0"
                       % os.environ.get("ASAN_OPTIONS", ""), self.bin]

    def addr(self, i):
        return "tls+tcp://127.0.0.1:%d" % self.client_port[i]

    def start(self, i, *flags):
        logf = open(self.log(i), "a")
        argv = self.cmd.get(i, [self.bin])
        self.procs[i] = subprocess.Popen(argv + ["-c", self.config(i)] + list(flags),
                                         stdout=logf, stderr=subprocess.STDOUT)
        logf.close()
        return self.procs[i]

    def start_all(self, bootstrap=False):
        for i in sorted(self.peer_port):
            self.start(i, *(["--bootstrap"] if bootstrap else []))

    def signal(self, i, sig):
        p = self.procs.get(i)
        if p is not None and p.poll() is None:
            os.kill(p.pid, sig)

    def kill(self, i):
        self.signal(i, signal.SIGKILL)
        p = self.procs.pop(i, None)
        if p is not None:
            p.wait()

    def stop(self, i, timeout=10.0):
        """SIGTERM; returns (exit status, seconds), SIGKILL after timeout."""
        p = self.procs.pop(i, None)
        if p is None:
            return None, 0.0
        t0 = time.time()
        if p.poll() is None:
            os.kill(p.pid, signal.SIGTERM)
        try:
            rc = p.wait(timeout)
        except subprocess.TimeoutExpired:
            os.kill(p.pid, signal.SIGKILL)
            rc = p.wait()
        return rc, time.time() - t0

    def stop_all(self):
        for i in list(self.procs):
            self.stop(i)

    def connect(self, i, cert="client.pem", timeout=5.0, proof_cert=None):
        return Conn(self.client_port[i], self.certs, cert, timeout, proof_cert=proof_cert)

    def status(self, i):
        c = self.connect(i, timeout=2.0)
        try:
            return c.call({1: 13}, timeout=2.0)
        finally:
            c.close()

    def wait_leader(self, timeout=20.0, exclude=()):
        """The node id every running node names as leader (one of them leads)."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            seen = set()
            leader_roles = []
            try:
                for i in self.procs:
                    if i in exclude:
                        continue
                    st = self.status(i)
                    seen.add(st.get(17, 0))
                    if st.get(23) == 3:
                        leader_roles.append(i)
            except (OSError, EOFError, ssl.SSLError):
                time.sleep(0.1)
                continue
            if len(seen) == 1 and len(leader_roles) == 1 and leader_roles[0] in seen:
                return leader_roles[0]
            time.sleep(0.05)
        raise TimeoutError("no single leader within %.0f s" % timeout)


class Checks:
    """A suite's tally: check(name, cond, why) prints "ok NAME" or "FAIL NAME
    why" and returns cond; summary() prints the closing "N passed, N failed"
    line and returns the exit status."""

    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, name, cond, why=""):
        if cond:
            self.passed += 1
            print("ok   %s" % name, flush=True)
        else:
            self.failed += 1
            print("FAIL %s %s" % (name, why), flush=True)
        return cond

    def no_sanitizer_reports(self, c):
        """One check per node log: no AddressSanitizer/UBSan report in it.
        After a failed check, the leader changes too (WHY lines)."""
        if self.failed:
            c.print_leader_changes()
        for i in sorted(c.peer_port):
            if os.path.exists(c.log(i)):
                with open(c.log(i)) as f:
                    bad = [ln for ln in f if "Sanitizer" in ln or "runtime error" in ln]
                self("node%d: no sanitizer report" % i, not bad, "".join(bad[:5]))

    def summary(self):
        print("%d passed, %d failed" % (self.passed, self.failed))
        return 0 if self.failed == 0 else 1
