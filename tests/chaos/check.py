"""check.py - the chaos suite's checker: reads a history (JSON Lines, the
format in tests/chaos/README.md) and returns the violations it finds.

    python3 check.py HISTORY.jsonl TTL_MS LOCK_DELAY_MS ELECTION_BOUND_MS

Rules (each violation is {"kind": ..., "what": ...}):
  lost-update     an accepted write did not build on the write before it (its
                  value is not the previous value + 1): an update was lost;
  token-order     an accepted write's token is lower than one accepted before;
  grant-order     a grant acknowledged before another was asked for has a
                  higher or equal token (an acknowledged grant was lost), or
                  a session re-granted a lock it had released with the same
                  token (an acknowledged release was lost);
  overlap         two sessions held one lock with overlapping validity, each
                  as its client saw it (grant .. its last valid lease deadline,
                  cut where it asked to release the lock or closed the session);
  lost-told-late  a holder told "lost" (or a `lock -- CMD` whose CMD was
                  killed) was told after another client was granted the lock;
  regrant-late    a lock whose holder was killed or paused (and nothing else
                  was broken meanwhile) was not granted again within
                  TTL + lock-delay + the election bound.
"""
import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def by_proc(events):
    procs = {}
    for e in events:
        procs.setdefault(e["proc"], []).append(e)
    return procs


def check_writes(events, violations):
    """The accepted writes of each resource, in the order it accepted them."""
    counts = {}
    for res in sorted({e["resource"] for e in events if e.get("f") == "accepted"}):
        writes = [e for e in events if e.get("f") == "accepted" and e["resource"] == res]
        prev_value, top = 0, 0
        for w in writes:
            value = int(w["value"])
            if value != prev_value + 1:
                violations.append({"kind": "lost-update", "what": "resource %s: %s wrote %d "
                                   "(token %d) over %d" % (res, w["client"], value, w["token"],
                                                           prev_value)})
            if w["token"] < top:
                violations.append({"kind": "token-order", "what": "resource %s: token %d "
                                   "accepted after %d" % (res, w["token"], top)})
            prev_value, top = value, max(top, w["token"])
        counts[res] = len(writes)
    return counts


def holds_of(proc, evs):
    """A client process's holds: grant time, token, session, lock, the end of
    its validity as it saw it, and how the hold ended."""
    holds, cur = [], None
    invoke_t = {}
    for e in evs:
        f, typ = e["f"], e["type"]
        if typ == "invoke":
            invoke_t[f] = e["t"]
        if f in ("acquire", "campaign") and typ == "ok":
            cur = {"proc": proc, "lock": e["lock"], "token": e["token"], "session": e["session"],
                   "invoked": invoke_t.get(f, e["t"]), "start": e["t"], "end": e["t"], "how": "open"}
            holds.append(cur)
        elif f == "cmd-start":  # under `edgelock lock -- CMD`: valid while CMD runs
            cur = {"proc": proc, "lock": e["lock"], "token": e["token"], "session": None,
                   "invoked": e["t"], "start": e["t"], "end": e["t"], "how": "cmd"}
            holds.append(cur)
        elif cur is None:
            continue
        elif f == "write" and typ == "invoke":
            cur["end"] = max(cur["end"], e["valid_until"] if e.get("valid_until") else e["t"])
        elif cur["how"] == "cmd" and f in ("read", "write", "cmd-end"):
            cur["end"] = max(cur["end"], e["t"])
        elif f == "lost":
            cur["how"] = "lost"
        elif f in ("release", "resign") and typ == "invoke":
            # the client stops using the lock as it asks to release it,
            # whether or not the answer reaches it
            cur["end"] = min(cur["end"], e["t"])
        elif f in ("release", "resign") and typ == "ok":
            cur["how"] = "released"
            cur = None
        elif f == "close" and typ == "invoke":  # closing a session gives its locks away
            cur["end"] = min(cur["end"], e["t"])
            cur = None
        elif f == "cli-lock" and typ in ("ok", "fail", "info") and e.get("exit") == 76:
            cur["how"] = "lost"
    return holds


def check_holds(holds, violations):
    for lock in sorted({h["lock"] for h in holds}):
        hs = sorted((h for h in holds if h["lock"] == lock), key=lambda h: h["start"])
        for i, a in enumerate(hs):
            for b in hs[i + 1:]:
                if b["start"] >= a["end"]:
                    break
                if a["proc"] == b["proc"] and a["session"] == b["session"]:
                    continue
                kind = "lost-told-late" if a["how"] == "lost" else "overlap"
                violations.append({"kind": kind, "what": "%s: %s (token %d) valid until %.3f, "
                                   "%s granted token %d at %.3f" % (lock, a["proc"], a["token"],
                                                                    a["end"], b["proc"], b["token"],
                                                                    b["start"])})


def check_grants(holds, releases, violations):
    """Tokens: a grant acknowledged before another was asked for is lower;
    a session's grant after its acknowledged release is a new token."""
    grants = [h for h in holds if h["session"] is not None]
    for lock in sorted({h["lock"] for h in grants}):
        gs = sorted((h for h in grants if h["lock"] == lock), key=lambda h: h["start"])
        top = None
        order = sorted(gs, key=lambda h: h["invoked"])
        done = sorted(gs, key=lambda h: h["start"])
        j = 0
        for g in order:
            while j < len(done) and done[j]["start"] < g["invoked"]:
                if top is None or done[j]["token"] > top["token"]:
                    top = done[j]
                j += 1
            if top is not None and top["session"] != g["session"] and g["token"] <= top["token"]:
                violations.append({"kind": "grant-order", "what": "%s: %s got token %d after "
                                   "%s's token %d was acknowledged" % (lock, g["proc"], g["token"],
                                                                      top["proc"], top["token"])})
    for r in releases:
        later = [h for h in grants if h["session"] == r["session"] and h["lock"] == r["lock"]
                 and h["start"] > r["t"]]
        if later and min(later, key=lambda h: h["start"])["token"] == r["token"]:
            violations.append({"kind": "grant-order", "what": "%s: session %d re-granted token %d "
                               "it had released" % (r["lock"], r["session"], r["token"])})


def check_regrant(events, holds, bound_s, violations):
    """After a holder died (nemesis kill-client / pause-client of a holder),
    another client is granted the lock within the bound, when no other fault
    was active in that window."""
    faults = [e for e in events if e["proc"] == "nemesis" and e["type"] == "info"]
    windows = []
    for e in faults:
        if e["f"] == "start":
            windows.append([e["t"], None, e])
        elif e["f"] == "stop":
            for w in windows:
                if w[1] is None and w[2]["id"] == e["id"]:
                    w[1] = e["t"]
    measured = 0
    for t0, _, e in windows:
        if e["fault"] not in ("kill-client", "pause-client") or not e.get("holder"):
            continue
        others = [w for w in windows if w[2] is not e and w[0] < t0 + bound_s and
                  (w[1] is None or w[1] > t0 - 1.0) and w[2]["fault"] != e["fault"]]
        # only the fault itself: other faults may rightly delay a grant
        if others:
            continue
        victim = e["target"]
        held = [h for h in holds if h["proc"] == victim and h["start"] <= t0 and h["lock"] == e["lock"]]
        if not held or held[-1]["how"] == "released" and held[-1]["end"] <= t0:
            continue
        nxt = [h for h in holds if h["lock"] == e["lock"] and h["proc"] != victim and h["start"] > t0]
        measured += 1
        if not nxt or min(h["start"] for h in nxt) - t0 > bound_s:
            after = (min(h["start"] for h in nxt) - t0) if nxt else None
            violations.append({"kind": "regrant-late", "what": "%s: %s's lock granted again "
                               "%s s after it died (bound %.1f s)" % (e["lock"], victim,
                                                                      "never" if after is None else
                                                                      "%.2f" % after, bound_s)})
    return measured


def check(events, ttl_ms, lock_delay_ms, election_bound_ms):
    """(violations, counts) of one history."""
    violations = []
    writes = check_writes(events, violations)
    holds, releases = [], []
    for proc, evs in by_proc(events).items():
        if proc == "nemesis" or proc.startswith("resource"):
            continue
        holds += holds_of(proc, evs)
        releases += [dict(e, session=h["session"]) for h in holds_of(proc, evs) for e in evs
                     if e["f"] in ("release", "resign") and e["type"] == "ok"
                     and e["token"] == h["token"]]
    check_holds(holds, violations)
    check_grants(holds, releases, violations)
    bound_s = (ttl_ms + lock_delay_ms + election_bound_ms) / 1000.0
    measured = check_regrant(events, holds, bound_s, violations)
    ops = sum(1 for e in events if e["type"] == "invoke")
    return violations, {"operations": ops, "holds": len(holds), "accepted_writes": writes,
                        "regrants_measured": measured}


def main():
    events = load(sys.argv[1])
    violations, counts = check(events, int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
    for v in violations:
        print("%s: %s" % (v["kind"], v["what"]))
    print(json.dumps(counts))
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main())
