"""protocol_test.py BUILD - what docs/protocol.md promises a client written
from it alone, on three real edgelockd over TLS (found by a black-box
client's author):

- a queued ACQUIRE ends with a CANCELED event (kind 3, its seq) when its
  session is closed or expires, and the CLOSE_SESSION's reply arrives too;
  a session opened in the same batch (it may take the closed one's slot in
  the table) gets none of the closed session's events; a retry of the
  canceled seq gets EEXPIRED;
- a batch that drops events sends a GAP to each open session attached on
  the node, none naming a session that has ended;
- only the leader pushes events: a follower answering ENOTLEADER attaches
  nothing, and a leader that hands over (TRANSFER) sends each attached
  session a GAP and then nothing, so a client re-attached at the new
  leader gets each event once;
- a PROOF (or first request) of another protocol version: ERROR EVERSION,
  and the connection is closed;
- MEMBER_PROMOTE, TRANSFER and MEMBER_REMOVE of a node that is not a
  member: ENOTFOUND; promoting a voter or transferring to itself: EINVAL;
- a client that does not read its replies is disconnected once its send
  queue passes [limits] client_queue, with a line in the log saying so,
  while other clients are served.

Prints "ok NAME" / "FAIL NAME why" per check and "N passed, N failed".
"""
import os
import random
import re
import signal
import socket
import ssl
import sys
import time

import cbor2

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elcluster import Checks, Cluster, Conn, eventually, ident_proof  # noqa: E402

EL_EINVAL, EL_ENOTFOUND, EL_EEXPIRED, EL_EVERSION = -1, -4, -7, -10
EL_ENOTLEADER = -3
EV_CANCELED, EV_HOLDER_CHANGED, EV_GAP, EV_SESSION_EXPIRING = 3, 4, 6, 7
QUEUE = 16  # [limits] client_queue, its least
check = Checks()


def log_text(c, i):
    with open(c.log(i)) as f:
        return f.read()


def open_session(conn, ttl=30000, client="proto"):
    rep = conn.call({1: 1, 9: ttl, 13: client, 14: random.getrandbits(64)})
    return rep.get(4, 0)


def next_event(conn, session, timeout, skip=(EV_SESSION_EXPIRING,)):
    """The next EVENT for session (other kinds in skip passed over), or None."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            m = conn.event(max(0.05, deadline - time.time()))
        except (socket.timeout, ssl.SSLError, OSError, EOFError):
            return None
        if m.get(1) == 128 and m.get(4) == session and m.get(19) not in skip:
            return m
    return None


def closed(conn, timeout=3.0):
    """True once the other end closes conn (frames before that are read)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            conn.recv_frame(max(0.05, deadline - time.time()))
        except socket.timeout:
            return False
        except (EOFError, OSError, ssl.SSLError):
            return True
    return False


def queue_behind(c, leader, holder_s, holder, name):
    """A second connection and session waiting (unbounded) for name, which
    holder_s holds: (conn, session, seq of the queued acquire)."""
    b = c.connect(leader)
    s = open_session(b, ttl=30000)
    rep = b.call({1: 4, 4: s, 5: 1, 6: name, 8: 0xFFFFFFFF})
    check("%s: a second session queues" % name, rep.get(16) is True, repr(rep))
    return b, s, 1


def test_canceled_on_close(c, leader, a, sa):
    b, sb, seq = queue_behind(c, leader, sa, a, "cancel-close")
    rep = b.call({1: 3, 4: sb})
    check("close: CLOSE_SESSION of a session with a queued acquire answered OK",
          rep.get(1) == 67 and rep.get(3, 0) == 0, repr(rep))
    ev = next_event(b, sb, 3.0)
    check("close: the queued acquire ends with a CANCELED event (kind 3, its seq, its name)",
          ev is not None and ev.get(19) == EV_CANCELED and ev.get(5) == seq and
          ev.get(6) == "cancel-close", repr(ev))
    rep = b.call({1: 4, 4: sb, 5: seq, 6: "cancel-close", 8: 0xFFFFFFFF})
    check("close: a retry of the canceled seq gets EEXPIRED (the session is gone)",
          rep.get(3) == EL_EEXPIRED, repr(rep))
    b.close()


def test_canceled_on_expiry(c, leader, a, sa):
    b = c.connect(leader)
    sb = open_session(b, ttl=1500)
    t0 = time.time()
    rep = b.call({1: 4, 4: sb, 5: 1, 6: "cancel-expiry", 8: 0xFFFFFFFF})
    check("expiry: a session with a short lease queues", rep.get(16) is True, repr(rep))
    ev = next_event(b, sb, 6.0)
    check("expiry: without keepalives its queued acquire ends with CANCELED (kind 3, seq 1)",
          ev is not None and ev.get(19) == EV_CANCELED and ev.get(5) == 1 and
          time.time() - t0 >= 1.0, repr(ev))
    b.close()


def test_canceled_slot_reuse(c, leader, a, sa):
    """The close and a new open applied in one batch: both followers are
    stopped (SIGSTOP, for less than an election timeout) while the two are
    proposed, so they commit and are applied together. The new session then
    takes the closed one's slot (the lowest free), and its OPEN_SESSION
    reply, delivered before the batch's events, attaches it there. It must
    never get the closed session's events; the closer's connection gets its
    CANCELED."""
    followers = [i for i in c.procs if i != leader]
    for k in range(3):
        name = "cancel-reuse-%d" % k
        b, sb, seq = queue_behind(c, leader, sa, a, name)
        n = c.connect(leader)
        n.call({1: 18})  # proven and served: its open goes out at once
        for i in followers:
            c.signal(i, signal.SIGSTOP)
        try:
            b.send({0: 1, 1: 3, 2: 900, 4: sb})
            n.send({0: 1, 1: 1, 2: 901, 9: 30000, 14: random.getrandbits(64)})
            time.sleep(0.15)
        finally:
            for i in followers:
                c.signal(i, signal.SIGCONT)
        got_b, got_n = [], []
        deadline = time.time() + 3.0
        for conn, got in ((b, got_b), (n, got_n)):
            while time.time() < deadline and len(got) < 3:
                try:
                    got.append(conn.recv(max(0.05, min(0.5, deadline - time.time()))))
                except (socket.timeout, ssl.SSLError, OSError, EOFError):
                    break
        check("slot reuse %d: the closer gets its reply and the CANCELED event" % k,
              any(m.get(2) == 900 and m.get(3, 0) == 0 for m in got_b) and
              any(m.get(1) == 128 and m.get(19) == EV_CANCELED and m.get(4) == sb and
                  m.get(5) == seq for m in got_b), repr(got_b))
        check("slot reuse %d: the new session's connection gets its open reply and no event "
              "of the closed session" % k,
              any(m.get(2) == 901 and m.get(4, 0) > 0 for m in got_n) and
              not any(m.get(1) == 128 for m in got_n), repr(got_n))
        b.close()
        n.close()


def events_of(conn, session, secs):
    """Every EVENT for session (None: any) that conn receives within secs
    (those read meanwhile by call() included), other sessions' dropped."""
    got = [m for m in conn.events if session is None or m.get(4) == session]
    conn.events = []
    deadline = time.time() + secs
    while time.time() < deadline:
        try:
            m = conn.recv(max(0.05, deadline - time.time()))
        except (socket.timeout, ssl.SSLError, OSError, EOFError):
            break
        if m.get(1) == 128 and (session is None or m.get(4) == session):
            got.append(m)
    return got


def test_gap_live_sessions(c, leader):
    """A batch that drops events sends a GAP to the sessions attached on
    the node that are still open, never one naming a session that has
    ended: x's closed session, still attached to its open connection (its
    slot not reused), and
    h, which ended in the very command whose events overflowed (70
    watchers' HOLDER_CHANGED, 64 at most per command)."""
    x, y = c.connect(leader), c.connect(leader)
    sx = open_session(x)
    h, w = open_session(y), open_session(y)
    rep = x.call({1: 3, 4: sx})  # after the opens: none of them takes its slot
    check("gap: a session closed on a connection that stays open", rep.get(3, 0) == 0, repr(rep))
    for k in range(70):
        y.call({1: 4, 4: h, 5: k + 1, 6: "gap-%d" % k})
        y.call({1: 9, 4: w, 5: k + 1, 6: "gap-%d" % k})
    rep = y.call({1: 3, 4: h})
    got = events_of(y, None, 3.0)
    changed = [m for m in got if m.get(4) == w and m.get(19) == EV_HOLDER_CHANGED]
    check("gap: closing a session that held 70 watched names overflows its events (64 kept)",
          len(changed) == 64 and rep.get(3, 0) == 0, "%d HOLDER_CHANGED, close %r"
          % (len(changed), rep))
    gaps = [m.get(4) for m in got if m.get(19) == EV_GAP]
    check("gap: the open watcher's connection gets one GAP, for it alone (none for the "
          "session that ended)", gaps == [w], "GAPs for %r (watcher %d, closed %d)"
          % (gaps, w, h))
    got = events_of(x, sx, 1.0)
    check("gap: no GAP naming the session closed earlier reaches its connection",
          not got, repr(got))
    x.close()
    y.close()


def test_events_leader_only(c, leader):
    """Events are the leader's to push (docs/protocol.md, "Events"): a
    follower answering ENOTLEADER attaches nothing, and a leader that
    hands leadership over (TRANSFER) sends each attached session a GAP and
    then none of the events it applies as a follower; once the client
    attached the session at the new leader, each event reaches it once."""
    f_id = min(i for i in c.procs if i != leader)
    a = c.connect(leader)
    sa = open_session(a)
    a.call({1: 9, 4: sa, 5: 1, 6: "moved"})
    f = c.connect(f_id)
    rep = f.call({1: 2, 4: sa})
    check("leader only: a follower answers a KEEPALIVE ENOTLEADER", rep.get(3) == EL_ENOTLEADER,
          repr(rep))
    h = c.connect(leader)
    sh = open_session(h)
    token = h.call({1: 4, 4: sh, 5: 1, 6: "moved"}).get(11, 0)
    got_a = [m for m in events_of(a, sa, 1.0) if m.get(19) == EV_HOLDER_CHANGED]
    got_f = events_of(f, sa, 0.5)
    check("leader only: the watcher's connection to the leader gets HOLDER_CHANGED",
          len(got_a) == 1 and got_a[0].get(11) == token, repr(got_a))
    check("leader only: the follower that answered ENOTLEADER pushes none of its events",
          not got_f, repr(got_f))
    rep = h.call({1: 17, 20: f_id})
    new = c.wait_leader()
    check("leader only: TRANSFER moves leadership to node %d" % f_id,
          rep.get(3, 0) == 0 and new == f_id, "reply %r, leader %d" % (rep, new))
    got = [m.get(19) for m in events_of(a, sa, 1.0)]
    check("leader only: the former leader tells the attached session a GAP on stepping down",
          EV_GAP in got and EV_HOLDER_CHANGED not in got, repr(got))
    a2 = c.connect(new)
    rep = a2.call({1: 2, 4: sa})  # attaches the session at the new leader
    h2 = c.connect(new)
    rel = h2.call({1: 5, 4: sh, 5: 2, 6: "moved", 11: token})
    once = [(who, m.get(11, 0)) for who, conn in (("new leader", a2), ("former leader", a),
                                               ("follower's connection", f))
            for m in events_of(conn, sa, 1.0) if m.get(19) == EV_HOLDER_CHANGED]
    # (a token of 0, free, is left out of the frame)
    check("leader only: re-attached at the new leader, the release reaches the client once, "
          "from the new leader", rep.get(3, 0) == 0 and rel.get(3, 0) == 0 and
          once == [("new leader", 0)], "keepalive %r, release %r, events %r" % (rep, rel, once))
    for conn in (a, f, h, a2, h2):
        conn.close()


def test_proof_version(c, leader):
    conn = Conn(c.client_port[leader], c.certs, prove=False)
    proof = cbor2.loads(ident_proof(os.path.join(c.certs, "client.pem"), conn.recv_frame()))
    proof[0] = 2
    conn.send(proof)
    m = None
    try:
        m = conn.recv(3.0)
    except (EOFError, OSError, ssl.SSLError):
        pass
    check("proof: a PROOF of protocol version 2 is answered ERROR EVERSION",
          m is not None and m.get(1) == 129 and m.get(3) == EL_EVERSION, repr(m))
    check("proof: ... and the connection is closed", closed(conn))
    conn.close()
    conn = Conn(c.client_port[leader], c.certs, prove=False)
    conn.recv_frame()
    conn.send({0: 2, 1: 18, 2: 5})
    m = None
    try:
        m = conn.recv(3.0)
    except (EOFError, OSError, ssl.SSLError):
        pass
    check("proof: a first request of protocol version 2 is answered ERROR EVERSION, its id",
          m is not None and m.get(1) == 129 and m.get(3) == EL_EVERSION and m.get(2) == 5,
          repr(m))
    check("proof: ... and the connection is closed", closed(conn))
    conn.close()
    check("proof: the refusal is logged",
          re.search(r"client connection from 127\.0\.0\.1:\d+: .*protocol version other "
                    r"than 1.*closed",
                    log_text(c, leader)), log_text(c, leader)[-1500:])


def test_admin_not_member(c, leader):
    conn = c.connect(leader)
    for what, req in (("MEMBER_PROMOTE", {1: 16, 20: 9}), ("TRANSFER", {1: 17, 20: 9}),
                      ("MEMBER_REMOVE", {1: 15, 20: 9})):
        rep = conn.call(req)
        check("admin: %s of node 9 (not a member) is ENOTFOUND" % what,
              rep.get(3) == EL_ENOTFOUND and rep.get(27) is None, repr(rep))
    other = next(i for i in c.procs if i != leader)
    rep = conn.call({1: 16, 20: other})
    check("admin: MEMBER_PROMOTE of a voter stays EINVAL", rep.get(3) == EL_EINVAL, repr(rep))
    rep = conn.call({1: 17, 20: leader})
    check("admin: TRANSFER to the leader itself stays EINVAL", rep.get(3) == EL_EINVAL,
          repr(rep))
    check("admin: nothing changed (three voters, the same leader)",
          c.wait_leader() == leader and
          sorted(m.get(20) for m in c.status(leader).get(28, [])) == [1, 2, 3])
    conn.close()


def test_send_queue_full(c, leader):
    """A client that sends requests and never reads the replies: once more
    than client_queue frames wait for it, the daemon closes it and says so."""
    slow = Conn(c.client_port[leader], c.certs, rcvbuf=4096)
    before = log_text(c, leader)
    sent = 0
    try:
        for k in range(20000):
            slow.send({0: 1, 1: 13, 2: 10 + k})
            sent += 1
    except (OSError, ssl.SSLError):
        pass  # closed under our feet: what the test waits for
    # Wait for the close without reading: closed() reads the replies, and
    # started before a loaded daemon had worked through enough requests to
    # fill the queue, its reading kept the queue from ever filling (CI, twice).
    pattern = (r"client client conn \d+: send queue full \(%d frames, \d+ bytes not read; "
               r"\[limits\] client_queue = %d frames, client_queue_bytes = 131072 bytes\): "
               r"closed" % (QUEUE, QUEUE))
    ok = eventually(lambda: re.search(pattern, log_text(c, leader)[len(before):]), timeout=60)
    check("send queue: the client that does not read is disconnected", closed(slow, 10.0),
          "sent %d" % sent)
    slow.close()
    check("send queue: the leader logs the close with its reason", ok,
          log_text(c, leader)[len(before):][-1500:])
    conn = c.connect(leader)
    check("send queue: other clients are still served", conn.call({1: 18}).get(1) == 82)
    conn.close()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    random.seed(int(os.environ.get("SEED", "1")))
    c = Cluster(build, 3, extra="[limits]\nclient_queue = %d\n" % QUEUE)
    try:
        c.start_all(bootstrap=True)
        leader = c.wait_leader()
        a = c.connect(leader)
        sa = open_session(a)
        names = ("cancel-close", "cancel-expiry") + tuple("cancel-reuse-%d" % k for k in range(3))
        for seq, name in enumerate(names, 1):
            rep = a.call({1: 4, 4: sa, 5: seq, 6: name})
            check("%s: held by the first session" % name, rep.get(11, 0) > 0, repr(rep))
        for t in (test_canceled_on_close, test_canceled_on_expiry, test_canceled_slot_reuse):
            try:
                a.call({1: 2, 4: sa})
                t(c, leader, a, sa)
            except Exception as e:  # a crashed step fails, the rest still run
                check(t.__name__, False, "raised %r" % (e,))
        for t in (test_gap_live_sessions, test_proof_version, test_admin_not_member,
                  test_send_queue_full, test_events_leader_only):  # the last moves the leader
            try:
                t(c, leader)
            except Exception as e:  # noqa: BLE001
                check(t.__name__, False, "raised %r" % (e,))
        a.close()
    finally:
        c.stop_all()
        check.no_sanitizer_reports(c)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
