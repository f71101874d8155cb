#!/usr/bin/env python3
"""auth_test.py BUILD_DIR - who a client is and what it may do (issue 12).

A three-node cluster with client_auth = optional and an [acl] section; client
certificates minted for the test (sensor-1, sensor-2, ops from the cluster CA,
and a sensor-1 from another CA). Checks that the identity proven on the client
port decides: lock names and operations outside a client's [acl] grant are
refused with EL_EPERM and change nothing; a client cannot renew, close or use
another client's session (also after a leader failover: the owner is in the
replicated session); an anonymous client gets only what [acl] grants
"anonymous"; a certificate of another CA and a node certificate on the client
port are refused and the connection closed, with a log line saying why.
Runs against BUILD/bin/edgelockd (or $EDGELOCKD).
"""
import os
import re
import random
import socket
import ssl
import subprocess
import struct
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elcluster import Checks, Cluster, Conn, eventually, read_frame, write_private  # noqa: E402

EL_EPERM = -18
EL_ENOTLEADER = -3
check = Checks()

ACL = """
[tls]
client_auth = optional

[limits]
connections_per_client = %d

[acl]
sensor-* = lock, elect, observe : fleet/sensors/ fleet/leader
ops = lock, elect, observe, admin : *
anonymous = observe : public/
client = observe : status-only/
""" % 6
CONNS = 6  # [limits] connections_per_client above




def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


def mint(dir, ca_crt, ca_key, name, ou="client", eku="clientAuth"):
    """A certificate and key (one PEM file) for CN=name, OU=ou, signed by ca."""
    key, csr, crt, ext = (os.path.join(dir, name + s) for s in (".key", ".csr", ".crt", ".ext"))
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", key)
    openssl("req", "-new", "-key", key, "-subj", "/OU=%s/CN=%s" % (ou, name), "-out", csr)
    with open(ext, "w") as f:
        f.write("basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=%s\n" % eku)
    openssl("x509", "-req", "-in", csr, "-CA", ca_crt, "-CAkey", ca_key, "-CAcreateserial",
            "-sha256", "-days", "30", "-extfile", ext, "-out", crt)
    with open(crt) as c, open(key) as k:
        return write_private(os.path.join(dir, name + ".pem"), c.read() + k.read())


def make_certs(c):
    d = os.path.join(c.dir, "certs")
    os.makedirs(os.path.join(d, "evil"))
    ca, ca_key = os.path.join(c.certs, "ca.pem"), os.path.join(c.certs, "ca.key")
    pems = {n: mint(d, ca, ca_key, n) for n in ("sensor-1", "sensor-2", "ops")}
    ev = os.path.join(d, "evil")
    openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out",
            os.path.join(ev, "ca.key"))
    openssl("req", "-x509", "-new", "-key", os.path.join(ev, "ca.key"), "-sha256", "-days", "30",
            "-subj", "/CN=evil CA", "-addext", "basicConstraints=critical,CA:TRUE",
            "-addext", "keyUsage=critical,keyCertSign,cRLSign", "-out", os.path.join(ev, "ca.pem"))
    pems["evil"] = mint(ev, os.path.join(ev, "ca.pem"), os.path.join(ev, "ca.key"), "sensor-1")
    return pems


def refused(conn, timeout=3.0):
    """The daemon answers ERROR EL_EPERM and closes the connection."""
    try:
        m = conn.recv(timeout)
    except (EOFError, OSError, ssl.SSLError):
        return True  # closed before the error frame could be read
    if m.get(1) != 129 or m.get(3) != EL_EPERM:
        return False
    try:
        conn.recv(timeout)
        return False
    except socket.timeout:
        return False
    except (EOFError, OSError, ssl.SSLError):
        return True


def log_text(c, i):
    with open(c.log(i)) as f:
        return f.read()


def session(conn, label):
    rep = conn.call({1: 1, 9: 30000, 13: label, 14: random.getrandbits(64)})
    return rep.get(4, 0)


def holder(conn, name):
    q = conn.call({1: 11, 6: name})
    h = q.get(29, [])
    return (h[0].get(4), h[0].get(11), h[0].get(13)) if h else None


def test_acl(c, pems, leader):
    s1c = c.connect(leader, cert=pems["sensor-1"])
    ops = c.connect(leader, cert=pems["ops"])
    s1 = session(s1c, "dev1")
    check("acl: sensor-1 opens a session", s1 > 0)
    rep = s1c.call({1: 4, 4: s1, 5: 1, 6: "fleet/sensors/1"})
    check("acl: sensor-1 locks a name under its prefix", rep.get(11, 0) > 0, repr(rep))
    h = holder(ops, "fleet/sensors/1")
    check("acl: the session carries the proven identity", h is not None and h[2] == "sensor-1 dev1",
          repr(h))
    rep = s1c.call({1: 4, 4: s1, 5: 2, 6: "fleet/other"})
    refused_id = s1c.next_id - 1
    check("acl: sensor-1 locking outside its prefixes gets EPERM", rep.get(3) == EL_EPERM, repr(rep))
    check("acl: ... and the lock was not taken", holder(ops, "fleet/other") is None)
    rep = s1c.call({1: 11, 6: "secret/x"})
    check("acl: sensor-1 querying outside its prefixes gets EPERM", rep.get(3) == EL_EPERM, repr(rep))
    rep = s1c.call({1: 17, 20: 0})
    check("acl: sensor-1 asking for an admin operation gets EPERM", rep.get(3) == EL_EPERM, repr(rep))
    rep = s1c.call({1: 14, 20: 7, 21: "tls+tcp://127.0.0.1:1", 22: "tls+tcp://127.0.0.1:2"})
    add_id = s1c.next_id - 1
    check("acl: sensor-1 adding a member gets EPERM", rep.get(3) == EL_EPERM, repr(rep))
    rep = s1c.call({1: 6, 4: s1, 5: 3, 6: "fleet/leader", 12: b"me"})
    check("acl: sensor-1 campaigns on fleet/leader (elect granted)", rep.get(11, 0) > 0, repr(rep))
    rep = ops.call({1: 4, 4: session(ops, "admin"), 5: 1, 6: "secret/x"})
    check("acl: ops (prefix *) locks anything", rep.get(11, 0) > 0, repr(rep))
    names = [l.get(6) for l in s1c.call({1: 12}).get(35, [])]
    check("acl: LIST shows sensor-1 only the names it may observe",
          "fleet/sensors/1" in names and "secret/x" not in names, repr(names))
    names = [l.get(6) for l in ops.call({1: 12}).get(35, [])]
    check("acl: LIST shows ops every name", "secret/x" in names, repr(names))
    odd = "fleet/x' session 1 seq 1 ok\x00tail"  # a quote and a NUL: no faked field
    rep = s1c.call({1: 4, 4: s1, 5: 4, 6: odd})
    odd_id = s1c.next_id - 1
    text = log_text(c, leader)
    check("acl: a refused name holding a quote and a NUL is logged whole, as hex",
          rep.get(3) == EL_EPERM and
          re.search(r"req %d: acquire hex:%s refused by \[acl\]" % (odd_id, odd.encode().hex()),
                    text), [ln for ln in text.splitlines() if "req %d:" % odd_id in ln])
    check("acl: refusals are logged with the connection and request id",
          re.search(r"client sensor-1 conn \d+ req %d: acquire 'fleet/other' refused by \[acl\]"
                    % refused_id, text), text[-1500:])
    check("acl: an admin refusal logs what was asked (the node and its addresses)",
          re.search(r"client sensor-1 conn \d+ req %d: member-add for node 7 \(peer "
                    r"'tls\+tcp://127.0.0.1:1', client 'tls\+tcp://127.0.0.1:2'\) refused by "
                    r"\[acl\]" % add_id, text), text[-1500:])
    return s1c, s1, ops


def list_pages(conn):
    """Every page of a LIST, following its cursor: [(names, cursor), ...]."""
    pages, cursor = [], 0
    while True:
        rep = conn.call({1: 12, 36: cursor} if cursor else {1: 12})
        cursor = rep.get(36, 0)
        pages.append(([l.get(6) for l in rep.get(35, [])], cursor))
        if not cursor or len(pages) > 100:
            return pages


def test_list_bounded(c, pems, leader, s1c):
    """A LIST reply looks at 1,024 locks at most. With 1,100 locks sensor-1
    may not see, its LIST's first page is short (its two names, or fewer)
    and carries a cursor, and following it finds the same names a single
    walk would. A reply walked the whole table for its page: 2.5 ms of the
    leader's turn per LIST with 30,000 locks, 64 at a time per connection."""
    ops = c.connect(leader, cert=pems["ops"])
    bulk = session(ops, "bulk")
    n, seq = 1100, 0
    for start in range(0, n, 50):  # pipelined, 50 at a time
        for k in range(start, min(n, start + 50)):
            seq += 1
            ops.send({0: 1, 2: ops.next_id, 1: 4, 4: bulk, 5: seq, 6: "bulk/%04d" % k})
            ops.next_id += 1
        got = 0
        while got < min(n, start + 50) - start:
            got += ops.recv().get(1) == 64 + 4
    pages = list_pages(s1c)
    names = sorted(x for page, _ in pages for x in page)
    check("list bounded: a page looks at 1,024 locks at most (%d pages for %d locks, the "
          "first %r)" % (len(pages), n, pages[0]), len(pages) >= 2 and pages[0][1] != 0,
          repr(pages[:3]))
    check("list bounded: following the cursor finds every name sensor-1 may see, and only "
          "those", names == ["fleet/leader", "fleet/sensors/1"], repr(names))
    rep = ops.call({1: 3, 4: bulk})
    check("list bounded: the bulk session closes", rep.get(3, 0) == 0, repr(rep))
    ops.close()


def connect_all(c, pem, seconds=30.0):
    """A connection to every node, each retried until it answers."""
    conns, end = {}, time.time() + seconds
    while len(conns) < len(c.peer_port) and time.time() < end:
        for i in c.peer_port:
            if i not in conns:
                try:
                    conns[i] = c.connect(i, cert=pem)
                except (OSError, EOFError, ssl.SSLError):
                    pass
        time.sleep(0.02)
    return conns


def slow_restart(c, ms):
    """Every node killed and started again behind the fdatasync shim, node
    i's syncs ms[i] slow while the file c.dir/slow-ID exists."""
    for i in list(c.procs):
        c.kill(i)
    for i in c.peer_port:
        c.slow_disk(i, os.path.join(c.dir, "slow-%d" % i), ms[i])
        c.start(i)


def steal(conn, sessions):
    """ACQUIREs of fleet/sensors/stolen in each of sessions, sent at once;
    the replies, each with its session added (key 4)."""
    asked = {}
    for sid in sessions:
        asked[conn.next_id] = sid
        conn.send({0: 1, 2: conn.next_id, 1: 4, 4: sid, 5: 1, 6: "fleet/sensors/stolen"})
        conn.next_id += 1
    replies = []
    while len(replies) < len(asked):
        m = conn.recv()
        if m.get(2) in asked:
            m[4] = asked[m[2]]
            replies.append(m)
    return replies


def test_unsettled_leader(c, pems):
    """A leader just elected applies what earlier terms committed only once
    an entry of its own term commits; until then its table lacks a session
    opened in that backlog, and whose it is cannot be checked (a session id
    is its OPEN's index: anyone can guess it). Here sensor-1's OPEN reaches
    the two followers, whose syncs take 400 ms, and the leader is killed
    before it commits; a follower is elected, its own syncs made fast
    again, and its first commit waits 400 ms for the other's. Meanwhile sensor-2 sends ACQUIREs naming the next few
    indexes as sessions to both. The new leader must answer "not the
    leader" until it knows the session, then EPERM, and never grant one: it
    proposed them, and the lock was taken in sensor-1's session for
    sensor-2."""
    # Nodes a and b sync in 300 and 500 ms once their files exist, so the
    # OPEN cannot commit before the leader's end; then a is fast again, is
    # most likely elected, and its first commit waits for b's ack while its
    # loop serves requests.
    first, a, b = sorted(c.peer_port)
    slow_restart(c, {first: 0, a: 300, b: 500})
    leader = c.wait_leader()
    if leader != first:
        adm = c.connect(leader, cert=pems["ops"])
        adm.call({1: 17, 20: first})
        adm.close()
        leader = first if eventually(lambda: c.wait_leader() == first) else 0
    if leader != first:
        check("unsettled leader: leadership handed to node %d" % first, False, "")
        return
    others = [a, b]
    conns = connect_all(c, pems["sensor-2"])
    v = c.connect(leader, cert=pems["sensor-1"])
    first = c.status(leader).get(25, 0) + 1  # the OPEN's index, or near it
    answers = []
    try:
        for i in others:
            open(os.path.join(c.dir, "slow-%d" % i), "w").close()
        v.send({0: 1, 2: 1, 1: 1, 9: 30000, 13: "victim", 14: random.getrandbits(64)})
        time.sleep(0.1)  # at the followers, in their 400 ms syncs
        c.kill(leader)
        os.unlink(os.path.join(c.dir, "slow-%d" % a))
        end = time.time() + 20
        while time.time() < end and EL_EPERM not in answers:
            for i in others:  # pipelined: all in one window
                for rep in steal(conns[i], range(first, first + 8)):
                    err = rep.get(3, 0)
                    if not answers or answers[-1] != err:
                        answers.append(err)
                    if rep.get(11, 0) > 0:
                        answers.append("session %d granted token %d" % (rep[4], rep[11]))
            time.sleep(0.005)
    finally:
        v.close()
        for i in others:
            if os.path.exists(os.path.join(c.dir, "slow-%d" % i)):
                os.unlink(os.path.join(c.dir, "slow-%d" % i))
        for conn in conns.values():
            conn.close()
        c.start(leader)
        for i in c.peer_port:
            del c.cmd[i]
    ops = c.connect(c.wait_leader(), cert=pems["ops"])
    taken = holder(ops, "fleet/sensors/stolen")
    ops.close()
    check("unsettled leader: sensor-2's ACQUIREs on sensor-1's new session are refused "
          "(EPERM), never granted, the lock not taken (answers %r, holder %r)"
          % (answers[-8:], taken),
          EL_EPERM in answers and not any(isinstance(a, str) for a in answers) and
          taken is None, repr(answers))


def test_acl_flood(c, pems, leader):
    """A client refused by [acl] again and again (a device retrying 5 times
    a second) gets one warning a minute per client, request and name, not
    one per request: sensor-1's 20 refused ACQUIREs of fleet/flood are one
    line; its fleet/flood2 and sensor-2's fleet/flood are each still told.
    The 19 held back are told when their minute is over or the node stops
    (checked after the stop: acl_flood_told)."""
    conns = {n: c.connect(leader, cert=pems[n]) for n in ("sensor-1", "sensor-2")}
    sess = {n: session(conns[n], "flood") for n in conns}
    asks = [("sensor-1", "fleet/flood")] * 20 + [("sensor-1", "fleet/flood2"),
                                                 ("sensor-2", "fleet/flood")]
    reps = [conns[n].call({1: 4, 4: sess[n], 5: 10 + k, 6: name})
            for k, (n, name) in enumerate(asks)]
    check("acl flood: every request refused EPERM", all(r.get(3) == EL_EPERM for r in reps))
    text = log_text(c, leader)

    def lines(who, name):
        return re.findall(r"client %s conn \d+ req \d+: acquire '%s' refused by \[acl\]"
                          % (who, name), text)
    n = [len(lines("sensor-1", "fleet/flood")), len(lines("sensor-1", "fleet/flood2")),
         len(lines("sensor-2", "fleet/flood"))]
    check("acl flood: one line for sensor-1's 20 refusals of fleet/flood, one for its "
          "fleet/flood2, one for sensor-2's fleet/flood", n == [1, 1, 1], repr(n))
    for conn in conns.values():
        conn.close()


def acl_flood_told(c, leader):
    """After the stop: the refusals test_acl_flood's line held back are told."""
    text = log_text(c, leader)
    check("acl flood: the 19 held back are told (at the stop, before their minute)",
          "client sensor-1: acquire 'fleet/flood': 19 more refused by [acl] in the last minute"
          in text, [ln for ln in text.splitlines() if "fleet/flood" in ln])


def test_ownership(c, pems, leader, s1c, s1, ops):
    s2c = c.connect(leader, cert=pems["sensor-2"])
    token = holder(ops, "fleet/sensors/1")[1]
    rep = s2c.call({1: 2, 4: s1})
    refused_id = s2c.next_id - 1
    check("owner: sensor-2 renewing sensor-1's session gets EPERM", rep.get(3) == EL_EPERM, repr(rep))
    rep = s2c.call({1: 5, 4: s1, 5: 1, 6: "fleet/sensors/1", 11: token})
    check("owner: sensor-2 releasing sensor-1's lock gets EPERM", rep.get(3) == EL_EPERM, repr(rep))
    rep = s2c.call({1: 3, 4: s1})
    check("owner: sensor-2 closing sensor-1's session gets EPERM", rep.get(3) == EL_EPERM, repr(rep))
    anon = c.connect(leader, cert=None)
    rep = anon.call({1: 3, 4: s1})
    check("owner: an anonymous client closing it gets EPERM", rep.get(3) == EL_EPERM, repr(rep))
    check("owner: the lock is still sensor-1's", holder(ops, "fleet/sensors/1") ==
          (s1, token, "sensor-1 dev1"))
    rep = s1c.call({1: 2, 4: s1})
    check("owner: sensor-1 renews its own session", rep.get(3, 0) == 0, repr(rep))
    text = log_text(c, leader)
    check("owner: refusals are logged with the connection and request id",
          re.search(r"client sensor-2 conn \d+ req %d: keepalive on session %d of another "
                    "client refused" % (refused_id, s1), text), text[-1500:])
    # After a failover the new leader knows the owner from the replicated session.
    c.stop(leader)
    new = c.wait_leader(exclude=(leader,))
    s2c = c.connect(new, cert=pems["sensor-2"])
    rep = s2c.call({1: 3, 4: s1})
    check("owner: after failover, sensor-2 closing sensor-1's session still gets EPERM",
          rep.get(3) == EL_EPERM, repr(rep))
    s1c = c.connect(new, cert=pems["sensor-1"])
    rep = s1c.call({1: 2, 4: s1})
    check("owner: after failover, sensor-1 renews its session", rep.get(3, 0) == 0, repr(rep))
    rep = s1c.call({1: 3, 4: s1})
    check("owner: sensor-1 closes its own session", rep.get(3, 0) == 0, repr(rep))
    c.start(leader)
    return new


def test_nonce_owner(c, pems, leader):
    """An OPEN_SESSION retried with its nonce gets its session back, but only
    for the identity that opened it: sensor-1 sending the nonce of ops's open
    gets EPERM, no session id, and none of that session's events (found by a
    black-box test: it received ops's GRANTED with the token)."""
    ops = c.connect(leader, cert=pems["ops"])
    s1c = c.connect(leader, cert=pems["sensor-1"])
    anon = c.connect(leader, cert=None)
    hold = session(ops, "holder")
    token = ops.call({1: 4, 4: hold, 5: 1, 6: "fleet/sensors/n"}).get(11, 0)
    nonce = random.getrandbits(64) | 1
    victim = ops.call({1: 1, 9: 30000, 13: "victim", 14: nonce}).get(4, 0)
    rep = ops.call({1: 4, 4: victim, 5: 1, 6: "fleet/sensors/n", 8: 20000})
    check("nonce: ops's second session queues behind its first", token > 0 and victim > 0 and
          rep.get(16) is True, repr(rep))
    rep = s1c.call({1: 1, 9: 30000, 13: "thief", 14: nonce})
    refused_id = s1c.next_id - 1
    check("nonce: sensor-1 opening with ops's nonce gets EPERM and no session",
          rep.get(3) == EL_EPERM and rep.get(4, 0) == 0, repr(rep))
    rep = anon.call({1: 1, 9: 30000, 13: "thief", 14: nonce})
    check("nonce: an anonymous client opening with it gets EPERM too",
          rep.get(3) == EL_EPERM and rep.get(4, 0) == 0, repr(rep))
    ops.call({1: 5, 4: hold, 5: 2, 6: "fleet/sensors/n", 11: token})
    try:
        ev = ops.event(5.0)
    except socket.timeout:
        ev = {}
    check("nonce: ops hears its GRANTED", ev.get(1) == 128 and ev.get(4) == victim, repr(ev))
    for name, k in (("sensor-1", s1c), ("the anonymous client", anon)):
        try:
            stolen = k.event(1.0)
        except socket.timeout:
            stolen = None
        check("nonce: %s hears nothing of ops's session" % name, stolen is None, repr(stolen))
    rep = ops.call({1: 1, 9: 30000, 13: "victim", 14: nonce})
    check("nonce: ops retrying its open gets its session back",
          rep.get(3, 0) == 0 and rep.get(4, 0) == victim, repr(rep))
    check("nonce: the refusal is logged",
          re.search(r"client sensor-1 conn \d+ req %d: OPEN_SESSION with the nonce of another "
                    "client's session refused" % refused_id, log_text(c, leader)))
    for k in (ops, s1c, anon):
        k.close()


def test_anonymous(c, leader):
    anon = c.connect(leader, cert=None)
    s = session(anon, "guest")
    check("anonymous: may open a session (it has a grant)", s > 0)
    rep = anon.call({1: 11, 6: "public/board"})
    check("anonymous: may observe public/", rep.get(3) in (None, 0, -4), repr(rep))
    rep = anon.call({1: 4, 4: s, 5: 1, 6: "public/board"})
    check("anonymous: may not lock (observe only)", rep.get(3) == EL_EPERM, repr(rep))
    rep = anon.call({1: 11, 6: "fleet/sensors/1"})
    check("anonymous: may not observe outside public/", rep.get(3) == EL_EPERM, repr(rep))
    rep = anon.call({1: 13})
    check("anonymous: status needs observe on some prefix (granted)", rep.get(3, 0) == 0 and
          rep.get(20, 0) > 0, repr(rep))


def test_refused_certs(c, pems, leader):
    conn = c.connect(leader, cert=pems["evil"])  # TLS lets it in (optional); the proof not
    check("other CA: a client certificate of another CA is refused", refused(conn))
    conn = c.connect(leader, cert=pems["sensor-1"], proof_cert=pems["evil"])
    check("other CA: a proof by another CA's certificate is refused", refused(conn))
    conn = c.connect(leader, cert="node1.pem")
    check("role: a node certificate on the client port is refused", refused(conn))
    text = log_text(c, leader)
    check("refusals name the reason", "certificate not accepted by the cluster CA" in text and
          "a node certificate (node1) on the client port" in text, text[-1500:])


def relay_server(c, leader, cert, seen):
    """A compromised member: serves TLS with its own node certificate and,
    for each connection, passes the leader's CHALLENGE to the caller and any
    PROOF it gets back to the leader, then asks the leader for what only ops
    may see. Records in seen: proofs relayed, and whether the leader took the
    relay for ops."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(c.certs, cert))
    ctx.load_verify_locations(os.path.join(c.certs, "ca.pem"))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(4)
    srv.settimeout(0.2)

    def serve():
        while not seen["stop"]:
            try:
                raw, _ = srv.accept()
            except socket.timeout:
                continue
            seen["accepted"] += 1
            try:
                victim = ctx.wrap_socket(raw, server_side=True)
                up = Conn(c.client_port[leader], c.certs, prove=False)
                ch = up.recv_frame()
                victim.sendall(struct.pack(">I", len(ch)) + ch)
                seen["challenges"] += 1
                victim.settimeout(3)
                proof = read_frame(victim)
                seen["proofs"] += 1
                up.send_frame(proof)
                rep = up.call({1: 11, 6: "secret/x"})
                seen["as_ops"] = seen["as_ops"] or rep.get(3) != EL_EPERM
            except (OSError, EOFError, ssl.SSLError, struct.error):
                pass  # the caller hung up or refused our certificate
            except Exception as e:  # a broken relay must fail the test, not pass it
                seen["error"] = repr(e)
    seen.update(proofs=0, as_ops=False, stop=False, error=None, accepted=0, challenges=0)
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, t


def test_client_relay(c, pems, leader):
    """The real CLI, as ops, pointed at a member that relays the leader's
    challenge: it must not sign it (it learns the name the challenge gives,
    then dials again asking TLS for that name, which the member's certificate
    does not bear), so the member never becomes ops at the leader."""
    other = next(i for i in sorted(c.procs) if i != leader)
    seen = {}
    srv, t = relay_server(c, leader, "node%d.pem" % other, seen)
    cli = [os.path.join(c.build, "bin", "edgelock"), "--ca", os.path.join(c.certs, "ca.pem"),
           "--cert", pems["ops"], "--timeout", "3s"]
    p = subprocess.run(cli + ["--endpoints", "tls+tcp://127.0.0.1:%d" % srv.getsockname()[1],
                              "status"], capture_output=True, text=True, timeout=30)
    seen["stop"] = True
    t.join(5)
    srv.close()
    check("client relay: the member relayed the leader's challenge to the CLI",
          seen["challenges"] >= 1 and seen["error"] is None, repr(seen))
    check("client relay: the CLI proves nothing to a member relaying the leader's challenge",
          seen["proofs"] == 0, repr(seen))
    check("client relay: ... so the member never acts as ops at the leader", not seen["as_ops"])
    check("client relay: the CLI fails and says why", p.returncode != 0 and
          ("node%d" % leader) in p.stdout + p.stderr, "rc %d: %r %r" % (p.returncode, p.stdout[-300:], p.stderr[-300:]))
    p = subprocess.run(cli + ["--endpoints", "tls+tcp://127.0.0.1:%d" % c.client_port[leader],
                              "status"], capture_output=True, text=True, timeout=30)
    check("client relay: the same CLI to the real leader works", p.returncode == 0,
          "rc %d: %s" % (p.returncode, p.stderr[-300:]))


def test_client_cert_as_node(c, leader):
    """A client certificate whose CN is the leader's node name (OU=client, and
    usable to serve TLS), relaying the leader's challenge: the name matches,
    but only a node certificate is a node, so the CLI proves nothing (it
    hangs up right after TLS, so the relay may not get to relay)."""
    d = os.path.join(c.dir, "certs")
    pem = mint(d, os.path.join(c.certs, "ca.pem"), os.path.join(c.certs, "ca.key"),
               "node%d" % leader, eku="serverAuth,clientAuth")
    ops = os.path.join(d, "ops.pem")
    seen = {}
    srv, t = relay_server(c, leader, pem, seen)
    cli = [os.path.join(c.build, "bin", "edgelock"), "--ca", os.path.join(c.certs, "ca.pem"),
           "--cert", ops, "--timeout", "3s",
           "--endpoints", "tls+tcp://127.0.0.1:%d" % srv.getsockname()[1], "status"]
    p = subprocess.run(cli, capture_output=True, text=True, timeout=30)
    seen["stop"] = True
    t.join(5)
    srv.close()
    check("client cert as node: the CLI reached the relay", seen["accepted"] >= 1 and
          seen["error"] is None, repr(seen))
    check("client cert as node: the CLI proves nothing to it", seen["proofs"] == 0 and
          not seen["as_ops"], repr(seen))
    check("client cert as node: the CLI fails and says why", p.returncode != 0 and
          "not a node's" in p.stdout + p.stderr, "rc %d: %r" % (p.returncode, p.stderr[-300:]))


def test_cli_refused(c, pems):
    """A client the [acl] gives nothing: every command says the server's
    [acl] refused it (exit 77, documented for "not allowed"), not that every
    node is unreachable (69), "no error", or a bare "permission denied"
    that leaves the operator to guess why (`lock`, `elect`, `observe`,
    `transfer-leader`, `members`: found by a newcomer); so does sensor-1
    locking a name outside its prefixes (an ACQUIRE refused)."""
    d = os.path.join(c.dir, "certs")
    stranger = mint(d, os.path.join(c.certs, "ca.pem"), os.path.join(c.certs, "ca.key"),
                    "stranger")
    eps = ",".join(c.addr(i) for i in sorted(c.procs))
    runs = [(stranger, cmd) for cmd in (["status"], ["locks"], ["lock", "fleet/x", "--", "true"],
                                        ["elect", "fleet/leader", "v", "--", "true"],
                                        ["observe", "fleet/x"], ["transfer-leader"],
                                        ["members", "remove", "9"],
                                        ["members", "add", "9", "tls+tcp://127.0.0.1:9",
                                         "tls+tcp://127.0.0.1:10"])]
    runs.append((pems["sensor-1"], ["lock", "other/x", "--", "true"]))
    for cert, cmd in runs:
        p = subprocess.run([os.path.join(c.build, "bin", "edgelock"), "--ca",
                            os.path.join(c.certs, "ca.pem"), "--cert", cert, "--timeout", "3s",
                            "--endpoints", eps] + cmd, capture_output=True, text=True, timeout=30)
        out = p.stdout + p.stderr
        check("cli refused by [acl]: %s as %s exits 77 and says [acl] (rc %d)"
              % (" ".join(cmd), os.path.basename(cert), p.returncode),
              p.returncode == 77 and "[acl]" in out and "no error" not in out and
              "unreachable" not in out, out[-300:])


def test_long_identity(c, leader):
    """A session's owner field holds the opener's CN whole and at most 31
    bytes of it: a 31-byte CN opens a session, a 32-byte one is refused
    EINVAL with a line naming the CN's length (nothing was logged), and the
    CLI says the CN is too long, not that the ttl may be (an outside
    tester). The CN is still a valid identity for what needs no session."""
    d = os.path.join(c.dir, "certs")
    pems = {n: mint(d, os.path.join(c.certs, "ca.pem"), os.path.join(c.certs, "ca.key"),
                    "sensor-" + "y" * (n - 7)) for n in (31, 32)}
    conn = c.connect(leader, cert=pems[31])
    try:
        check("a 31-byte CN opens a session", session(conn, "l") != 0)
    finally:
        conn.close()
    conn = c.connect(leader, cert=pems[32])
    try:
        rep = conn.call({1: 1, 9: 30000, 13: "l", 14: random.getrandbits(64)})
        st = conn.call({1: 13})
    finally:
        conn.close()
    line = "the identity (certificate CN) is 32 bytes, a session's owner holds at most 31"
    check("a 32-byte CN: OPEN_SESSION refused EINVAL, STATUS still served, the log says why",
          rep.get(3) == -1 and st.get(3, 0) == 0 and
          eventually(lambda: line in log_text(c, leader), 3.0), repr((rep, st)))
    p = subprocess.run([os.path.join(c.build, "bin", "edgelock"), "--ca",
                        os.path.join(c.certs, "ca.pem"), "--cert", pems[32], "--timeout", "3s",
                        "--endpoints", c.addr(leader), "lock", "fleet/sensors/x", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    check("a 32-byte CN: the CLI exits 78 (certificate files) saying the CN is too long",
          p.returncode == 78 and "certificate CN is 32 bytes" in p.stderr and
          "ttl" not in p.stderr, "%d %s" % (p.returncode, p.stderr))


def test_connections_per_client(c, pems, leader):
    """One identity holds at most connections_per_client connections to a
    node: one more is refused EFULL and closed, with a line naming the
    identity, its address and the limit, while another identity still
    connects; every anonymous client counts as one identity. One identity
    (proven, or anonymous) held every max_clients slot of the leader and
    kept all other clients out of the cluster (an outside security tester)."""
    def refused_or_served(conn):
        try:
            rep = conn.call({1: 18}, timeout=3.0)
            return rep.get(3, 0)
        except (OSError, EOFError, ssl.SSLError):
            return "closed"
    fresh = mint(os.path.join(c.dir, "certs"), os.path.join(c.certs, "ca.pem"),
                 os.path.join(c.certs, "ca.key"), "sensor-9")  # no connection held yet
    for who, cert in (("sensor-9", fresh), ("anonymous", None)):
        time.sleep(1.1)  # the refusal lines are one a second at most
        held = []
        try:
            for _ in range(CONNS):
                held.append(Conn(c.client_port[leader], c.certs, cert=cert))
            served = [refused_or_served(k) for k in held]  # anonymous from its first request
            extra = Conn(c.client_port[leader], c.certs, cert=cert)
            got = refused_or_served(extra)
            extra.close()
            other = c.connect(leader, cert=pems["sensor-2"])
            ok_other = refused_or_served(other)
            other.close()
        finally:
            for k in held:
                k.close()
        line = re.search(r"client connection from 127\.0\.0\.1:\d+: client %s holds %d "
                         r"connections to this node, \[limits\] connections_per_client = %d: "
                         r"refused \(EL_EFULL\)" % (who, CONNS, CONNS), log_text(c, leader))
        check("connections_per_client: %s holds %d, one more is refused EFULL with a line, "
              "another identity is served" % (who, CONNS),
              served == [0] * CONNS and got in (-2, "closed") and ok_other == 0 and line,
              repr((served, got, ok_other)))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    random.seed(int(os.environ.get("SEED", "1")))
    c = Cluster(build, 3, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "auth-%d" % os.getpid()), extra=ACL)
    flood_leader = None
    try:
        pems = make_certs(c)
        c.start_all(bootstrap=True)
        leader = c.wait_leader()
        s1c, s1, ops = test_acl(c, pems, leader)
        test_list_bounded(c, pems, leader, s1c)
        test_acl_flood(c, pems, leader)
        flood_leader = leader
        test_anonymous(c, leader)
        test_nonce_owner(c, pems, leader)
        test_refused_certs(c, pems, leader)
        test_client_relay(c, pems, leader)
        test_client_cert_as_node(c, leader)
        test_cli_refused(c, pems)
        test_long_identity(c, leader)
        test_connections_per_client(c, pems, leader)
        leader = test_ownership(c, pems, leader, s1c, s1, ops)
        test_unsettled_leader(c, pems)
        check("the cluster still has a leader", c.wait_leader() > 0)
    except Exception as e:  # a crashed step fails the suite
        check("auth test", False, "raised %r" % (e,))
    finally:
        c.stop_all()
        if flood_leader is not None:
            acl_flood_told(c, flood_leader)
        check.no_sanitizer_reports(c)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
