"""limits_table.py - part (e) of limits_test.py: the [limits] that keep one
identity from taking the lock table (claims_per_client, watches_per_client)
and the session lease bound (max_session_ttl_ms), on the suite's cluster.

One identity ("hog") takes locks until the leader refuses it: it ends with
exactly CLAIMS claims (pipelined waves cannot overshoot), then every new
acquire, wait or campaign of any of its sessions gets EL_EFULL with a log
line naming it and the limit, while re-acquiring a lock it holds, releases,
keepalives and closes still work and another identity still locks and
watches. The same for watches. After a leadership transfer the new leader
still refuses it. An OPEN_SESSION over the TTL bound gets EL_EINVAL.
"""
import os
import random
import struct
import subprocess
import time

import cbor2

EL_EINVAL, EL_EFULL = -1, -2
CLAIMS, WATCHES, MAX_TTL = 250, 8, 120000  # 250: waves of 16 would overshoot it
CONFIG = """claims_per_client = %d
watches_per_client = %d
max_session_ttl_ms = %d
""" % (CLAIMS, WATCHES, MAX_TTL)


class Sess:
    """A session on a connection, with its own rising seq."""

    def __init__(self, conn, label, ttl=60000):
        self.conn, self.seq = conn, 0
        rep = conn.call({1: 1, 9: ttl, 13: label, 14: random.getrandbits(64)}, timeout=10.0)
        self.id = rep.get(4, 0)

    def call(self, kind, name, more=None):
        self.seq += 1
        msg = {1: kind, 4: self.id, 5: self.seq, 6: name}
        msg.update(more or {})
        return self.conn.call(msg, timeout=10.0)

    def waves(self, kind, names, width):
        """Send names' requests width at a time, pipelined; their errors."""
        errs = []
        for k in range(0, len(names), width):
            ids, frames = [], []
            for name in names[k:k + width]:
                self.seq += 1
                ids.append(900000 + self.seq)
                body = cbor2.dumps({0: 1, 1: kind, 2: ids[-1], 4: self.id, 5: self.seq,
                                    6: name}, canonical=True)
                frames.append(struct.pack(">I", len(body)) + body)
            self.conn.send_raw(b"".join(frames))
            got = {}
            while len(got) < len(ids):
                m = self.conn.recv(10.0)
                if m.get(1) != 128 and m.get(2) in ids:
                    got[m.get(2)] = m.get(3, 0)
            errs += [got[i] for i in ids]
        return errs


def top_up(s, kind, prefix, n):
    """One request at a time until EL_EFULL: (OK count, the refusal seen)."""
    ok = 0
    for k in range(n):
        err = s.call(kind, "%s%d" % (prefix, k)).get(3, 0)
        if err == EL_EFULL:
            return ok, True
        ok += err == 0
    return ok, False


def fill_claims(check, s, width):
    errs = s.waves(4, ["hog%d" % k for k in range(CLAIMS + 20)], width)
    ok, stopped = top_up(s, 4, "top", 40)
    held = errs.count(0) + ok
    print("claims: %d waves' acquires OK, %d EL_EFULL; %d more one by one"
          % (errs.count(0), errs.count(EL_EFULL), ok), flush=True)
    check("claims: one identity ends with exactly claims_per_client = %d locks, then EL_EFULL"
          % CLAIMS, held == CLAIMS and stopped and errs.count(0) + errs.count(EL_EFULL) == len(errs),
          "held %d, stopped %s, %r" % (held, stopped, sorted(set(errs))))


def cli_names_limit(check, c, leader, pem):
    """libedgelock (through the CLI) tells the user which limit refused it."""
    cli = os.path.join(c.build, "bin", "edgelock")
    r = subprocess.run([cli, "--endpoints", "tls+tcp://127.0.0.1:%d" % c.client_port[leader],
                        "--ca", os.path.join(c.certs, "ca.pem"), "--cert", pem,
                        "lock", "hog-cli", "--", "true"],
                       capture_output=True, text=True, timeout=30)
    check("claims: the library's error names [limits] claims_per_client",
          r.returncode != 0 and "claims_per_client" in r.stderr,
          "exit %d: %s" % (r.returncode, r.stderr.strip()))


def at_limit(check, c, leader, hog, hog2, other, hog_pem):
    rep = hog.call(4, "hog-new")
    check("claims: at the limit a new acquire gets EL_EFULL", rep.get(3) == EL_EFULL, repr(rep))
    rep = hog2.call(4, "hog2-new")
    check("claims: the limit is per identity: its other session is refused too",
          rep.get(3) == EL_EFULL, repr(rep))
    rep = hog.call(6, "hog-elect", {12: b"me"})
    check("claims: a campaign counts as a claim (EL_EFULL)", rep.get(3) == EL_EFULL, repr(rep))
    log = open(c.log(leader)).read()
    check("claims: the leader logs the identity and the limit",
          "client hog: acquire '" in log and "refused (EL_EFULL)" in log and
          "[limits] claims_per_client = %d" % CLAIMS in log, log[-400:])
    cli_names_limit(check, c, leader, hog_pem)
    again = hog.call(4, "hog0")
    check("claims: re-acquiring a lock it holds is not refused (count 2)",
          again.get(3, 0) == 0 and again.get(15) == 2, repr(again))
    rel = hog.call(5, "hog0", {11: again.get(11, 0)})
    check("claims: release at the limit works", rel.get(3, 0) == 0, repr(rel))
    check("claims: keepalive at the limit works",
          hog.conn.call({1: 2, 4: hog.id}, timeout=10.0).get(3, 0) == 0)
    rep = other.call(4, "other-lock")
    check("claims: another identity still gets a lock", rep.get(3, 0) == 0 and rep.get(11, 0) > 0,
          repr(rep))
    return rep.get(11, 0)


def room_and_waits(check, hog):
    tok = hog.call(4, "hog1").get(11, 0)  # re-acquired (count 2): release twice
    hog.call(5, "hog1", {11: tok})
    rel = hog.call(5, "hog1", {11: tok})
    check("claims: releasing a lock fully frees a claim", rel.get(3, 0) == 0, repr(rel))
    rep = hog.call(4, "other-lock", {8: 60000})
    check("claims: with room again, a wait on another's lock is queued",
          rep.get(3, 0) == 0 and rep.get(16), repr(rep))
    rep = hog.call(4, "hog-after-wait")
    check("claims: the queued wait counts: the next acquire gets EL_EFULL",
          rep.get(3) == EL_EFULL, repr(rep))


def watches(check, hog, other):
    errs = hog.waves(9, ["w%d" % k for k in range(WATCHES)], WATCHES)
    rep = hog.call(9, "w-over")
    check("watches: %d watches of one identity, the next gets EL_EFULL" % WATCHES,
          errs.count(0) == WATCHES and rep.get(3) == EL_EFULL, "%r %r" % (errs, rep))
    un = hog.call(10, "w0")
    rep = hog.call(9, "w-new")
    check("watches: unwatch at the limit works, and makes room for one",
          un.get(3, 0) == 0 and rep.get(3, 0) == 0, "%r %r" % (un, rep))
    rep = other.call(9, "w-other")
    check("watches: another identity still watches", rep.get(3, 0) == 0, repr(rep))


def after_transfer(check, c, leader, hog_pem, hog_id, hog2_id):
    """A new leader counts the hog's claims from its own table."""
    t = c.connect(leader)
    rep = t.call({1: 17, 20: 0}, timeout=10.0)
    t.close()
    new = c.wait_leader(exclude=())
    deadline = time.time() + 20
    while new == leader and time.time() < deadline:
        time.sleep(0.2)
        new = c.wait_leader()
    check("claims: leadership transferred", rep.get(3, 0) == 0 and new != leader,
          "%r, leader %d -> %d" % (rep, leader, new))
    conn = c.connect(new, cert=hog_pem)
    hog2 = Sess.__new__(Sess)
    hog2.conn, hog2.id, hog2.seq = conn, hog2_id, 100000
    # through the session that holds none of them: the new leader must know
    # from its own table which other sessions are the identity's
    rep = hog2.call(4, "hog-on-new-leader")
    check("claims: the new leader refuses the identity at its limit too",
          rep.get(3) == EL_EFULL, repr(rep))
    rep = conn.call({1: 3, 4: hog_id}, timeout=10.0)
    check("claims: closing a session at the limit works", rep.get(3, 0) == 0, repr(rep))
    rep = hog2.call(4, "hog2-after-close")
    check("claims: its claims freed, its other session locks again", rep.get(3, 0) == 0, repr(rep))
    conn.close()
    return new


def ttl_bound(check, c, leader, pem, told):
    conn = c.connect(leader, cert=pem)
    over = conn.call({1: 1, 9: MAX_TTL + 1, 13: "ttl", 14: random.getrandbits(64)}, timeout=10.0)
    huge = conn.call({1: 1, 9: 4294967295, 13: "ttl", 14: random.getrandbits(64)}, timeout=10.0)
    check("ttl: an open over max_session_ttl_ms (and of 2^32-1 ms) gets EL_EINVAL, no session",
          over.get(3) == EL_EINVAL and over.get(4, 0) == 0 and huge.get(3) == EL_EINVAL,
          "%r %r" % (over, huge))
    log = open(c.log(leader)).read()
    check("ttl: the leader logs why", "ttl_ms %d is over [limits] max_session_ttl_ms = %d"
          % (MAX_TTL + 1, MAX_TTL) in log, log[-400:])
    for _ in range(4):  # a burst: one line, then one for the rest once its second is over
        conn.call({1: 1, 9: MAX_TTL + 1, 13: "ttl", 14: random.getrandbits(64)}, timeout=10.0)
    counts = []
    deadline = time.time() + 3.0
    while told(c, leader, "max_session_ttl_ms = %d" % MAX_TTL, counts) < 6 and \
            time.time() < deadline:
        time.sleep(0.2)
    check("ttl: all 6 refusals logged within 3 s, none waiting for a later one",
          sum(counts) == 6, repr(counts))
    at = conn.call({1: 1, 9: MAX_TTL, 13: "ttl", 14: random.getrandbits(64)}, timeout=10.0)
    check("ttl: an open of exactly max_session_ttl_ms is served", at.get(3, 0) == 0 and
          at.get(4, 0) != 0, repr(at))
    conn.call({1: 3, 4: at.get(4, 0)}, timeout=10.0)
    conn.close()


def run(check, c, leader, hog_pem, other_pem, width, told):
    """Part (e) on the cluster's current leader; returns the leader after it.
    told(c, i, "[limits] KEY = N" text, counts): the refusals logged."""
    ttl_bound(check, c, leader, other_pem, told)
    hog = Sess(c.connect(leader, cert=hog_pem), "hog")
    hog2 = Sess(c.connect(leader, cert=hog_pem), "hog2")
    other = Sess(c.connect(leader, cert=other_pem), "other-table")
    check("claims: sessions open", hog.id and hog2.id and other.id)
    fill_claims(check, hog, width)
    at_limit(check, c, leader, hog, hog2, other, hog_pem)
    room_and_waits(check, hog)
    watches(check, hog, other)
    new = after_transfer(check, c, leader, hog_pem, hog.id, hog2.id)
    for s in (hog, hog2, other):
        s.conn.close()
    return new
