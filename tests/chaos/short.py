"""short.py BUILD - the chaos suite's short version for `make test` (suite
chaos-short, about a minute): a 22 s chaos run with every nemesis and the
fence on must find no violation; a 15 s control with the fence off (client
pauses only, the fault that makes a lost update, so it is brief) must find
lost updates, which shows the checker can see them. Ends with "N passed, N failed".
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "daemon"))
from elcluster import Checks  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")


def chaos(name, *args):
    """Run chaos.py; its exit status and verdict (None when it wrote none)."""
    out = os.path.join(BUILD, "chaos", "short-%s-%d" % (name, os.getpid()))
    rc = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "chaos.py"), BUILD, "--out", out,
                         "--seed", str(os.getpid())] + list(args)).returncode
    try:
        with open(os.path.join(out, "verdict.json")) as f:
            return rc, json.load(f), out
    except (OSError, ValueError):
        return rc, None, out


def main():
    check = Checks()
    rc, v, out = chaos("fenced", "--seconds", "22")
    ok = v is not None
    check("fenced run: a verdict (%s)" % out, ok)
    if ok:
        faults = sum(n for k, n in v["faults"].items() if not k.startswith("crash-wal-"))
        check("fenced run: operations recorded (%d) and writes accepted (%s)"
              % (v["operations"], v["accepted_writes"]),
              v["operations"] > 100 and min(v["accepted_writes"].values()) > 10)
        check("fenced run: faults injected (%d: %s)" % (faults, v["faults"]), faults >= 3)
        check("fenced run: no violation (%s)" % v["violations_by_kind"],
              v["violations"] == 0 and rc == 0, "\n".join(v["examples"]))
    rc, v, out = chaos("control", "--seconds", "15", "--fencing", "off",
                       "--faults", "pause-client")
    ok = v is not None
    check("control run: a verdict (%s)" % out, ok)
    if ok:
        lost = v["violations_by_kind"].get("lost-update", 0)
        check("control run (fence off): the checker found %d lost updates" % lost,
              lost > 0 and rc == 0, json.dumps(v["faults"]))
    if check.failed == 0:  # keep the runs only when they have something to show
        for name in ("fenced", "control"):
            subprocess.run(["rm", "-rf", os.path.join(BUILD, "chaos", "short-%s-%d" % (name, os.getpid()))])
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
