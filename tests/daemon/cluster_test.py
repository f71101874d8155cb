"""cluster_test.py BUILD - three real edgelockd over TLS on loopback (ports
picked free at start, processes tracked by PID), driven through the client
protocol: election, redirect, a lock round trip with a FIFO handoff event,
SESSION_EXPIRING, 1,000 connections, a fourth node joined/promoted/removed,
SIGKILL of the leader with a waiter granted after the failover,
bad input on the client and the peer port (the daemons keep serving and the
held lock is untouched), SIGTERM of the leader (hands over, exits 0), a
member added after 16 node ids came and went (the leader's address book
reuses a stale entry),
SIGKILL of the whole cluster and restart (locks and sessions kept, tokens
keep rising), the bootstrap/join guards and --check-config.

Prints "ok NAME" / "FAIL NAME: why" per check, the failover time, and the
closing line "N passed, N failed".
"""
import os
import re
import random
import shutil
import signal
import socket
import ssl
import struct
import subprocess
import sys
import time

import cbor2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elcluster import Cluster, Conn, eventually, free_ports, Checks, write_private  # noqa: E402

EL_EINVAL, EL_ENOTLEADER, EL_ENOTFOUND, EL_EEXPIRED, EL_EDECODE, EL_EVERSION = -1, -3, -4, -7, -9, -10
check = Checks()




class State:
    pass


S = State()


def open_session(conn, ttl=30000, client="test"):
    rep = conn.call({1: 1, 9: ttl, 13: client, 14: random.getrandbits(64)})
    return rep.get(4, 0), rep


def test_election_and_redirect(c):
    S.leader = c.wait_leader()
    check("election: one leader all agree on", S.leader in c.procs)
    follower = next(i for i in c.procs if i != S.leader)
    conn = c.connect(follower)
    rep = conn.call({1: 1, 9: 10000})
    conn.close()
    check("redirect: a follower answers ENOTLEADER with the leader and its address",
          rep.get(3) == EL_ENOTLEADER and rep.get(17) == S.leader and
          rep.get(18) == c.addr(S.leader), repr(rep))
    st = c.status(follower)
    check("status: members, roles, term, commit",
          len(st.get(28, [])) == 3 and st.get(23, 0) == 0 and st.get(24, 0) >= 1 and
          st.get(25, 0) >= 1 and all(m.get(45) for m in st[28]), repr(st))


def test_lock_round_trip(c):
    a = c.connect(S.leader)
    b = c.connect(S.leader)
    S.a, S.b = a, b
    S.sa, rep = open_session(a, client="client-a")
    S.sb, _ = open_session(b, client="client-b")
    check("open: two sessions", S.sa > 0 and S.sb > 0 and S.sa != S.sb, repr(rep))
    rep = a.call({1: 4, 4: S.sa, 5: 1, 6: "door"})
    S.t1 = rep.get(11, 0)
    check("acquire: try-lock granted with a token", rep.get(3, 0) == 0 and S.t1 > 0, repr(rep))
    again = a.call({1: 4, 4: S.sa, 5: 1, 6: "door"})
    check("exactly-once: a retried seq returns the first answer",
          again.get(11) == S.t1 and again.get(15) == rep.get(15), repr(again))
    reuse = a.call({1: 5, 4: S.sa, 5: 1, 6: "door", 11: S.t1})
    check("exactly-once: a RELEASE with the ACQUIRE's seq is refused EINVAL, not its reply",
          reuse.get(3) == EL_EINVAL and reuse.get(11) is None, repr(reuse))
    reuse = a.call({1: 4, 4: S.sa, 5: 1, 6: "window"})
    check("exactly-once: an ACQUIRE of another name with that seq is refused EINVAL",
          reuse.get(3) == EL_EINVAL, repr(reuse))
    reuse = a.call({1: 4, 4: S.sa, 5: 1, 6: "door", 7: 1})
    check("exactly-once: a shared ACQUIRE with the exclusive one's seq is refused EINVAL "
          "(its client would think it shares the lock)", reuse.get(3) == EL_EINVAL, repr(reuse))
    far = a.call({1: 9, 4: S.sa, 5: 2 ** 64 - 1, 6: "door"})
    check("exactly-once: seq 2^64-1 is refused EINVAL (it would leave no seq after it)",
          far.get(3) == EL_EINVAL, repr(far))
    far = a.call({1: 9, 4: S.sa, 5: 2 ** 32 + 2, 6: "door"})
    check("exactly-once: a seq more than 2^32 past the last is refused EINVAL",
          far.get(3) == EL_EINVAL, repr(far))
    q = a.call({1: 11, 6: "door"})
    check("exactly-once: the refusals changed nothing (door still held, no watch, no window)",
          [h.get(11) for h in q.get(29, [])] == [S.t1] and q.get(31, 0) == 0 and
          a.call({1: 11, 6: "window"}).get(3) == -4, repr(q))
    text = log_text(c, S.leader)
    check("exactly-once: the refusals are logged with their reason",
          re.search(r"conn \d+ req \d+: release 'door' session %d seq 1 refused, [^:]*: seq "
                    r"already used by another request" % S.sa, text) and
          re.search(r"seq 18446744073709551615 refused, [^:]*: seq jumps", text), text[-1500:])
    rep = b.call({1: 4, 4: S.sb, 5: 1, 6: "door", 8: 20000})
    check("acquire: a second session queues", rep.get(16) is True and rep.get(3, 0) == 0,
          repr(rep))
    rep = a.call({1: 5, 4: S.sa, 5: 2, 6: "door", 11: S.t1})
    check("release: ok", rep.get(3, 0) == 0, repr(rep))
    ev = b.event(5.0)
    S.t2 = ev.get(11, 0)
    check("event: the waiter is granted by a pushed event, with a higher token",
          ev.get(1) == 128 and ev.get(19) == 1 and ev.get(4) == S.sb and ev.get(5) == 1 and
          S.t2 > S.t1, repr(ev))
    q = a.call({1: 11, 6: "door"})
    holders = q.get(29, [])
    check("query: the holder, its token and client name (the proven identity, then the label)",
          len(holders) == 1 and holders[0].get(4) == S.sb and holders[0].get(11) == S.t2 and
          holders[0].get(13) == "client client-b", repr(q))
    lst = a.call({1: 12})
    check("list: the lock is listed", [l.get(6) for l in lst.get(35, [])] == ["door"], repr(lst))
    lst = a.call({1: 12, 36: 2 ** 32 + 1})
    check("list: a cursor past the table is the end (not cut to 32 bits: the start again)",
          lst.get(3, 0) == 0 and lst.get(35, []) == [] and lst.get(36, 0) == 0, repr(lst))


def test_session_expiring(c):
    conn = c.connect(S.leader)
    s, _ = open_session(conn, ttl=2400, client="short")
    bare, _ = open_session(conn, ttl=2400, client="")  # no label: "client " stored
    held = conn.call({1: 4, 4: s, 5: 1, 6: "short-held"})
    t0 = time.time()
    ev = None
    try:
        while time.time() - t0 < 3.0 and ev is None:
            m = conn.event(3.0)
            if m.get(19) == 7 and m.get(4) == s:
                ev = m
    except (OSError, EOFError, ssl.SSLError):
        pass
    check("push: SESSION_EXPIRING before the lease ends, with a third or less left",
          ev is not None and 0 < ev.get(39, 0) <= 800 and time.time() - t0 < 2.4, repr(ev))
    time.sleep(max(0.0, t0 + 3.4 - time.time()))
    rep = conn.call({1: 4, 4: s, 5: 2, 6: "after-expiry"})
    check("push: the unrenewed session then expires", rep.get(3) == EL_EEXPIRED, repr(rep))
    conn.close()
    line = re.search(r"info: session %d of client 'client short' expired: no keepalive within "
                     r"its 2400 ms lease; ending it \(entry \d+\), with its 1 lock claim" % s,
                     log_text(c, S.leader))
    check("expiry: the leader logs the session, its client and its claims",
          held.get(3, 0) == 0 and line, repr(held))
    check("expiry: a session without a label is logged as 'client', no trailing space",
          "info: session %d of client 'client' expired" % bare in log_text(c, S.leader))


def still_serving(c, name):
    """A new connection is served and the held lock is untouched."""
    try:
        conn = c.connect(S.leader)
        ping = conn.call({1: 18})
        q = conn.call({1: 11, 6: "door"})
        conn.close()
        h = q.get(29, [{}])[0]
        ok = ping.get(1) == 82 and h.get(4) == S.sb and h.get(11) == S.t2
        check(name + ": daemon still serving, lock undisturbed", ok, repr(q))
    except (OSError, EOFError, ssl.SSLError) as e:
        check(name + ": daemon still serving", False, repr(e))


def expect_error(conn, body, err, name, raw=False):
    try:
        if raw:
            conn.send_raw(body)
        else:
            conn.send_frame(body)
        m = conn.recv(3.0)
        check(name, m.get(1) == 129 and m.get(3) == err, repr(m))
    except (OSError, EOFError, ssl.SSLError) as e:
        check(name, False, repr(e))


def test_bad_client_input(c):
    conn = c.connect(S.leader)
    expect_error(conn, bytes(random.getrandbits(8) for _ in range(200)) + b"\xff",
                 EL_EDECODE, "client: random bytes in a frame -> EDECODE")
    expect_error(conn, cbor2.dumps({0: 1, 1: 4, 2: 9, 4: S.sa, 5: 3, 6: 5}, canonical=True),
                 EL_EDECODE, "client: type-confused field (name as int) -> EDECODE")
    nested = b"\x81" * 200 + b"\x00"
    expect_error(conn, nested, EL_EDECODE, "client: 200-deep nesting -> EDECODE")
    wrong = conn.call({0: 2, 1: 18})
    check("client: wrong version -> EVERSION with the request id",
          wrong.get(1) == 129 and wrong.get(3) == EL_EVERSION and wrong.get(2) == conn.next_id - 1,
          repr(wrong))
    rep = conn.call({1: 4, 4: 987654321, 5: 1, 6: "door"})
    check("client: unknown session -> EEXPIRED", rep.get(3) == EL_EEXPIRED, repr(rep))
    rep = conn.call({1: 5, 4: S.sa, 5: 9, 6: "door", 11: S.t2})
    check("client: releasing another session's hold is refused", rep.get(3, 0) < 0, repr(rep))
    # an over-long length prefix: ERROR then the connection closes
    expect_error(conn, struct.pack(">I", 0x7fffffff), EL_EDECODE,
                 "client: oversized length -> EDECODE", raw=True)
    try:
        conn.recv(3.0)
        check("client: oversized length closes the connection", False)
    except (EOFError, OSError, ssl.SSLError):
        check("client: oversized length closes the connection", True)
    conn.close()
    conn = c.connect(S.leader)
    conn.send_raw(struct.pack(">I", 100) + b"\xa1" * 10)  # truncated, then gone
    conn.close()
    raw = socket.create_connection(("127.0.0.1", c.client_port[S.leader]), timeout=3)
    raw.sendall(bytes(random.getrandbits(8) for _ in range(4096)))  # not even TLS
    raw.close()
    try:
        Conn(c.client_port[S.leader], c.certs, cert=None).call({1: 18}, timeout=2)
        check("client: a connection without a certificate is refused", False)
    except (OSError, EOFError, ssl.SSLError):
        check("client: a connection without a certificate is refused", True)
    # issue 12: client_auth = required (the default) also needs the proof
    conn = Conn(c.client_port[S.leader], c.certs, proof_cert=False)
    conn.send({0: 1, 1: 18, 2: 1})
    ok = True  # closed before the error frame could be read: refused too
    try:
        m = conn.recv(3.0)
        ok = m.get(1) == 129 and m.get(3) == -18
        conn.recv(3.0)
        ok = False
    except (EOFError, OSError, ssl.SSLError):
        pass
    check("client: a request without an identity proof is refused (client_auth = required)", ok)
    with open(c.log(S.leader)) as f:
        check("client: ... with a log line saying why",
              "no identity proof, and [tls] client_auth = required" in f.read())
    still_serving(c, "client port")


def test_refusal_log(c):
    """Each refused frame of test_bad_client_input has an info line saying
    what was wrong; a flood on one connection is logged at most 5 lines a
    second, the rest counted when it closes."""
    text = log_text(c, S.leader)
    for what, pattern in [
            ("random bytes", r"frame of 201 bytes refused, [^:]*: type 0 \(\?\), no \{0: "
             r"version, 1: type\} map head"),
            ("a type-confused field", r"req 9: frame of \d+ bytes refused, [^:]*: type 4 "
             r"\(acquire\), a field unknown to its type"),
            ("a wrong version", r"frame of \d+ bytes refused, [^:]*: type 18 \(ping\), a "
             r"protocol version other than 1; it starts a3 00 02"),
            ("an oversized length", r"a frame length of 0 or over 16384 bytes refused")]:
        check("refusal log: %s is logged with its reason" % what, re.search(pattern, text),
              text[-2000:])
    conn = c.connect(S.leader)
    t0 = time.time()
    for k in range(40):
        conn.send({0: 2, 1: 18, 2: 7000 + k})
    got = [conn.recv(5.0).get(3) for _ in range(40)]
    conn.close()
    elapsed = time.time() - t0
    check("refusal log: a flood of 40 bad frames gets 40 EVERSION errors",
          got == [EL_EVERSION] * 40, repr(got))
    found = []

    def flood_logged():
        text = log_text(c, S.leader)
        lines = re.findall(r"conn (\d+) req 70\d\d: frame of", text)
        if lines:
            m = re.search(r"conn %s closed: (\d+) more refusals not logged" % lines[0], text)
            found[:] = [len(lines), int(m.group(1)) if m else None]
        return found and found[1] is not None
    ok = wait_for(flood_logged, timeout=10)
    check("refusal log: the flood is rate-limited (<= 5 lines a second) and the rest counted",
          ok and found[0] <= 5 * (int(elapsed) + 2) and found[0] + found[1] == 40,
          "%r in %.1f s" % (found, elapsed))


def peer_conn(c, i, cert="node3.pem", prove=True):
    """A connection to node i's peer port that has answered its challenge
    with the certificate (when prove) and is ready for a hello."""
    conn = Conn(c.peer_port[i], c.certs, cert=cert, prove=False)
    if prove and cert:
        conn.prove(os.path.join(c.certs, cert))
    return conn


def fnv1a(text):
    h = 0xcbf29ce484222325
    for ch in text.encode():
        h = ((h ^ ch) * 0x100000001b3) & 0xffffffffffffffff
    return h


def test_frame_boundaries(c):
    """Frames cut anywhere by TCP and TLS, many in one record, and one larger
    than the daemon's receive buffer are each read whole and in order."""
    conn = c.connect(S.leader)

    def ping(i):
        body = cbor2.dumps({0: 1, 1: 18, 2: i}, canonical=True)
        return struct.pack(">I", len(body)) + body
    one = ping(1001)
    for k in range(len(one)):  # one byte per TLS record
        conn.send_raw(one[k:k + 1])
    m = conn.recv(3.0)
    check("frames: a request sent a byte at a time is answered",
          m.get(1) == 82 and m.get(2) == 1001, repr(m))
    many = b"".join(ping(2000 + i) for i in range(40))
    conn.send_raw(many[:-3])
    time.sleep(0.05)
    conn.send_raw(many[-3:])
    ids = [conn.recv(3.0).get(2) for _ in range(40)]
    check("frames: 40 requests in one write, the last one cut, answered in order",
          ids == list(range(2000, 2040)), repr(ids))
    body = cbor2.dumps({0: 1, 1: 18, 2: 3001, 40: b"x" * 5000}, canonical=True)
    conn.send_raw(struct.pack(">I", len(body)) + body + ping(3002))
    first, second = conn.recv(3.0), conn.recv(3.0)
    check("frames: a 5 KB frame is read whole (one reply), the next one after it",
          first.get(1) in (82, 129) and second.get(1) == 82 and second.get(2) == 3002,
          repr((first, second)))
    conn.close()


def test_bad_peer_input(c):
    target = S.leader
    ver = subprocess.run([c.bin, "--version"], capture_output=True, text=True).stdout
    profile = int(ver.split("capacity profile ")[1].split()[0], 16)
    cluster = fnv1a("test")
    cases = [
        ("peer: random bytes", bytes(random.getrandbits(8) for _ in range(300))),
        ("peer: a Raft message before the hello",
         cbor2.dumps({0: 1, 1: 7, 3: 2, 4: target, 5: 999}, canonical=True)),
        ("peer: a hello of another cluster",
         cbor2.dumps({0: 1, 1: 100, 2: 2, 3: 1, 4: 1, 5: "", 6: ""}, canonical=True)),
        # its name in quotes, as libinih keeps them from cluster = "ops2"
        ("peer: a hello of another cluster, named",
         cbor2.dumps({0: 1, 1: 100, 2: 2, 3: fnv1a('"ops2"'), 4: profile, 5: "", 6: "",
                      7: '"ops2"'}, canonical=True)),
        ("peer: a wrong version", cbor2.dumps({0: 9, 1: 100}, canonical=True)),
        ("peer: deep nesting", b"\x81" * 300 + b"\x00"),
        ("peer: a type-confused hello (node id as text)",
         cbor2.dumps({0: 1, 1: 100, 2: "2", 3: 1, 4: 1, 5: "", 6: ""}, canonical=True)),
        ("peer: a hello claiming the receiver's own id",
         cbor2.dumps({0: 1, 1: 100, 2: target, 3: cluster, 4: profile, 5: "", 6: ""},
                     canonical=True)),
        ("peer: a hello with other capacity limits",
         cbor2.dumps({0: 1, 1: 100, 2: 9, 3: cluster, 4: profile ^ 1, 5: "", 6: ""},
                     canonical=True)),
    ]
    for name, body in cases:
        try:
            conn = peer_conn(c, target)
            conn.send_frame(body)
            try:
                conn.recv(2.0)
                check(name + " closes the connection", False)
            except (EOFError, OSError, ssl.SSLError):
                check(name + " closes the connection", True)
            conn.close()
        except (OSError, ssl.SSLError) as e:
            check(name, False, repr(e))
    conn = peer_conn(c, target)
    conn.send_raw(struct.pack(">I", 100) + b"\xa7\x00\x01")  # truncated, then gone
    conn.close()
    conn = peer_conn(c, target)
    conn.send_raw(struct.pack(">I", 0x10000000))
    try:
        conn.recv(2.0)
        check("peer: oversized length closes the connection", False)
    except (EOFError, OSError, ssl.SSLError):
        check("peer: oversized length closes the connection", True)
    try:
        peer_conn(c, target, cert=None).recv(2.0)
        check("peer: a connection without a certificate is refused", False)
    except (EOFError, OSError, ssl.SSLError):
        check("peer: a connection without a certificate is refused", True)
    with open(c.log(target)) as f:
        text = f.read()
    check("peer: the refusals are logged with their reason",
          "hello claiming this node's id" in text and "other capacity limits" in text and
          "another cluster" in text and "first frame is not a hello" in text)
    check("peer: another cluster's hello names both clusters (its name shown safely)",
          "it is of cluster '\"ops2\"', this node of 'test'" in text and
          "it is of cluster unknown (digest 0000000000000001), this node of 'test'" in text,
          "\n".join(ln for ln in text.splitlines() if "another cluster" in ln))
    time.sleep(0.5)
    check("peer port: leader unchanged", c.wait_leader() == S.leader)
    still_serving(c, "peer port")


def closed(conn, timeout=3.0):
    """True when the other end closes conn without sending anything more."""
    try:
        conn.recv_frame(timeout)
        return False
    except socket.timeout:
        return False
    except (EOFError, OSError, ssl.SSLError):
        return True


def hello(c, node, peer_addr=""):
    ver = subprocess.run([c.bin, "--version"], capture_output=True, text=True).stdout
    profile = int(ver.split("capacity profile ")[1].split()[0], 16)
    return cbor2.dumps({0: 1, 1: 100, 2: node, 3: fnv1a("test"), 4: profile, 5: peer_addr,
                        6: ""}, canonical=True)


def log_text(c, i):
    with open(c.log(i)) as f:
        return f.read()


def test_peer_identity(c):
    """Issue 12: the node id a peer claims in its hello must be the name its
    certificate proves (signed challenge); client certificates, other
    nodes' names, missing proofs and relayed challenges are refused."""
    target = S.leader
    others = [i for i in sorted(c.peer_port) if i != target]
    a, b = others[0], others[1]
    # control: a proven node<a> saying it is node a is kept open
    conn = peer_conn(c, target, cert="node%d.pem" % a)
    conn.send_frame(hello(c, a))
    check("peer identity: a proven node claiming its own id is accepted",
          not closed(conn, 1.5))
    conn.close()
    # node<a>'s valid certificate claiming node b
    conn = peer_conn(c, target, cert="node%d.pem" % a)
    conn.send_frame(hello(c, b))
    check("peer identity: node%d's certificate claiming node %d is refused" % (a, b), closed(conn))
    conn.close()
    # a client certificate on the peer port, proven correctly
    conn = peer_conn(c, target, cert="client.pem")
    check("peer identity: a client certificate on the peer port is refused", closed(conn))
    conn.close()
    # no proof at all: a hello as the first frame
    conn = peer_conn(c, target, cert="node%d.pem" % a, prove=False)
    conn.recv_frame()
    conn.send_frame(hello(c, a))
    check("peer identity: a hello without a proof is refused", closed(conn))
    conn.close()
    # a proof signed for another listener name (a replayed/relayed signature)
    conn = Conn(c.peer_port[target], c.certs, cert="node%d.pem" % a, prove=False)
    conn.prove(os.path.join(c.certs, "node%d.pem" % a), expected="node%d" % b)
    check("peer identity: a proof signed for another listener is refused", closed(conn))
    conn.close()
    text = log_text(c, target)
    check("peer identity: the refusals are logged with their reason",
          "the certificate proven on it is node%d's, the hello claims node%d" % (a, b) in text
          and "a client certificate (client) on the peer port" in text
          and "identity not proven: malformed proof" in text
          and "does not verify for this connection" in text, text[-2000:])
    # the frames sent with the close are handled after the connection is
    # gone: the refusal line still names where it came from (it said "from
    # ?" to an outside tester, whose one line a minute could be that one)
    conn = peer_conn(c, target, cert="node%d.pem" % a)
    claim = hello(c, 7)
    try:  # on a slow machine the node may close before the last ones leave
        for _ in range(21):
            conn.send_frame(claim)
    except (OSError, ssl.SSLError):
        pass
    conn.close()
    pat = (r"peer connection from 127\.0\.0\.1:\d+ \(node 7\): the certificate proven on it "
           r"is node%d's, the hello claims node7" % a)
    check("peer identity: frames sent with the close are refused naming the address",
          eventually(lambda: re.search(pat, log_text(c, target)) is not None, 3.0),
          log_text(c, target)[-600:])
    check("peer identity: leader unchanged", c.wait_leader() == S.leader)
    still_serving(c, "peer identity")
    test_nonmember_peer(c)
    test_relayed_challenge(c, target, a)
    test_inbound_table_full(c, target, a)
    test_stray_hello(c)
    test_burst_after_refusal(c)


def test_burst_after_refusal(c):
    """Frames already read when a malformed one closes a member's connection
    are dropped quietly: each used to add a second warning about a
    "connection not challenged", as if another connection existed."""
    leader = c.wait_leader()
    f = next(i for i in sorted(c.procs) if i != leader)
    conn = peer_conn(c, f, cert="node%d.pem" % leader)
    conn.send_frame(hello(c, leader))
    time.sleep(0.3)
    bad = b"\xff\x00garbage"
    try:  # one write: the daemon reads them all before it closes
        conn.sock.sendall((struct.pack(">I", len(bad)) + bad) * 6)
    except (OSError, ssl.SSLError):
        pass
    closed(conn)
    conn.close()
    wait_for(lambda: "malformed" in log_text(c, f), 5.0)
    time.sleep(0.3)  # any 'not challenged' line would follow the refusal at once
    text = log_text(c, f)
    check("burst after a refusal: one line, no 'not challenged' after it",
          "malformed" in text and "not challenged" not in text, text[-600:])


def test_stray_hello(c):
    """A hello with a member's own certificate (a leftover second copy of
    the leader, say) giving another peer address must not move a follower's
    dial of that member there: the follower kept answering the bogus
    address, its commit froze and nothing said so. The address it dials
    ([peers]) is kept, with a warning."""
    leader = c.wait_leader()
    f = next(i for i in sorted(c.procs) if i != leader)
    conn = peer_conn(c, f, cert="node%d.pem" % leader)
    conn.send_frame(hello(c, leader, "tls+tcp://127.0.0.1:1"))
    time.sleep(0.5)
    conn.close()
    time.sleep(2.5)  # a dial there would have failed by now, and stayed down
    lc = c.connect(leader)
    s = lc.call({1: 1, 9: 10000}).get(4, 0)
    rep = lc.call({1: 4, 4: s, 5: 1, 6: "stray-hello"})
    lc.call({1: 5, 4: s, 5: 2, 6: "stray-hello", 11: rep.get(11, 0)})
    lc.call({1: 3, 4: s})
    lc.close()
    target = c.status(leader).get(25, 0)
    deadline, got = time.time() + 5, 0
    while time.time() < deadline and got < target:
        got = c.status(f).get(25, 0)
        time.sleep(0.1)
    check("stray hello: the follower still follows (commit %d of the leader's %d)" % (got, target),
          rep.get(3, 0) == 0 and got >= target, repr(rep))
    check("stray hello: the address it dials is kept, with a warning",
          "this node dials" in log_text(c, f) and "kept" in log_text(c, f))


def test_inbound_table_full(c, target, a, slots=64):
    """An accepted peer connection whose far end died may never be seen to
    end (el_d_peer_link_lost). So with the inbound table (EL_D_INBOUND_MAX)
    full, a new connection takes the slot of the oldest one bound to a node
    that is bound on a newer one too, instead of being refused."""
    hi = hello(c, a)
    conns = []
    for _ in range(slots + 1):
        conn = peer_conn(c, target, cert="node%d.pem" % a)
        conn.send_frame(hi)
        conns.append(conn)
    check("inbound table full: the newest connection of a node is kept",
          not closed(conns[-1], 1.5))
    check("inbound table full: an older connection of the same node makes room",
          any(closed(k, 0.2) for k in conns[:8]))
    check("inbound table full: logged",
          "inbound table full; closing an older connection of node %d" % a in log_text(c, target))
    for k in conns:
        k.close()
    check("inbound table full: leader unchanged", c.wait_leader() == S.leader)
    still_serving(c, "inbound table full")


def leader_reachable_from(c, i, leader):
    """Whether node i's STATUS shows the leader reachable: its own dial of
    the leader (the inbound side of the leader) is up."""
    return any(m.get(20) == leader and m.get(45) for m in c.status(i).get(28, []))


def test_unproven_peer_slots(c, slots=64):
    """Any client certificate of the CA passes TLS on the peer port. Silent
    connections (no proof, or a proof and no hello) held the leader's
    inbound table (EL_D_INBOUND_MAX) for ever, and a restarted member could
    not link to it (an outside security tester). Now the oldest such one
    makes room for a new connection, and each is closed 10 s after its
    challenge."""
    leader = c.wait_leader()
    f = next(i for i in sorted(c.procs) if i != leader)
    c.stop(f)  # its link to the leader ends: the flood takes the slot
    flood, refused = [], 0
    for _ in range(slots + 4):
        conn = Conn(c.peer_port[leader], c.certs, cert="client.pem", prove=False)
        try:
            conn.recv_frame(3.0)  # the challenge: it holds a slot
            flood.append(conn)
        except (EOFError, OSError, ssl.SSLError):
            refused += 1
            conn.close()
    # proven as a node, and no hello after it (the newest: no eviction takes it)
    t0 = time.time()
    try:
        quiet = peer_conn(c, leader, cert="node%d.pem" % f)
    except (EOFError, OSError, ssl.SSLError):
        quiet = None  # refused: the table was full
    c.start(f)
    check("unproven peer slots: a restarted member links to the leader beside %d silent "
          "connections" % (slots + 4), wait_for(lambda: leader_reachable_from(c, f, leader), 6),
          "%d refused" % refused)
    check("unproven peer slots: the oldest silent connection made room",
          closed(flood[0], 0.5) if flood else False)
    check("unproven peer slots: logged that the oldest made room",
          "inbound table full: the oldest connection without an identity proof and hello"
          in log_text(c, leader), log_text(c, leader)[-600:])
    time.sleep(max(0.0, t0 + 10.5 - time.time()))
    check("unproven peer slots: a node proven without a hello is taken, closed after 10 s",
          quiet is not None and closed(quiet, 2.0))
    check("unproven peer slots: a connection with no proof is closed after 10 s",
          closed(flood[-1], 1.0) if flood else False)
    text = log_text(c, leader)
    lines = text.count("no identity proof and hello within 10 s of the challenge")
    check("unproven peer slots: the cuts are logged, one line a minute", 1 <= lines <= 2,
          "%d lines" % lines)
    for conn in flood + [quiet] * (quiet is not None):
        conn.close()
    check("unproven peer slots: leader unchanged", c.wait_leader() == leader)
    still_serving(c, "unproven peer slots")


def test_relayed_challenge(c, victim, other):
    """A member M (node 4, added as a learner at M's address, M holding its
    certificate) is dialed by the leader and relays node `other`'s challenge
    to it: the victim must not sign it (the challenge names node<other>, it
    dialed node4), so M has nothing to present to `other`."""
    import threading
    (port,) = free_ports(1)
    srv = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    srv.load_cert_chain(os.path.join(c.certs, "node4.pem"))
    srv.load_verify_locations(os.path.join(c.certs, "ca.pem"))
    srv.verify_mode = ssl.CERT_REQUIRED
    lsock = socket.create_server(("127.0.0.1", port))
    lsock.settimeout(10)
    got = {}

    def relay():
        try:
            raw, _ = lsock.accept()
            vconn = Conn.__new__(Conn)
            vconn.sock = srv.wrap_socket(raw, server_side=True)
            upstream = Conn(c.peer_port[other], c.certs, cert="node4.pem", prove=False)
            vconn.send_frame(upstream.recv_frame())  # the other node's challenge
            got["victim_closed"] = closed(vconn, 5.0)
            upstream.close()
            vconn.close()
        except (OSError, EOFError, ssl.SSLError) as e:
            got["error"] = repr(e)

    t = threading.Thread(target=relay)
    t.start()
    admin = c.connect(victim)
    rep = admin.call({1: 14, 20: 4, 21: "tls+tcp://127.0.0.1:%d" % port, 38: True})
    t.join(15)
    lsock.close()
    check("peer identity: the victim dials the member and refuses to prove to a relayed "
          "challenge", rep.get(3, 0) == 0 and got.get("victim_closed") is True,
          repr((rep, got)))
    check("peer identity: the relayed challenge is logged",
          "the challenge is not node4's (relayed?)" in log_text(c, victim))
    check("peer identity: the test member is removed again",
          wait_for(lambda: admin.call({1: 15, 20: 4}).get(3, 0) == 0) and
          wait_for(lambda: 4 not in members(c, victim)))
    admin.close()


def test_nonmember_peer(c):
    """A node certificate of the cluster CA (node5's) whose id is no member:
    its hello is refused, so the heartbeat of a far higher term it sends next
    changes no node's term (found by a black-box test: it moved the whole
    cluster to that term; at EL_TERM_MAX no node could campaign again)."""
    rogue_term = max(c.status(i).get(24, 0) for i in c.peer_port) + 1000
    conns = []
    for i in sorted(c.peer_port):
        conn = peer_conn(c, i, cert="node5.pem")
        conn.send_frame(hello(c, 5, "tls+tcp://127.0.0.1:1"))
        conn.send_frame(cbor2.dumps({0: 1, 1: 7, 3: 5, 4: i, 5: rogue_term, 8: 1}))
        conns.append(conn)
    check("non-member peer: its connections are closed", all(closed(k) for k in conns))
    for k in conns:
        k.close()
    terms = {i: c.status(i).get(24, 0) for i in c.peer_port}
    check("non-member peer: its heartbeat changed no node's term",
          all(t < rogue_term for t in terms.values()), repr((rogue_term, terms)))
    check("non-member peer: the refusal is logged, with the address it came from",
          all(re.search(r"peer connection from 127\.0\.0\.1:\d+ \(node 5\): not a member",
                        log_text(c, i)) for i in c.peer_port))
    check("non-member peer: leader unchanged", c.wait_leader() == S.leader)
    still_serving(c, "non-member peer")


def test_many_clients(c, n=int(os.environ.get("EL_TEST_CONNS", "1000"))):
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    conns = []
    t0 = time.time()
    try:
        for k in range(n):
            if k % 100 == 0:  # keep client-b's 30 s session (the door's holder) alive
                S.b.call({1: 2, 4: S.sb})
            conns.append(c.connect(S.leader, timeout=10.0))
        opened = time.time() - t0
        for k, conn in enumerate(conns):
            conn.send({0: 1, 1: 18, 2: k + 1})
        replies = sum(1 for k, conn in enumerate(conns) if conn.recv(10.0).get(2) == k + 1)
        check("%d concurrent client connections each get their reply" % n, replies == n,
              "%d of %d" % (replies, n))
        probe = c.connect(S.leader)
        s, _ = open_session(probe)
        t1 = time.time()
        rep = probe.call({1: 4, 4: s, 5: 1, 6: "busy-probe"})
        probe.call({1: 5, 4: s, 5: 2, 6: "busy-probe", 11: rep.get(11, 0)})
        lat = time.time() - t1
        probe.call({1: 3, 4: s})
        probe.close()
        print("%d connections opened in %.1f s; lock+unlock beside them took %.0f ms"
              % (n, opened, lat * 1000), flush=True)
        check("a lock round trip works beside them", rep.get(11, 0) > 0, repr(rep))
    finally:
        for conn in conns:
            conn.close()
    still_serving(c, "after %d connections" % n)


QUEUE_BYTES = 131072  # [limits] client_queue_bytes, its default


def vm_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        return next(int(ln.split()[1]) for ln in f if ln.startswith(key + ":"))


def unread_lists(c, n, per_round, most, other, node=None):
    """n connections to node (the leader) pipelining LISTs (a 2.4 KiB reply
    each) in rounds of per_round (within requests_per_client), never
    reading, until the node closes them or `most` went on each, and a PING
    on `other` each round; (requests sent on each, connections the node
    closed, PINGs answered, rounds)."""
    node = S.leader if node is None else node
    conns = [Conn(c.client_port[node], c.certs, rcvbuf=4096) for _ in range(n)]
    sent, shut, pings, rounds = [0] * n, [False] * n, 0, 0
    while not all(shut) and min(sent) < most:
        rounds += 1
        rep = other.call({1: 18}, timeout=10.0)
        pings += rep.get(1) == 82 and rep.get(3, 0) == 0
        for k, x in enumerate(conns):
            if shut[k]:
                continue
            body = b"".join(struct.pack(">I", len(b)) + b for b in (
                cbor2.dumps({0: 1, 1: 12, 2: sent[k] + j + 1, 37: 32}, canonical=True)
                for j in range(per_round)))
            try:
                x.send_raw(body)
                sent[k] += per_round
            except (OSError, ssl.SSLError):
                shut[k] = True
        time.sleep(0.05)
    for x in conns:
        x.close()
    return sent, sum(shut), pings, rounds


def test_unread_replies(c):
    """Clients that pipeline requests and never read: the leader closes each
    once client_queue_bytes wait for it, though far fewer than client_queue
    (1,024) frames do, says so, and its memory stays near its TLS buffers'
    (it grew 2.4 MiB per such connection: 1,024 LIST replies queued each),
    while another client keeps locking."""
    n = 6
    conn = c.connect(S.leader)
    s, _ = open_session(conn, client="unread")
    for k in range(32):  # a LIST page of 32 long names: a 2.4 KiB reply
        conn.call({1: 4, 4: s, 5: k + 1, 6: "unread-%02d-%s" % (k, "x" * 50)})
    pid = c.procs[S.leader].pid
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")  # VmHWM := VmRSS: the peak from here on
    base, start = vm_kib(pid, "VmRSS"), len(log_text(c, S.leader))
    sent, shut, pings, rounds = unread_lists(c, n, 40, 8000, conn)
    peak = vm_kib(pid, "VmHWM")
    print("unread replies: %d connections sent %s LISTs, %d closed; leader VmRSS %d KiB, peak "
          "%d KiB (+%d)" % (n, sent, shut, base, peak, peak - base), flush=True)
    check("unread replies: every connection that never reads is closed", shut == n,
          "%d of %d, sent %r" % (shut, n, sent))
    said = re.findall(r"send queue full \((\d+) frames, (\d+) bytes not read; \[limits\] "
                      r"client_queue = 1024 frames, client_queue_bytes = %d bytes\): closed"
                      % QUEUE_BYTES, log_text(c, S.leader)[start:])
    check("unread replies: closed at client_queue_bytes, short of client_queue frames, "
          "and logged so", said and all(int(f) < 1024 and int(b) <= QUEUE_BYTES
                                        for f, b in said), repr(said))
    if "/san/" in c.bin:  # ASan keeps freed memory in quarantine: no figure
        print("unread replies: resident memory not checked under ASan", flush=True)
    else:  # a queue each, and room for their TLS buffers and the other traffic
        check("unread replies: the leader's peak resident memory grew by less than %d KiB"
              % (n * (QUEUE_BYTES // 1024 + 128) + 3072),
              peak - base < n * (QUEUE_BYTES // 1024 + 128) + 3072, "+%d KiB" % (peak - base))
    rep = conn.call({1: 4, 4: s, 5: 100, 6: "unread-after"})
    check("unread replies: another client is served meanwhile and after",
          pings == rounds and rep.get(3, 0) == 0 and rep.get(11, 0) > 0,
          "%d of %d PINGs answered, then %r" % (pings, rounds, rep))
    conn.call({1: 3, 4: s})
    conn.close()


def unread_many(c, leader, n, per_conn, total):
    """unread_lists on node `leader` of c with n connections; (sent, shut,
    pings, rounds, peak growth in KiB, the total-bound lines)."""
    conn = c.connect(leader)
    s, _ = open_session(conn, client="unread-many")
    for k in range(32):  # a LIST page of 32 long names: a 2.4 KiB reply
        conn.call({1: 4, 4: s, 5: k + 1, 6: "unread-%02d-%s" % (k, "x" * 50)})
    pid = c.procs[leader].pid
    with open("/proc/%d/clear_refs" % pid, "w") as f:
        f.write("5")
    base = vm_kib(pid, "VmRSS")
    sent, shut, pings, rounds = unread_lists(c, n, 40, 8000, conn, leader)
    peak = vm_kib(pid, "VmHWM")
    print("unread replies, many: %d connections sent %d LISTs, %d closed; leader VmRSS %d "
          "KiB, peak %d KiB (+%d); per connection %d KiB, in all %d KiB"
          % (n, sum(sent), shut, base, peak, peak - base, per_conn // 1024, total // 1024),
          flush=True)
    said = re.findall(r"its send queue \((\d+) frames, (\d+) bytes not read\) was the largest "
                      r"when the client send queues, (\d+) bytes in all, were to take (\d+) "
                      r"more \(\[limits\] client_queues_total_bytes = %d\)" % total,
                      log_text(c, leader))
    rep = conn.call({1: 4, 4: s, 5: 100, 6: "unread-many-after"})
    conn.call({1: 3, 4: s})
    conn.close()
    return sent, shut, pings == rounds and rep.get(3, 0) == 0, peak - base, said


def test_unread_replies_many(c):
    """Connections that never read, more of them than client_queues_total_bytes
    has room for at client_queue_bytes each: the node closes the one with
    the largest queue whenever all client queues together would pass the
    total, says so, and its memory grows by the total and the connections'
    TLS buffers, not by a full queue per connection, while another client
    keeps locking. A cluster of its own where one connection may queue 1 MiB
    and all of them 1 MiB: without the total its 16 connections grew the
    leader by about 7 MiB (about 2 MiB with it), and could have pinned 16."""
    n, per_conn, total = 16, 1024 * 1024, 1024 * 1024
    other = Cluster(c.build, 3, tmp=os.path.join(c.build, "tmp", "unread-%d" % os.getpid()),
                    extra="[limits]\nclient_queue_bytes = %d\nclient_queues_total_bytes = %d\n"
                    % (per_conn, total))
    try:
        other.start_all(bootstrap=True)
        leader = other.wait_leader()
        _, shut, served, grew, said = unread_many(other, leader, n, per_conn, total)
    finally:
        other.stop_all()
        check.no_sanitizer_reports(other)
    check("unread replies, many: every connection that never reads is closed", shut == n,
          "%d of %d" % (shut, n))
    check("unread replies, many: the largest closed at client_queues_total_bytes, logged so",
          said and all(int(t) <= total < int(t) + int(more) and int(b) <= per_conn
                       for _, b, t, more in said), repr(said[:3]))
    if "/san/" in c.bin:
        print("unread replies, many: resident memory not checked under ASan", flush=True)
    else:  # the queues' total, the TLS buffers of each connection, the rest
        bound = total // 1024 + n * 80 + 1536
        check("unread replies, many: the leader's peak resident memory grew by less than "
              "%d KiB" % bound, grew < bound, "+%d KiB" % grew)
    check("unread replies, many: another client is served meanwhile and after", served)


def members(c, i):
    return {m.get(20): m.get(23, 0) for m in c.status(i).get(28, [])}


def wait_for(pred, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            if pred():
                return True
        except (OSError, EOFError, ssl.SSLError):
            pass
        time.sleep(0.1)
    return False


def peer_addr(c, i):
    return "tls+tcp://127.0.0.1:%d" % c.peer_port[i]


def test_waiting_joiner(c):
    """A node started with --join that no member knows yet (node 5: never
    added, in no member's [peers]) is refused by every member at its hello
    until `members add`. Its log says so once per member, not a "connected"
    and a "link lost" line at every redial for as long as it waits."""
    c.add_node(5)
    c.start(5, "--join")
    time.sleep(4)
    c.stop(5)
    text = log_text(c, 5)
    check("waiting joiner: says once per member why its links close, then is quiet "
          "(%d 'connected' lines in 4 s)" % text.count("net: connected to node"),
          "it refuses this node" in text and text.count("net: connected to node") <= 3,
          text[-600:])
    # Restarted without --join before it had any state: not "empty, start
    # with --bootstrap or --join", which might send an operator to bootstrap
    # a second cluster, but what it is: a joiner still to be let in.
    rc = c.start(5).wait(timeout=15)
    c.procs.pop(5, None)
    del c.peer_port[5], c.client_port[5]
    tail = log_text(c, 5)[len(text):]
    check("waiting joiner restarted without --join: refused, told to --join again",
          rc != 0 and "start it with --join again" in tail and "--bootstrap" not in tail,
          "exit %r: %s" % (rc, tail[-400:]))


def member_addrs(c, at, i):
    return [(m.get(21), m.get(22)) for m in c.status(at).get(28, []) if m.get(20) == i]


def test_readd_member(c, conn, other):
    """`members add` of a current member, with addresses nobody has: the
    leader refuses it saying why, a follower answers "not the leader", and
    no node's address book takes the new addresses (they did, on every node
    the request reached: the member was cut off until they restarted)."""
    fake = tuple("tls+tcp://127.0.0.1:%d" % p for p in free_ports(2))
    before = {i: member_addrs(c, i, other) for i in (S.leader, other)}
    rep = conn.call({1: 14, 20: other, 21: fake[0], 22: fake[1]})
    follower = c.connect(other)
    frep = follower.call({1: 14, 20: other, 21: fake[0], 22: fake[1]})
    follower.close()
    check("members add of a current member: refused by the leader (EINVAL), 'not the "
          "leader' from a follower", rep.get(3, 0) == EL_EINVAL and frep.get(3, 0) ==
          EL_ENOTLEADER, "%r %r" % (rep, frep))
    check("members add of a current member: the leader's line says it is one",
          "admin member-add for node %d: invalid argument (node %d is already a member)"
          % (other, other) in log_text(c, S.leader), log_text(c, S.leader)[-600:])
    after = {i: member_addrs(c, i, other) for i in (S.leader, other)}
    check("members add of a current member: no node took the new addresses",
          after == before and all(a and a[0][0] != fake[0] for a in after.values()),
          "%r -> %r" % (before, after))
    lock_traffic(conn, "readd")
    check("members add of a current member: it still follows and holds the log",
          wait_for(lambda: c.status(other).get(17) == S.leader), repr(c.status(other)))


def test_membership(c):
    c.add_node(4)
    c.start(4, "--join")
    conn = c.connect(S.leader)
    for peer, client in [("notaurl", c.addr(4)), ("tls+tcp://127.0.0.1:99999", c.addr(4)),
                         ("tls+tcp://127.0.0.1:%d" % c.peer_port[4], "tls+tcp://nohost"),
                         # every address of whoever dials it (an outside tester)
                         ("tls+tcp://0.0.0.0:%d" % c.peer_port[4], c.addr(4)),
                         ("tls+tcp://127.0.0.1:%d" % c.peer_port[4],
                          "tls+tcp://[::ffff:0.0.0.0]:%d" % c.client_port[4])]:
        rep = conn.call({1: 14, 20: 9, 21: peer, 22: client})
        check("members add: refused with a bad address (%s, %s)" % (peer, client),
              rep.get(3, 0) == -1 and 9 not in members(c, S.leader), repr(rep))
    # one address for both ports (the node could not listen on both, its
    # peers would dial its client port), however spelled; a client address
    # without a peer address (the leader dropped it without a word)
    for peer, client, why in [
            (peer_addr(c, 4), peer_addr(c, 4), "PEER_ADDR and CLIENT_ADDR are one address"),
            (peer_addr(c, 4), peer_addr(c, 4).replace("127.0.0.1", "localhost"),
             "PEER_ADDR and CLIENT_ADDR are one address"),
            ("", c.addr(4), "a client address without a peer address")]:
        start = len(log_text(c, S.leader))
        rep = conn.call({1: 14, 20: 9, 21: peer, 22: client})
        check("members add: refused, nothing proposed: %s (%s, %s)" % (why, peer, client),
              rep.get(3, 0) == EL_EINVAL and rep.get(27, 0) == 0 and
              9 not in members(c, S.leader), repr(rep))
        check("members add: the leader's log says why: %s" % why,
              re.search(r"admin member-add for node 9: [^(]*\(%s" % why,
                        log_text(c, S.leader)[start:]), log_text(c, S.leader)[start:][-400:])
    other = 1 if S.leader != 1 else 2
    for peer, client in [(peer_addr(c, other), c.addr(4)), (peer_addr(c, 4), c.addr(other)),
                         (c.addr(other), c.addr(4)), (peer_addr(c, 4), peer_addr(c, other)),
                         (peer_addr(c, S.leader), c.addr(S.leader)),
                         # another spelling of one address (it was let in)
                         (peer_addr(c, other).replace("127.0.0.1", "LocalHost"), c.addr(4))]:
        rep = conn.call({1: 14, 20: 5, 21: peer, 22: client})
        check("members add: refused with a current member's address (%s, %s)" % (peer, client),
              rep.get(3, 0) == EL_EINVAL and 5 not in members(c, S.leader), repr(rep))
    check("members add: the refusal is logged with the member whose address it is",
          re.search(r"admin member-add for node 5: [^(]*\(an address of member %d\)" % other,
                    log_text(c, S.leader)))
    test_readd_member(c, conn, other)
    rep = conn.call({1: 14, 20: 4, 21: "tls+tcp://127.0.0.1:%d" % c.peer_port[4],
                     22: c.addr(4)})
    check("members add: accepted by the leader", rep.get(3, 0) == 0 and rep.get(27, 0) > 0,
          repr(rep))
    check("members add: node 4 caught up and promoted to voter",
          wait_for(lambda: members(c, S.leader).get(4) == 1), repr(members(c, S.leader)))
    check("members add: node 4 knows the leader",
          wait_for(lambda: c.status(4).get(17) == S.leader))
    rep = conn.call({1: 11, 6: "door"})
    check("members add: the lock table reached node 4's cluster intact",
          rep.get(29, [{}])[0].get(11) == S.t2, repr(rep))
    lock_traffic(conn, "member")  # the add and the removal batches apart, for test_rejoin
    gone, rep = remove_member(c, 4)
    check("members remove: accepted, node 4 is gone from the configuration", gone,
          "%r %r" % (rep, members(c, S.leader)))
    # The leader stopped replicating to node 4 at the removal's append; it
    # tells node 4 the removal committed, and node 4 stops by itself (exit 0)
    # after five quiet election timeouts (docs/operations.md).
    proc = c.procs[4]
    try:
        rc = proc.wait(20.0)
    except subprocess.TimeoutExpired:
        rc = None
    check("members remove: the removed follower stops by itself, exit 0 (got %r)" % rc, rc == 0)
    c.stop(4)
    conn.close()
    try:
        test_rejoin(c)
    finally:
        drop_node4(c)


def drop_node4(c):
    """Node 4 out of the configuration, stopped, its ports forgotten.
    Whatever failed before, the tests after need the three voters they
    started with: a stopped node 4 left a voter would take their quorum (4
    voters, 3 running, one stopped by the next)."""
    try:
        if any(4 in members(c, j) for j in c.procs if j != 4):
            remove_member(c, 4)
    finally:
        c.stop(4)
        del c.peer_port[4]
        del c.client_port[4]


def call_leader(c, req):
    """req at whichever of the three founders leads (elcluster's
    call_leader); S.leader follows it."""
    S.leader, rep = c.call_leader(req, exclude=[i for i in c.procs if i > 3])
    return rep


def remove_member(c, i):
    """`members remove i` made, at whichever node leads; True once no node
    of the cluster lists i. A removal the old leader appended and its
    successor committed is answered EINVAL ("not a member") when retried."""
    rep = call_leader(c, {1: 15, 20: i})
    gone = wait_for(lambda: all(i not in members(c, j) for j in c.procs if j != i))
    return (rep.get(3, 0) == 0 or rep.get(3, 0) == EL_EINVAL) and gone, rep


def lock_traffic(conn, name):
    """200 log entries: 100 acquire/release pairs (an append carries at most 64)."""
    s, _ = open_session(conn)
    for seq in range(1, 101):
        if seq % 25 == 1:  # test_kill_all_restart wants client-b's 30 s session alive
            S.b.call({1: 2, 4: S.sb})
        rep = conn.call({1: 4, 4: s, 5: 2 * seq - 1, 6: name})
        conn.call({1: 5, 4: s, 5: 2 * seq, 6: name, 11: rep.get(11, 0)})


def test_rejoin(c):
    """Node 4 removed, wiped and added again (found by tests/chaos): the new,
    empty node replays the log, its old removal included, batches before the
    entry that adds it again; it must not take that removal for its own."""
    conn = c.connect(S.leader)
    lock_traffic(conn, "rejoin")  # the removal and the re-add batches apart
    conn.close()
    subprocess.run(["rm", "-rf", c.data(4)], check=True)
    c.start(4, "--join")
    rep = call_leader(c, {1: 14, 20: 4, 21: "tls+tcp://127.0.0.1:%d" % c.peer_port[4],
                          22: c.addr(4)})
    check("members re-add of a removed, wiped node: accepted", rep.get(3, 0) == 0, repr(rep))
    check("re-added node 4 caught up and was promoted to voter",
          wait_for(lambda: members(c, S.leader).get(4) == 1), repr(members(c, S.leader)))
    time.sleep(2.0)
    S.b.call({1: 2, 4: S.sb})
    check("re-added node 4 still runs (its old removal in the log did not stop it)",
          c.procs[4].poll() is None)
    gone, rep = remove_member(c, 4)
    check("members remove of the re-added node: accepted, it is gone", gone, repr(rep))


def test_sigterm_leader(c):
    old = S.leader
    t0 = time.time()
    rc, secs = c.stop(old)
    check("sigterm: the leader exits 0 within 5 s", rc == 0 and secs < 5.0,
          "rc=%r after %.1f s" % (rc, secs))
    S.leader = c.wait_leader(timeout=10)
    S.failover = time.time() - t0
    print("failover after SIGTERM of the leader: %.0f ms" % (S.failover * 1000), flush=True)
    check("sigterm: a new leader among the others", S.leader != old)
    with open(c.log(old)) as f:
        text = f.read()
    check("sigterm: it handed leadership over first", "handing leadership to node" in text)
    c.start(old)
    check("restart after sigterm: the node rejoins",  # 1 s, unless the machine is slow
          wait_for(lambda: c.status(old).get(17) == S.leader, 10.0))


def test_sigkill_leader_waiter_granted(c):
    """A holds "pump", B waits; the leader dies by SIGKILL. After the new
    leader is elected, A releases (retrying nothing twice) and B, reattached
    by a keepalive, learns of its grant by event or by retrying its seq."""
    a, b = c.connect(S.leader), c.connect(S.leader)
    sa, _ = open_session(a, client="killer-a")
    sb, _ = open_session(b, client="killer-b")
    ta = a.call({1: 4, 4: sa, 5: 1, 6: "pump"}).get(11, 0)
    queued = b.call({1: 4, 4: sb, 5: 1, 6: "pump", 8: 30000}).get(16)
    a.close()
    b.close()
    old = S.leader
    sizes = {i: os.path.getsize(c.log(i)) for i in c.peer_port if i != old}
    t0 = time.time()
    c.kill(old)
    S.leader = c.wait_leader(timeout=15)
    failover = time.time() - t0
    print("failover after SIGKILL of the leader: %.0f ms (election_ms %d)"
          % (failover * 1000, c.election_ms), flush=True)
    check("sigkill: a new leader is elected", S.leader != old and ta > 0 and queued is True)
    # The followers saw the killed leader's link close and campaigned at
    # once (el_raft_peer_lost), not after an election timeout: the new
    # leader says so in its log.
    with open(c.log(S.leader)) as f:
        f.seek(sizes.get(S.leader, 0))
        early = "the link to node %d, the leader, closed" % old in f.read()
    check("sigkill: the new leader campaigned when the old one's link closed", early)
    check("sigkill: ... and says why at warning level",
          re.search(r"warning: node %d: its link to leader %d closed and nothing heard from it "
                    r"for \d+ ms since \(it stopped, or this node is cut off from it\): "
                    r"campaigning" % (S.leader, old), log_text(c, S.leader)))
    a, b = c.connect(S.leader), c.connect(S.leader)
    b.call({1: 2, 4: sb})  # reattach B's events to this connection
    rel = a.call({1: 5, 4: sa, 5: 2, 6: "pump", 11: ta})
    got = None
    try:
        ev = b.event(5.0)
        if ev.get(19) == 1 and ev.get(4) == sb:
            got = ev.get(11)
    except (OSError, EOFError, ssl.SSLError):
        pass
    retry = b.call({1: 4, 4: sb, 5: 1, 6: "pump", 8: 30000})
    check("sigkill: the waiter is granted after the failover, with a higher token",
          rel.get(3, 0) == 0 and retry.get(3, 0) == 0 and retry.get(11, 0) > ta and
          (got is None or got == retry.get(11)), "release %r retry %r event %r" % (rel, retry, got))
    wrong = b.call({1: 5, 4: sb, 5: 1, 6: "pump", 11: retry.get(11, 0)})
    check("sigkill: the new leader refuses a RELEASE with the seq of the old leader's ACQUIRE",
          wrong.get(3) == EL_EINVAL, repr(wrong))
    a.call({1: 3, 4: sa})
    b.call({1: 3, 4: sb})
    a.close()
    b.close()
    c.start(old)
    check("sigkill: the killed node rejoins", wait_for(lambda: c.status(old).get(17) == S.leader))


def test_no_redirect_to_dead_leader(c):
    """The leader dies by SIGKILL while the third node is stopped, so no new
    leader can be elected: the follower left still believes in the dead one
    until it campaigns, but once its link to it has closed it must not send
    clients there (ENOTLEADER without the address: they ask again)."""
    old = c.wait_leader()
    follower, other = [i for i in sorted(c.procs) if i != old]
    conn = c.connect(follower)
    c.signal(other, signal.SIGSTOP)
    t0 = time.time()
    c.kill(old)
    late = []  # replies from 10 ms after the kill on: the link's end is seen by then
    while time.time() - t0 < 0.4:
        rep = conn.call({1: 1, 9: 10000})
        if time.time() - t0 >= 0.01:
            late.append((rep.get(3), rep.get(18)))
    conn.close()
    c.signal(other, signal.SIGCONT)
    named = [r for r in late if r[1] == c.addr(old)]
    check("dead leader: a follower stops naming it once their link has closed",
          len(late) >= 5 and all(r[0] == EL_ENOTLEADER for r in late) and not named,
          "%d replies, %d name the dead leader: %r" % (len(late), len(named), late[:3]))
    c.start(old)
    S.leader = c.wait_leader(timeout=15)
    check("dead leader: a leader again once the nodes are back", S.leader in c.procs)


def paused_first(c):
    """(leader, the first other voter in the configuration's order, the third)."""
    leader = c.wait_leader()
    order = [m.get(20) for m in c.status(leader).get(28, []) if m.get(23) == 1]
    paused = next(i for i in order if i != leader)
    return leader, paused, next(i for i in order if i not in (leader, paused))


def test_handover_skips_silent(c):
    """A leader hands over (SIGTERM, or a TRANSFER naming no node) to a voter
    that answers it. The first voter with a live link used to be taken: a
    SIGSTOPped board keeps its link, so the SIGTERMed leader handed over to
    it and ran out its time as leader, and TRANSFER was answered EBUSY
    ('has not answered'), while the third node was healthy."""
    leader, paused, healthy = paused_first(c)
    c.signal(paused, signal.SIGSTOP)
    try:
        time.sleep(2.5 * c.election_ms / 1000.0)  # silent for over an election timeout
        start = os.path.getsize(c.log(leader))
        rc, _ = c.stop(leader)
        with open(c.log(leader)) as f:
            f.seek(start)
            said = re.findall(r"stopping: handing leadership to node (\d+)", f.read())
        check("SIGTERM: the leader hands over to the voter that answers, not to the paused one",
              rc == 0 and said == [str(healthy)], "exit %s, handed to %s (paused %d)"
              % (rc, said, paused))
    finally:
        c.signal(paused, signal.SIGCONT)
    c.start(leader)
    leader, paused, healthy = paused_first(c)
    c.signal(paused, signal.SIGSTOP)
    try:
        time.sleep(2.5 * c.election_ms / 1000.0)
        conn = c.connect(leader)
        rep = conn.call({1: 17}, timeout=10)
        conn.close()
        led = eventually(lambda: c.status(healthy).get(23) == 3, timeout=10)
        check("TRANSFER naming no node: to the voter that answers, not to the paused one",
              rep.get(3, 0) == 0 and rep.get(20) == healthy and led,
              "%r (paused %d, healthy %d)" % (rep, paused, healthy))
    finally:
        c.signal(paused, signal.SIGCONT)
    S.leader = c.wait_leader()


def test_why_leader_changed(c):
    """The reasons at warning level (journalctl -p warning): a SIGSTOPped
    leader (its links stay up) is heard from no more, and the follower that
    campaigns says so, without claiming the leader failed; the old leader,
    resumed, says whose term it steps down for; the third node, moved to
    the new term by the winner's election, says so (info); a leader whose
    two followers are SIGSTOPped steps down on CheckQuorum and says it lost
    quorum, naming them."""
    old = c.wait_leader()
    sizes = {i: os.path.getsize(c.log(i)) for i in c.procs}
    c.signal(old, signal.SIGSTOP)
    try:
        new = S.leader = c.wait_leader(timeout=10, exclude=(old,))
    finally:
        c.signal(old, signal.SIGCONT)
    said = [ln for i in c.procs if i != old for ln in log_text(c, i)[sizes[i]:].splitlines()
            if re.search(r": warning: node \d+: heard nothing from leader %d for \d+ ms "
                         r"\(election timeout %d ms; it stopped, or this node is cut off from "
                         r"it\): campaigning" % (old, c.election_ms), ln)]
    check("stopped leader: a follower says it heard nothing from it, at warning", said)
    down = (r": warning: node %d: stepping down: (node %d is leading term \d+|term \d+ began "
            r"with node %d's election)" % (old, new, new))
    check("stopped leader, resumed: it says whose term it steps down for",
          wait_for(lambda: re.search(down, log_text(c, old)[sizes[old]:]), 5.0),
          log_text(c, old)[sizes[old]:][-600:])
    third = [i for i in c.procs if i not in (old, new)][0]
    moved = (r": info: node %d: term \d+ began with node %d's election \(this node voted for "
             r"it\)" % (third, new))
    check("stopped leader: the third node says whose election began the new term",
          re.search(moved, log_text(c, third)[sizes[third]:]),
          log_text(c, third)[sizes[third]:][-600:])
    S.leader = c.wait_leader(timeout=15)
    others = [i for i in sorted(c.procs) if i != S.leader]
    size = os.path.getsize(c.log(S.leader))
    want = (r": warning: node %d: lost quorum: heard from fewer than a majority of the 3 "
            r"voters within an election timeout \(%d ms\), stepped down \(check_quorum\); "
            r"not heard from: node %d, %d" % (S.leader, c.election_ms, others[0], others[1]))
    for i in others:
        c.signal(i, signal.SIGSTOP)
    try:
        lost = wait_for(lambda: re.search(want, log_text(c, S.leader)[size:]), 5.0)
    finally:
        for i in others:
            c.signal(i, signal.SIGCONT)
    check("lost quorum: the leader says so at warning, naming the voters it lost", lost,
          log_text(c, S.leader)[size:][-600:])
    S.leader = c.wait_leader(timeout=15)


def test_membership_answered_on_commit(c):
    """A membership change is answered once it commits. The leader answered
    when it appended the entry: a leader cut off from the others (a chaos
    run) answered "ok" to a removal that never committed, and the node the
    operator then wiped was still a voter. Here both followers are
    SIGSTOPped: no answer may come while the entry cannot commit; once they
    resume, the answer must say what happened (committed: the learner is a
    member; replaced by another leader's entry: it is not)."""
    S.leader = c.wait_leader()
    fake = tuple("tls+tcp://127.0.0.1:%d" % p for p in free_ports(2))
    others = [i for i in sorted(c.procs) if i != S.leader]
    conn = c.connect(S.leader)
    for i in others:
        c.signal(i, signal.SIGSTOP)
    try:
        conn.send({0: 1, 1: 14, 2: 7001, 20: 9, 21: fake[0], 22: fake[1], 38: True})
        try:
            early = conn.recv(1.5)
        except (socket.timeout, TimeoutError):
            early = None
    finally:
        for i in others:
            c.signal(i, signal.SIGCONT)
    check("membership change, no quorum: no answer while its entry cannot commit",
          early is None, repr(early))
    rep = early
    try:
        while rep is None or rep.get(2) != 7001:
            rep = conn.recv(15.0)
    except (socket.timeout, TimeoutError, EOFError, OSError) as e:
        rep = {"error": repr(e)}
    conn.close()
    S.leader = c.wait_leader(timeout=15)
    now = members(c, S.leader)
    err = rep.get(3, 0)
    check("membership change, quorum back: the answer says what happened (committed: a "
          "member; replaced: not one)", (err == 0 and 9 in now) or
          (err == EL_ENOTLEADER and 9 not in now), "%r, members %r" % (rep, now))
    if 9 in now:
        _, r = c.call_leader({1: 15, 20: 9})
        check("membership change: the learner added is removed again", r.get(3, 0) == 0,
              repr(r))


def test_membership_repeated(c):
    """A removal or an add sent again once it was made (its answer lost, the
    leader moved on: libedgelock sends it again elsewhere, or a script after
    the CLI's exit 69) is answered with the entry that made it. They were
    answered "not a member" and "already a member" (two chaos runs), and the
    operator read a failure. An add of the same node with other addresses
    is still "already a member", and a removal of a node that never was a
    member still "not found"."""
    fake = tuple("tls+tcp://127.0.0.1:%d" % p for p in free_ports(3))
    add = {1: 14, 20: 9, 21: fake[0], 22: fake[1], 38: True}
    _, first = c.call_leader(add)
    _, again = c.call_leader(add)
    _, other = c.call_leader({**add, 22: fake[2]})
    check("membership repeated: an add sent again is answered with the entry that made it",
          first.get(3, 0) == 0 and again.get(3, 0) == 0 and first.get(27) == again.get(27),
          "%r %r" % (first, again))
    check("membership repeated: an add of the member with other addresses is refused",
          other.get(3, 0) == EL_EINVAL, repr(other))
    _, first = c.call_leader({1: 15, 20: 9})
    _, again = c.call_leader({1: 15, 20: 9})
    check("membership repeated: a removal sent again is answered with the entry that made it",
          first.get(3, 0) == 0 and again.get(3, 0) == 0 and first.get(27) == again.get(27),
          "%r %r" % (first, again))
    _, never = c.call_leader({1: 15, 20: 8})
    check("membership repeated: a removal of a node never a member is still refused",
          never.get(3, 0) == EL_ENOTFOUND, repr(never))


def test_book_full(c):
    """A member added after 16 other node ids passed through the leader's
    life (members added and removed: boards replaced) is dialed and catches
    up. The leader's address book (16 entries) never forgot an id: once full
    it dropped the new member's addresses without a word, never dialed it,
    and the member never caught up. Here 16 made-up learners (ids 6..21,
    addresses nobody listens on) are added and removed, then node 4."""
    for i in range(6, 22):
        fake = tuple("tls+tcp://127.0.0.1:%d" % p for p in free_ports(2))
        rep = call_leader(c, {1: 14, 20: i, 21: fake[0], 22: fake[1], 38: True})
        gone, rrep = remove_member(c, i)
        if rep.get(3, 0) != 0 or not gone:
            check("book full: learner %d added and removed" % i, False, "%r %r" % (rep, rrep))
            return
    leader = S.leader
    c.add_node(4)
    subprocess.run(["rm", "-rf", c.data(4)], check=True)
    c.start(4, "--join")
    try:
        rep = call_leader(c, {1: 14, 20: 4, 21: peer_addr(c, 4), 22: c.addr(4), 38: True})
        check("book full: node 4 added as a learner", rep.get(3, 0) == 0, repr(rep))
        goal = c.status(S.leader).get(25, 0)
        caught = wait_for(lambda: c.status(4).get(17) == S.leader and
                          c.status(4).get(26, 0) >= goal, timeout=20.0)
        try:
            applied = c.status(4).get(26)
        except (OSError, EOFError, ssl.SSLError) as e:
            applied = repr(e)
        check("book full: node 4, added after 16 ids came and went, caught up (applied %r, "
              "leader %d's commit %d)" % (applied, S.leader, goal), caught,
              "leader was %d; its log: %s" % (leader, log_text(c, S.leader)[-600:]))
    finally:
        drop_node4(c)


def test_kill_all_restart(c):
    for i in list(c.procs):
        c.kill(i)
    c.start_all()
    S.leader = c.wait_leader(timeout=20)
    conn = c.connect(S.leader)
    q = conn.call({1: 11, 6: "door"})
    h = q.get(29, [{}])[0]
    check("kill -9 all + restart: the hold and its token are there",
          h.get(4) == S.sb and h.get(11) == S.t2, repr(q))
    rep = conn.call({1: 2, 4: S.sb})
    check("kill -9 all + restart: the session is there (keepalive ok)", rep.get(3, 0) == 0,
          repr(rep))
    s3, _ = open_session(conn)
    rep = conn.call({1: 4, 4: s3, 5: 1, 6: "after-restart"})
    check("kill -9 all + restart: the next token is higher than every earlier one",
          rep.get(11, 0) > S.t2, repr(rep))
    conn.close()


def test_quick_exit(c):
    """A node that exits at once, its links up for under a second (as on a
    full disk at start, exit 3; here SIGTERM as soon as a member's link to
    it is up): the member says it was stopping, not that it refuses this
    node (nobody refused anyone: an outside tester), and the node's own log
    says nothing of its links closing on its way out (it said each peer
    refused it). A refusal, which closes without a TLS close_notify, keeps
    its line (test_waiting_joiner)."""
    leader = c.wait_leader()
    v = next(i for i in (3, 2, 1) if i != leader)
    others = [i for i in sorted(c.procs) if i != v]
    time.sleep(1.2)  # the members' links to it held: their next loss is said
    c.stop(v)
    time.sleep(1.0)  # the members' dials to it fail meanwhile
    before = {i: len(log_text(c, i)) for i in c.peer_port}
    c.start(v)
    up = "net: connected to node %d" % v
    deadline = time.time() + 8.0
    while time.time() < deadline and not any(up in log_text(c, i)[before[i]:] for i in others):
        time.sleep(0.01)
    c.stop(v)
    closing = "node %d closed the link" % v
    wait_for(lambda: any(closing in log_text(c, i)[before[i]:] for i in others), 5.0)
    time.sleep(0.2)  # the other member's line, if it comes
    new = {i: log_text(c, i)[before[i]:] for i in c.peer_port}
    said = [ln for i in others for ln in new[i].splitlines() if closing in ln]
    check("quick exit: a member says the node was stopping, not that it refuses it",
          any(up in new[i] for i in others) and
          any("saying it was stopping (not a refusal)" in ln for ln in said) and
          not any("refuses this node" in ln for ln in said), repr(said))
    check("quick exit: the node says nothing of its own links closing on its way out",
          "closed the link as it opened" not in new[v] and "lost; redialing" not in new[v],
          new[v][-800:])
    c.start(v)
    c.wait_leader()
    time.sleep(2.5)  # the members redial it (backoff) and the links hold


def test_two_threads(c):
    """A daemon runs two threads: the node's, which reads and writes every
    frame itself, and one for accepts, dials and TLS handshakes (net/README.md).
    A hand-off between threads per frame is what issue 14 removed."""
    for i, p in sorted(c.procs.items()):
        if p.poll() is not None:
            continue
        task = "/proc/%d/task" % p.pid
        names = []
        for t in os.listdir(task):
            try:
                with open(os.path.join(task, t, "comm")) as f:
                    names.append(f.read().strip())
            except OSError:  # a thread that just ended
                pass
        check("node%d: two threads, the node's and the handshakes'" % i,
              sorted(names) == ["edgelockd", "el:handshake"], repr(sorted(names)))


def test_check_config_lines(c, cfg):
    """Lines libinih would misread, and values the daemon could not start with."""
    out = subprocess.run([c.bin, "--check-config", os.path.join(c.dir, "no-such.conf")],
                         capture_output=True, text=True, timeout=10)
    check("check-config: a missing file is named, alone (no [tls] error after it)",
          out.returncode == 1 and "cannot open" in out.stderr and
          len(out.stderr.strip().splitlines()) == 1, out.stderr)
    with open(cfg) as f:
        good = f.read()
    # libinih reads 199 characters of a line and the rest as a line of its
    # own: these two comments would open [node] and set its id.
    def long_comment(tail):
        return "; " + "x" * 197 + tail + "\n"
    # The first such line ends the reading: the file is refused anyway.
    text = long_comment("[node]") + long_comment("id = 77") + good
    bad = os.path.join(c.dir, "lines.conf")
    with open(bad, "w") as f:
        f.write(text)
    out = subprocess.run([c.bin, "--check-config", bad], capture_output=True, text=True,
                         timeout=10)
    check("check-config: an over-long line is refused whole, never read in parts",
          out.returncode == 1 and "lines.conf:1: line longer than 199 characters" in out.stderr
          and "77" not in out.stderr.replace(c.dir, "DIR"), out.stderr)  # (a pid in the path)
    # ... and alone: the keys after it were never read, they are not missing
    # (an outside tester saw "missing [tls] ca_file" for a key on line 13).
    text = good.replace("\n", "\n; " + "y" * 200 + "\n", 1)
    with open(bad, "w") as f:
        f.write(text)
    out = subprocess.run([c.bin, "--check-config", bad], capture_output=True, text=True,
                         timeout=10)
    check("check-config: a line over 199 characters is the file's one error (no 'missing')",
          out.returncode == 1 and out.stderr.strip().splitlines() ==
          ["edgelockd: %s:2: line longer than 199 characters" % bad], out.stderr)
    text = good + "[log]\nlevel = info\x00 after a NUL\n"
    with open(bad, "w") as f:
        f.write(text)
    out = subprocess.run([c.bin, "--check-config", bad], capture_output=True, text=True,
                         timeout=10)
    check("check-config: a line with a NUL byte is refused",
          out.returncode == 1 and "lines.conf:%d: a NUL byte in the line"
          % text.count("\n") in out.stderr, out.stderr)
    # A line that never ends: the reader stops at its first NUL byte.
    try:
        out = subprocess.run([c.bin, "--check-config", "/dev/zero"], capture_output=True,
                             text=True, timeout=30)
        check("check-config /dev/zero: refused, not read forever",
              out.returncode == 1 and "/dev/zero:1: a NUL byte" in out.stderr, out.stderr)
    except subprocess.TimeoutExpired:
        check("check-config /dev/zero: refused, not read forever", False, "still reading")
    peer = re.search(r"^peer_addr = (.*)$", good, re.M).group(1)
    client = re.search(r"^client_addr = (.*)$", good, re.M).group(1)
    for name, edit, want in [
            ("twice", good.replace("[node]\n", "[node]\nid = 9\n", 1), "given twice"),
            # one node id spelled twice: the second address replaced the first unsaid
            ("peer respelled", good.replace("[peers]\n", "[peers]\n02 = %s\n" % client, 1),
             "[peers] 2 given twice"),
            ("port", good.replace(client, client.rsplit(":", 1)[0] + ":99999"),
             "PORT 1..65535"),
            ("same", good.replace("client_addr = " + client, "client_addr = " + peer),
             "need a port each"),
            ("ca", re.sub(r"^ca_file = .*$", "ca_file = /nonexistent/ca.pem", good,
                          flags=re.M), "cannot read")] + host_cases(c, good, peer, client):
        path = os.path.join(c.dir, "bad-%s.conf" % name)
        with open(path, "w") as f:
            f.write(edit)
        out = subprocess.run([c.bin, "--check-config", path], capture_output=True,
                             text=True, timeout=10)
        check("check-config: refused (%s)" % name, out.returncode == 1 and want in out.stderr,
              out.stderr)
        if name in ("quoted", "localhost", "peers twice", "data file", "key mode",
                    "ca writable", "ca in an open dir"):
            start = subprocess.run([c.bin, "-c", path], capture_output=True, text=True,
                                   timeout=10)
            check("start: refused as check-config refuses it (%s)" % name,
                  start.returncode == 1 and start.stderr == out.stderr, start.stderr)
    check_config_queues_total(c, good)
    # The lines say "warning:", and so may the config (journalctl's name too).
    for level, rc in (("warning", 0), ("WARN", 0), ("loud", 1)):
        path = os.path.join(c.dir, "level-%s.conf" % level)
        with open(path, "w") as f:
            f.write(good.replace("level = info", "level = " + level))
        out = subprocess.run([c.bin, "--check-config", path], capture_output=True,
                             text=True, timeout=10)
        check("check-config: [log] level = %s %s" % (level, "accepted" if rc == 0 else "refused"),
              out.returncode == rc and (rc == 0 or "warn (or warning)" in out.stderr),
              out.stderr)
    # One error per field: a bad value is not also "missing", nor compared.
    for key in ("peer_addr", "id"):
        path = os.path.join(c.dir, "bad-%s-only.conf" % key)
        with open(path, "w") as f:
            f.write(re.sub(r"^%s = .*$" % key, "%s = tls+tcp://nowhere" % key, good,
                           flags=re.M))
        out = subprocess.run([c.bin, "--check-config", path], capture_output=True,
                             text=True, timeout=10)
        check("check-config: a bad %s is its one error, no follow-on lines" % key,
              out.returncode == 1 and len(out.stderr.strip().splitlines()) == 1 and
              "[node] %s" % key in out.stderr, out.stderr)
    key = write_private(os.path.join(c.dir, "group-readable.pem"),
                        open(re.search(r"^cert_key_file = (.*)$", good, re.M).group(1)).read())
    os.chmod(key, 0o640)
    path = os.path.join(c.dir, "group-key.conf")
    with open(path, "w") as f:
        f.write(re.sub(r"^cert_key_file = .*$", "cert_key_file = " + key, good, flags=re.M))
    out = subprocess.run([c.bin, "--check-config", path], capture_output=True, text=True,
                         timeout=10)
    check("check-config: a key readable by its group (0640, as ssl-cert) is valid",
          out.returncode == 0, out.stderr)
    path = os.path.join(c.dir, "escape.conf")
    with open(path, "w") as f:
        f.write(good + "[nope]\nkey = \x1b[31mred\n")
    out = subprocess.run([c.bin, "--check-config", path], capture_output=True, text=True,
                         timeout=10)
    check("check-config: a control byte in a bad value is shown escaped, not written",
          out.returncode == 1 and "\\x1b[31mred" in out.stderr and "\x1b" not in out.stderr,
          out.stderr)
    # Usage errors exit 1 (docs/operations.md) with the one message that
    # says what is wrong, not what a config nobody gave would lack.
    for args, want in [(["-c"], "-c needs a FILE"),
                       (["--check-config"], "--check-config needs a FILE"),
                       ([], "no config: give -c FILE"),
                       (["--bogus"], "unknown argument --bogus"),
                       (["-c", cfg, "--data-dir"], "--data-dir needs a value"),
                       (["-c", c.dir], c.dir + ": is a directory")]:
        out = subprocess.run([c.bin] + args, capture_output=True, text=True, timeout=10)
        check("edgelockd %s: exit 1 saying only %r" % (" ".join(args), want),
              out.returncode == 1 and want in out.stderr and
              len(out.stderr.strip().splitlines()) == 1, out.stderr)


def check_config_queues_total(c, good):
    """[limits] client_queues_total_bytes: 0 (no bound) or at least
    client_queue_bytes, whichever order the two keys come in; under it a
    client would be closed as the largest queue before its own bound."""
    for name, limits, want in [
            ("0", "client_queues_total_bytes = 0", None),
            ("one queue", "client_queues_total_bytes = 131072", None),
            ("under one queue", "client_queues_total_bytes = 65536",
             "[limits] client_queues_total_bytes (65536) must be 0 (no bound) or at least "
             "client_queue_bytes (131072)"),
            ("under a raised queue", "client_queues_total_bytes = 4194304\n"
             "client_queue_bytes = 8388608", "(4194304) must be 0 (no bound) or at least "
             "client_queue_bytes (8388608)"),
            ("not a number", "client_queues_total_bytes = 4M",
             "must be 0 (no bound) or client_queue_bytes..4294967295"),
            # unset, it follows a raised client_queue_bytes: an older config starts
            ("unset", "client_queue_bytes = 8388608", None)]:
        path = os.path.join(c.dir, "queues-total.conf")
        with open(path, "w") as f:
            f.write(good + "\n[limits]\n" + limits + "\n")
        out = subprocess.run([c.bin, "--check-config", path], capture_output=True,
                             text=True, timeout=10)
        check("check-config: client_queues_total_bytes %s %s" % (
            name, "accepted" if want is None else "refused"),
            out.returncode == 0 if want is None else out.returncode == 1 and
            want in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr)


def host_cases(c, good, peer, client):
    """Configs that parse but would fail or misbehave at start (config_host.c):
    (name, text, what the refusal says)."""
    port = peer.rsplit(":", 1)[1]
    data = re.search(r"^data_dir = (.*)$", good, re.M).group(1)
    cert = re.search(r"^cert_key_file = (.*)$", good, re.M).group(1)
    plain = os.path.join(c.dir, "a-file")
    open(plain, "w").close()
    open_key = os.path.join(c.dir, "world-readable.pem")
    with open(cert) as f, open(open_key, "w") as g:
        g.write(f.read())
    os.chmod(open_key, 0o644)
    ca = re.search(r"^ca_file = (.*)$", good, re.M).group(1)
    modes = {}  # [tls] files anyone but their owner may write
    for name, src, mode in [("key-0602", cert, 0o602), ("key-0620", cert, 0o620),
                            ("ca-0666", ca, 0o666), ("ca-0664", ca, 0o664),
                            ("crl-0646", ca, 0o646)]:
        modes[name] = os.path.join(c.dir, name + ".pem")
        with open(src) as f, open(modes[name], "w") as g:
            g.write(f.read())
        os.chmod(modes[name], mode)
    open_dir = os.path.join(c.dir, "open-dir")  # anyone may rename a CA of theirs in
    os.makedirs(open_dir, exist_ok=True)
    os.chmod(open_dir, 0o777)
    modes["ca-open-dir"] = os.path.join(open_dir, "ca.pem")
    shutil.copy(ca, modes["ca-open-dir"])
    os.chmod(modes["ca-open-dir"], 0o644)
    other = re.search(r"^(\d+) = (.*)$", good.split("[peers]")[1], re.M)
    me = re.search(r"^id = (\d+)$", good, re.M).group(1)
    peer = next(m for m in re.finditer(r"^(\d+) = (.*)$", good.split("[peers]")[1], re.M)
                if m.group(1) != me)
    peer_port = peer.group(2).rsplit(":", 1)[1]
    return [
        ("quoted", re.sub(r"^cluster = (.*)$", r'cluster = "\1"', good, flags=re.M),
         "quotes are not part of the syntax: write cluster = test"),
        ("localhost", good.replace("client_addr = " + client,
                                   "client_addr = tls+tcp://localhost:" + port),
         "are the same address and port"),
        ("peers twice", good.replace("[peers]\n", "[peers]\n9 = %s\n"
                                     % other.group(2).replace("127.0.0.1", "localhost")),
         "and %s = %s are one address" % (other.group(1), other.group(2))),
        ("data file", good.replace("data_dir = " + data, "data_dir = " + plain),
         "is not a directory"),
        ("key mode", good.replace("cert_key_file = " + cert, "cert_key_file = " + open_key),
         "every user may read it (mode 0644): chmod 600 it"),
        ("key 0602", good.replace("cert_key_file = " + cert,
                                  "cert_key_file = " + modes["key-0602"]),
         "holds the private key and every user may replace it (mode 0602): chmod 600 it"),
        ("key 0620", good.replace("cert_key_file = " + cert,
                                  "cert_key_file = " + modes["key-0620"]),
         "holds the private key and its group may replace it (mode 0620): chmod 600 it"),
        ("ca writable", good.replace("ca_file = " + ca, "ca_file = " + modes["ca-0666"]),
         "every user may replace it (mode 0666): chmod 644 it"),
        ("ca 0664", good.replace("ca_file = " + ca, "ca_file = " + modes["ca-0664"]),
         "names the certificates trusted and its group may replace it (mode 0664)"),
        ("crl 0646", good.replace("ca_file = " + ca, "ca_file = %s\ncrl_file = %s"
                                  % (ca, modes["crl-0646"])),
         "[tls] crl_file %s says which certificates are revoked and every user may replace "
         "it (mode 0646)" % modes["crl-0646"]),
        ("peer at 0.0.0.0", good.replace("%s = %s" % (peer.group(1), peer.group(2)),
                                         "%s = tls+tcp://0.0.0.0:%s" % (peer.group(1), peer_port)),
         "[peers] %s = tls+tcp://0.0.0.0:%s is no address of node %s"
         % (peer.group(1), peer_port, peer.group(1))),
        ("ca in an open dir", good.replace("ca_file = " + ca, "ca_file = " + modes["ca-open-dir"]),
         "[tls] ca_file %s is in %s, a directory every user may write (mode 0777)"
         % (modes["ca-open-dir"], open_dir)),
    ]


def tls_error(text):
    """The "[tls] ..." reason in edgelockd's output, without the log prefix."""
    m = re.search(r"(?:error|\.conf): (\[tls\] .*)$", text, re.M)
    return m.group(1) if m else None


def test_check_config_tls(c, some, cfg):
    """--check-config refuses every [tls] file the start refuses, saying the
    same; the start still exits 2 (a start failure), check-config 1."""
    from certs_test import CA  # an `openssl ca` for certificates out of date
    ca = CA(os.path.join(c.dir, "dated-ca"))
    dated = {"expired": ca.mint("expired", "node%d" % some, "node", "20200101000000Z",
                                "20210101000000Z"),
             "future": ca.mint("future", "node%d" % some, "node", "20990101000000Z",
                               "20991231000000Z")}
    other = next(i for i in c.peer_port if i != some)
    with open(os.path.join(c.certs, "node%d.crt" % some)) as f:
        crt = f.read()
    with open(os.path.join(c.certs, "node%d.key" % other)) as f:
        key = f.read()
    files = {"garbage": "garbage\n", "empty": "", "mismatch": crt + key}
    for name, text in files.items():
        files[name] = write_private(os.path.join(c.dir, "tls-%s.pem" % name), text)
    with open(cfg) as f:
        good = f.read()
    cases = [("cert garbage", "cert_key_file", files["garbage"], None),
             ("cert empty", "cert_key_file", files["empty"], None),
             ("cert a directory", "cert_key_file", c.dir, None),
             ("ca garbage", "ca_file", files["garbage"], None),
             ("ca empty", "ca_file", files["empty"], None),
             ("ca a directory", "ca_file", c.dir, None),
             ("expired", "cert_key_file", dated["expired"], ca.d + "/ca.pem"),
             ("not yet valid", "cert_key_file", dated["future"], ca.d + "/ca.pem"),
             ("another node's", "cert_key_file", "%s/node%d.pem" % (c.certs, other), None),
             ("a client's", "cert_key_file", c.certs + "/client.pem", None),
             ("key of another", "cert_key_file", files["mismatch"], None)]
    for name, key, path, ca_file in cases:
        text = re.sub(r"^%s = .*$" % key, "%s = %s" % (key, path), good, flags=re.M)
        if ca_file:
            text = re.sub(r"^ca_file = .*$", "ca_file = " + ca_file, text, flags=re.M)
        conf = os.path.join(c.dir, "tls-%s.conf" % name.replace(" ", "-").replace("'", ""))
        with open(conf, "w") as f:
            f.write(text)
        chk = subprocess.run([c.bin, "--check-config", conf], capture_output=True,
                             text=True, timeout=10)
        data = conf + ".data"
        os.makedirs(data)
        start = subprocess.run([c.bin, "-c", conf, "--data-dir", data, "--bootstrap"],
                               capture_output=True, text=True, timeout=20)
        why = tls_error(chk.stderr)
        check("check-config: [tls] %s said as edgelockd's other findings, not a log line"
              % name, chk.stderr.startswith("edgelockd: %s: [tls] " % conf) and
              "edgelock: error" not in chk.stderr, chk.stderr)
        # not this node's certificate: no restart helps (exit 1); the rest may pass
        start_rc = 1 if name in ("another node's", "a client's") else 2
        check("check-config: [tls] %s refused (exit 1) as the start refuses it (exit %d)"
              % (name, start_rc), chk.returncode == 1 and start.returncode == start_rc
              and why is not None
              and why == tls_error(start.stderr),
              "check-config rc %d: %s| start rc %d: %s" % (
                  chk.returncode, chk.stderr, start.returncode, start.stderr[-400:]))


def test_check_config_root(c, cfg, out):
    """As root, "valid" says nothing of the daemon's own user: the check
    says so, naming what only root may use (a 0600 key of root's here)."""
    with open(cfg) as f:
        key = re.search(r"^cert_key_file = (.*)$", f.read(), flags=re.M).group(1)
    st = os.stat(key)
    note = "checked as root, who may read and write anything"
    if os.geteuid() != 0:
        check("check-config: not root: no note of root", note not in out.stderr, out.stderr)
        return
    os.chmod(key, 0o600)
    again = subprocess.run([c.bin, "--check-config", cfg], capture_output=True, text=True,
                           timeout=10)
    os.chmod(key, st.st_mode & 0o7777)
    check("check-config: as root, still valid, and a note naming the key only root may read "
          "and how to check as the daemon's user",
          again.returncode == 0 and note in again.stderr and
          "[tls] cert_key_file %s (root's, mode 0600)" % key in again.stderr and
          "runuser -u edgelock -- edgelockd --check-config %s" % cfg in again.stderr,
          "exit %d: %s" % (again.returncode, again.stderr))


def test_wildcard_addr(c, cfg):
    """client_addr on 0.0.0.0 listens everywhere but is sent to clients as
    written (they dial their own machine): valid, with a warning."""
    with open(cfg) as f:
        text = f.read()
    client = re.search(r"^client_addr = (.*)$", text, flags=re.M).group(1)
    anyaddr = "tls+tcp://0.0.0.0:" + client.rsplit(":", 1)[1]
    path = os.path.join(c.dir, "wildcard.conf")
    with open(path, "w") as f:
        f.write(text.replace("client_addr = " + client, "client_addr = " + anyaddr))
    out = subprocess.run([c.bin, "--check-config", path], capture_output=True, text=True,
                         timeout=10)
    check("check-config: client_addr on 0.0.0.0 is valid, with a warning to give the "
          "board's address", out.returncode == 0 and "warning: [node] client_addr %s listens "
          "on every address" % anyaddr in out.stderr and "LAN address" in out.stderr,
          "exit %d: %s" % (out.returncode, out.stderr))


def test_config_mode(c, cfg):
    """A config file every user may write, or one in a directory every user
    may write (no sticky bit), lets anyone name whom the node trusts: the
    check and the start refuse it, saying the chmod to run."""
    with open(cfg) as f:
        text = f.read()
    open_dir = os.path.join(c.dir, "open-conf")
    os.makedirs(open_dir, exist_ok=True)
    os.chmod(open_dir, 0o777)
    for name, path, mode, words in [
            ("mode 0666", os.path.join(c.dir, "writable.conf"), 0o666,
             "every user may write this config file (mode 0666)"),
            ("in an open dir", os.path.join(open_dir, "node.conf"), 0o644,
             "the config file %s is in %s, a directory every user may write (mode 0777)"
             % (os.path.join(open_dir, "node.conf"), open_dir))]:
        with open(path, "w") as f:
            f.write(text)
        os.chmod(path, mode)
        chk = subprocess.run([c.bin, "--check-config", path], capture_output=True,
                             text=True, timeout=10)
        start = subprocess.run([c.bin, "-c", path], capture_output=True, text=True,
                               timeout=10)
        check("config file %s: check-config and the start refuse it (exit 1), saying why"
              % name, chk.returncode == 1 and start.returncode == 1 and words in chk.stderr
              and words in start.stderr and "chmod o-w" in chk.stderr,
              "check %d: %s| start %d: %s" % (chk.returncode, chk.stderr[-300:],
                                              start.returncode, start.stderr[-300:]))


def test_start_guards(c):
    some = next(iter(c.procs))
    cfg = c.config(some)
    test_check_config_tls(c, some, cfg)
    with open(cfg) as f:
        alone = re.sub(r"^%d = .*\n" % some, "", f.read(), flags=re.M)
    path = os.path.join(c.dir, "not-a-peer.conf")
    with open(path, "w") as f:
        f.write(alone)
    out = subprocess.run([c.bin, "-c", path, "--data-dir", os.path.join(c.dir, "empty2"),
                          "--bootstrap"], capture_output=True, text=True, timeout=10)
    check("guard: --bootstrap with this node not in [peers]: a config error (exit 1)",
          out.returncode == 1 and "[peers] must list every initial member, this node (%d)"
          % some in out.stderr, out.stderr[-300:])
    # The node runs on its data dir: a second start there is told so, with
    # the pid, before any advice that would only meet the lock (a restart).
    pid = c.procs[some].pid
    for flags, what in [(["--bootstrap"], "it is already a member of a cluster, nothing to "
                         "bootstrap"), ([], "this node already runs"), (["--join"], "")]:
        out = subprocess.run([c.bin, "-c", cfg] + flags, capture_output=True, text=True,
                             timeout=10)
        check("guard: %s on the data dir of a running node names it (pid %d)"
              % (" ".join(flags) or "a start", pid),
              out.returncode == 2 and "data_dir %s is in use by a running edgelockd (pid %d): %s"
              % (c.data(some), pid, what) in out.stderr and "already holds" not in out.stderr
              and "ignored" not in out.stderr, out.stderr[-400:])
    # A copy of its state, not in use: the guards about state itself.
    copy = os.path.join(c.dir, "copy%d" % some)
    shutil.copytree(c.data(some), copy, ignore=shutil.ignore_patterns("LOCK"))
    out = subprocess.run([c.bin, "-c", cfg, "--data-dir", copy, "--join"],
                         capture_output=True, text=True, timeout=10)
    check("guard: --join on a data dir with state says it is ignored",
          "--join ignored: data_dir %s holds this node's state" % copy in out.stderr,
          out.stderr[-300:])
    out = subprocess.run([c.bin, "-c", cfg, "--data-dir", os.path.join(c.dir, "empty")],
                         capture_output=True, text=True, timeout=10)
    check("guard: a plain start on an empty data dir is refused, exit 1 (no restart helps)",
          out.returncode == 1 and "--bootstrap" in out.stderr, out.stderr[-300:])
    out = subprocess.run([c.bin, "-c", cfg, "--data-dir", copy, "--bootstrap"],
                         capture_output=True, text=True, timeout=10)
    check("guard: --bootstrap over existing state is refused, exit 1",
          out.returncode == 1 and "already holds" in out.stderr, out.stderr[-300:])
    # Damaged state: refused on every start until someone acts, so exit 1,
    # which the shipped unit does not restart (it looped every 2 s on exit 2).
    with open(os.path.join(copy, "snapshot"), "wb") as f:
        f.write(b"not a snapshot")
    out = subprocess.run([c.bin, "-c", cfg, "--data-dir", copy], capture_output=True,
                         text=True, timeout=10)
    check("guard: a damaged snapshot file is refused, exit 1, saying no restart repairs it",
          out.returncode == 1 and "is corrupt" in out.stderr and
          "no restart repairs this" in out.stderr, "exit %d: %s"
          % (out.returncode, out.stderr[-400:]))
    bad = os.path.join(c.dir, "bad.conf")
    with open(bad, "w") as f:
        f.write("[node]\nid = 0\ndata_dir = /tmp/x\n\n[timing]\nelection_ms = fast\n"
                "[nope]\nkey = 1\n[limits]\nnet_threads = 1\n")
    out = subprocess.run([c.bin, "--check-config", bad], capture_output=True, text=True,
                         timeout=10)
    err = out.stderr
    check("check-config: every bad key named with its line",
          out.returncode == 1 and "bad.conf:2: [node] id" in err and
          "bad.conf:6: [timing] election_ms" in err and "bad.conf:8: [nope] key" in err and
          "bad.conf:10: [limits] net_threads" in err and
          "missing [node] peer_addr" in err, err)
    out = subprocess.run([c.bin, "--check-config", cfg], capture_output=True, text=True,
                         timeout=10)
    check("check-config: a good config is valid", out.returncode == 0, out.stderr)
    test_check_config_root(c, cfg, out)
    test_config_mode(c, cfg)
    test_wildcard_addr(c, cfg)
    test_check_config_lines(c, cfg)
    example = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "dist",
                           "edgelockd.conf.example")
    # Its [tls] files live in /etc/edgelock/ on a board; here, the test's.
    with open(example) as f:
        text = f.read().replace("/etc/edgelock/", c.certs + "/")
    local = os.path.join(c.dir, "example.conf")
    with open(local, "w") as f:
        f.write(text)
    out = subprocess.run([c.bin, "--check-config", local], capture_output=True, text=True,
                         timeout=10)
    check("check-config: dist/edgelockd.conf.example is valid", out.returncode == 0, out.stderr)
    out = subprocess.run([c.bin, "--check-config", example], capture_output=True, text=True,
                         timeout=10)
    check("check-config: the example as shipped names its missing [tls] files",
          out.returncode == 1 and "[tls] ca_file /etc/edgelock/ca.pem: cannot read"
          in out.stderr, out.stderr)
    out = subprocess.run([c.bin, "--help"], capture_output=True, text=True, timeout=10)
    join = out.stdout.split("  --join", 1)[-1].split("\n  --", 1)[0]
    check("--help exits 0; \"the data directory must hold state\" is no part of --join's text",
          out.returncode == 0 and "--bootstrap" in out.stdout and "must hold state" in
          out.stdout and "must hold" not in join, out.stdout)
    for args in (["restore", "--help"], ["restore", "-h"], ["restore", "b.bin", "-c", "x", "--help"]):
        out = subprocess.run([c.bin] + args, capture_output=True, text=True, timeout=10)
        check("%s: restore's usage, exit 0" % " ".join(args),
              out.returncode == 0 and out.stdout.startswith("usage: edgelockd restore BACKUP")
              and out.stderr == "", "exit %d %r" % (out.returncode, out.stderr))


def renew_b():
    """client-b's 30 s session holds "door" through test_kill_all_restart: it
    is renewed before every step, as a client would, so that slow steps
    under load (a whole CI run beside them) cannot let it expire."""
    if getattr(S, "b", None) is not None and getattr(S, "sb", 0):
        try:
            S.b.call({1: 2, 4: S.sb})
        except Exception:  # noqa: BLE001 - its connection may be gone; a step reconnects
            pass


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    random.seed(int(os.environ.get("SEED", "1")))
    # one identity opens 1,000 connections at once (test_many_clients)
    c = Cluster(build, 3, extra="[limits]\nconnections_per_client = 0\n")
    try:
        c.start_all(bootstrap=True)
        for t in (test_election_and_redirect, test_lock_round_trip, test_session_expiring,
                  test_bad_client_input, test_refusal_log, test_frame_boundaries,
                  test_bad_peer_input, test_peer_identity, test_unproven_peer_slots,
                  test_many_clients, test_unread_replies, test_unread_replies_many,
                  test_two_threads,
                  test_waiting_joiner, test_membership, test_sigterm_leader,
                  test_sigkill_leader_waiter_granted, test_no_redirect_to_dead_leader,
                  test_why_leader_changed, test_handover_skips_silent,
                  test_membership_answered_on_commit,
                  test_membership_repeated, test_book_full,
                  test_kill_all_restart, test_quick_exit,
                  test_start_guards):
            try:
                renew_b()
                t(c)
            except Exception as e:  # a crashed step fails, the rest still run
                check(t.__name__, False, "raised %r" % (e,))
    finally:
        c.stop_all()
        for i in sorted(c.peer_port):
            if os.path.exists(c.log(i)):
                with open(c.log(i)) as f:
                    print("---- node%d log (last 5 lines) ----" % i)
                    sys.stdout.writelines(f.readlines()[-5:])
        check.no_sanitizer_reports(c)  # and, after a failure, the WHY lines
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
