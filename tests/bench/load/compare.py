"""compare.py - `make bench-compare`'s side-by-side table: edgelock's figures
(build/bench/edgelock.json) next to each peer's (build/bench/PEER.json:
etcd, zookeeper, redis), measured in the same run, with ratios and the
issue's targets, each marked met or NOT met by edgelock's figure (or "-"
when this run has no figure for it, e.g. no Redis for the single-node row).

    compare.py EDGELOCK.json [PEER.json...]
"""
import json
import sys

# (label, workload, metric, higher is better, edgelock's target from issue 14)
ROWS = [
    ("cycles/s, 1 client", "uncontended-1", "cycles/s", True, None),
    ("cycle p50, 1 client (ms)", "uncontended-1", "cycle p50", False, "<= 1.0"),
    ("cycle p99, 1 client (ms)", "uncontended-1", "cycle p99", False, "<= 2.0"),
    ("cycles/s, 16 clients", "uncontended-16", "cycles/s", True, ">= 5000"),
    ("cycle p50, 16 clients (ms)", "uncontended-16", "cycle p50", False, None),
    ("cycle p99, 16 clients (ms)", "uncontended-16", "cycle p99", False, None),
    ("server CPU/cycle, 16 cl. (us)", "uncontended-16", "server CPU per cycle", False, "<= 60"),
    ("handoffs/s, 8 on one lock", "contended-8", "handoffs/s", True, ">= 1800"),
    ("handoff p50 (ms)", "contended-8", "handoff p50", False, "<= 0.75"),
    ("failover p50 (ms)", "failover", "kill to next grant p50", False, "<= 300"),
    ("failover max (ms)", "failover", "kill to next grant max", False, None),
    ("cycles/s, 100 held", "scale-100", "cycles/s", True, None),
    ("cycles/s, 30,000 held", "scale-30000", "cycles/s", True, "within 1.5x of 100"),
    ("CPU/cycle, 30,000 held (us)", "scale-30000", "server CPU per cycle", False, None),
    ("RSS idle, max node (MiB)", "footprint", "RSS idle, max node", False, "<= 4"),
    ("RSS under load, 16 cl. (MiB)", "uncontended-16", "RSS under load, max node", False, "<= 16"),
    ("RSS, 30,000 held (MiB)", "scale-30000", "RSS under load, max node", False, "<= 16"),
    ("RSS peak of run (MiB)", "footprint", "RSS peak of the run, max node", False, "<= 16"),
    ("single node, 16 cl., cycles/s", "single-16", "cycles/s", True, ">= Redis"),
    ("single node, 16 cl., p99 (ms)", "single-16", "cycle p99", False, None),
]


def load(path, peer):
    with open(path) as f:
        d = json.load(f)
    vals = {(r["workload"], r["metric"]): r["value"] for r in d["results"]}
    # a one-node peer (edgelock's own run without single-16 has no figure)
    if peer and not any(w == "single-16" for w, _ in vals):
        for (w, m), v in list(vals.items()):
            if w == "uncontended-16":
                vals[("single-16", m)] = v
    return d["target"], vals, d.get("notes", [])


def judge(target, w, m, sets):
    """'met', 'NOT met', or '-' (no figure to judge by) for one target."""
    mine = sets[0][1].get((w, m))
    if target is None or mine is None:
        return "-"
    if target.startswith("<= "):
        return "met" if mine <= float(target[3:]) else "NOT met"
    if target.startswith(">= Redis"):
        redis = next((v.get((w, m)) for n, v, _ in sets[1:] if n == "redis"), None)
        return "-" if redis is None else "met" if mine >= redis else "NOT met"
    if target.startswith(">= "):
        return "met" if mine >= float(target[3:]) else "NOT met"
    if target == "within 1.5x of 100":  # a rate: 30,000 held at least 1/1.5 of 100 held
        base = sets[0][1].get(("scale-100", m))
        return "-" if not base else "met" if mine * 1.5 >= base else "NOT met"
    raise ValueError("a target compare.py cannot judge: %r" % target)


def fmt(v):
    if v is None:
        return "-"
    return "%.0f" % v if abs(v) >= 100 else "%.2f" % v


def main():
    sets = [load(p, k > 0) for k, p in enumerate(sys.argv[1:])]
    names = [s[0] for s in sets]
    head = "%-31s" % "" + "".join("%12s" % n for n in names)
    head += "".join("%16s" % ("el/" + n) for n in names[1:])
    print("\n" + head + "   %-20s %s" % ("target (edgelock)", "met?"))
    verdicts = []
    for label, w, m, _, target in ROWS:
        vals = [s[1].get((w, m)) for s in sets]
        line = "%-31s" % label + "".join("%12s" % fmt(v) for v in vals)
        for v in vals[1:]:
            ok = v not in (None, 0) and vals[0] is not None
            line += "%16s" % ("%.2fx" % (vals[0] / v) if ok else "-")
        verdict = judge(target, w, m, sets)
        if target is not None:
            verdicts.append(verdict)
        print(line + "   %-20s %s" % (target or "", verdict if target else ""))
    for name, _, notes in sets:
        for n in notes:
            print("note (%s): %s" % (name, n))
    print("Targets (issue 14): %d met, %d NOT met, %d without a figure in this run."
          % (verdicts.count("met"), verdicts.count("NOT met"), verdicts.count("-")))
    print("Ratios are edgelock / peer: above 1 is better for rates, below 1 for times and sizes.")
    print("Peers with one node are compared on their only node; their row 'single node' is their 16-client run.")


if __name__ == "__main__":
    main()
