"""run.py BUILD - the lock-run example, end to end: three edgelockd on
loopback over TLS (tests/daemon/elcluster.py) and two "boards", each a
scheduler (scheduler.sh) running the backup job (job.sh) under
`edgelock lock job/backup --wait 0` several times per period. In one period
the board running the job is SIGSTOPped (scheduler, CLI and job) past the
lock's TTL, so the other board takes over that period, and then resumed.

Checks that every period's job ran exactly once, that fencing tokens rise
period by period, that the lock turned boards away (exit 75), that the
done-marker turned later holders away, and that the paused board's late
commit was refused by the fence or its job killed by the CLI; and that a
damaged STORE/highest refuses a commit rather than reading as 0.
Ends with "N passed, N failed". Run with /usr/bin/python3.

State goes to BUILD/tmp/cluster-PID (removed when every check passed); the
daemons listen on free ports of 127.0.0.1 picked at start.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tests", "daemon"))
from elcluster import Cluster  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
PERIOD_MS, PERIODS, ATTEMPTS, TTL = 4000, 6, 4, "1500ms"
PAUSED_PERIOD, PAUSE_S = 2, 2.9
BOARDS = ("board1", "board2")
results = []


def check(ok, what):
    results.append(ok)
    print(("ok   " if ok else "FAIL ") + what, flush=True)


def sched_log(store, board):
    path = os.path.join(store, "sched-%s.log" % board)
    return open(path).read() if os.path.exists(path) else ""


def start_boards(cluster, store, epoch_ms):
    env = dict(os.environ, EDGELOCK=os.path.join(BUILD, "bin", "edgelock"),
               EDGELOCK_ENDPOINTS=",".join(cluster.addr(i) for i in sorted(cluster.client_port)),
               EDGELOCK_CA=cluster.certs + "/ca.pem", EDGELOCK_CERT=cluster.certs + "/client.pem",
               ATTEMPTS=str(ATTEMPTS), LOCK_TTL=TTL)
    # Each board in its own session, so a pause stops the whole board: the
    # CLI runs its job in a process group of its own, within that session.
    return {b: subprocess.Popen([os.path.join(HERE, "scheduler.sh"), b, str(epoch_ms), str(PERIOD_MS),
                                 str(PERIODS), store], env=env, start_new_session=True)
            for b in BOARDS}


def signal_board(p, sig):
    """sig to every process of the board's session (scheduler, CLIs, jobs),
    as a paused or powered-off board stops all of them."""
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % pid) as f:
                sid = int(f.read().rsplit(")", 1)[1].split()[3])
            if sid == p.pid:
                os.kill(int(pid), sig)
        except (OSError, ValueError, IndexError):
            pass  # gone meanwhile


def pause_runner(store, boards):
    """Wait until a board starts the paused period's job, stop that board
    past the lock's TTL, resume it; returns its name."""
    pat = re.compile(r"job: period %d started by scheduler (\S+)" % PAUSED_PERIOD)
    end = time.time() + (PAUSED_PERIOD + 2) * PERIOD_MS / 1000.0
    while time.time() < end:
        for b in BOARDS:
            if pat.search(sched_log(store, b)):
                signal_board(boards[b], signal.SIGSTOP)
                print("period %d: %s started the job; board stopped for %.1f s" % (
                    PAUSED_PERIOD, b, PAUSE_S), flush=True)
                time.sleep(PAUSE_S)
                signal_board(boards[b], signal.SIGCONT)
                return b
        time.sleep(0.02)
    return None


def stop_board(p):
    """By its session: resume, SIGTERM the scheduler (it stops after the
    current attempt), SIGKILL what is left of the board after 10 s."""
    if p.poll() is None:
        signal_board(p, signal.SIGCONT)
        os.kill(p.pid, signal.SIGTERM)
        try:
            p.wait(10.0)
        except subprocess.TimeoutExpired:
            signal_board(p, signal.SIGKILL)
    p.wait()


def job_lines(store):
    rows = []
    path = os.path.join(store, "job.log")
    if os.path.exists(path):
        for line in open(path):
            m = re.match(r"period (\d+) by scheduler (\S+) token (\d+)$", line.strip())
            rows.append((int(m.group(1)), m.group(2), int(m.group(3))) if m else (-1, line, 0))
    return rows


def attempts(store):
    """(board, period, exit status) of every attempt."""
    out = []
    for b in BOARDS:
        for m in re.finditer(r"period (\d+) attempt \d+ exit (\d+)", sched_log(store, b)):
            out.append((b, int(m.group(1)), int(m.group(2))))
    return out


def run(cluster, store):
    epoch_ms = int(time.time() * 1000) + 500
    boards = start_boards(cluster, store, epoch_ms)
    try:
        paused = pause_runner(store, boards)
        for p in boards.values():
            p.wait(PERIODS * PERIOD_MS / 1000.0 + 20)
    finally:
        for p in boards.values():
            stop_board(p)
    return paused


def run_job(store, token, period):
    """job.sh alone, as a holder of token would run it: (exit status, output)."""
    env = dict(os.environ, EDGELOCK_TOKEN=str(token), JOB_STORE=store, SCHEDULER="stale", JOB_SECONDS="0")
    p = subprocess.run([os.path.join(HERE, "job.sh"), str(period)], env=env,
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=10)
    return p.returncode, p.stdout.decode().strip().splitlines()


def damaged_highest(store):
    """A store whose STORE/highest holds no token: a commit with token 3 must
    be refused, job.log left unwritten. Returns (exit status, job.log grew)."""
    os.makedirs(store)
    with open(os.path.join(store, "highest"), "w") as f:
        f.write("x78\n")
    rc, out = run_job(store, 3, 0)
    print("a commit on a damaged STORE/highest: %s (exit %d)" % (out[-1] if out else "", rc))
    return rc, os.path.exists(os.path.join(store, "job.log"))


def stale_commit(store, rows):
    """A holder that lost the lock mid-job and resumes past its marker check,
    played directly: job.sh for a period with no marker yet (the next one),
    with the oldest token. Returns (exit status, output, job.log grew)."""
    if not rows:
        return None, "", False
    before = len(rows)
    rc, out = run_job(store, min(r[2] for r in rows), PERIODS)
    print("a stale holder's commit, played: %s (exit %d)" % (out[-1] if out else "", rc))
    return rc, out, len(job_lines(store)) > before


def report(store, paused):
    rows = job_lines(store)
    stale_rc, _, grew = stale_commit(store, rows)
    print("job.log:")
    for r in rows:
        print("  period %d by scheduler %s token %d" % r)
    tries = attempts(store)
    for b in BOARDS:
        codes = [c for bb, _, c in tries if bb == b]
        print("%s: %d attempts, exit statuses %s" % (b, len(codes), {c: codes.count(c) for c in sorted(set(codes))}))
    skips = sum(sched_log(store, b).count("already done") for b in BOARDS)
    refused = [b for b in BOARDS if "period %d token" % PAUSED_PERIOD in sched_log(store, b)
               and "REFUSED" in sched_log(store, b)]
    paused_codes = [c for b, p, c in tries if b == paused and p == PAUSED_PERIOD]
    print("paused board %s, its attempts in period %d exited %s; fence refusals: %s" % (
        paused, PAUSED_PERIOD, paused_codes, refused or "none"))
    for line in sched_log(store, paused or BOARDS[0]).splitlines():
        if re.search(r"period %d\b" % PAUSED_PERIOD, line):
            print("  %s: %s" % (paused, line))
    per_period = {p: [r for r in rows if r[0] == p] for p in range(PERIODS)}
    check(all(len(v) == 1 for v in per_period.values()) and len(rows) == PERIODS,
          "each of the %d periods' job ran exactly once (%s)" % (
              PERIODS, ", ".join("%d:%d" % (p, len(v)) for p, v in per_period.items())))
    tokens = [r[2] for r in sorted(rows)]
    check(len(tokens) == PERIODS and all(a < b for a, b in zip(tokens, tokens[1:])),
          "the tokens rise period by period: %s" % tokens)
    check(any(c == 75 for _, _, c in tries), "the lock turned a board away (exit 75, held)")
    check(skips > 0, "the done-marker turned %d later lock holders away (the lock alone would rerun)" % skips)
    took = per_period.get(PAUSED_PERIOD, [])
    check(paused is not None and len(took) == 1 and took[0][1] != paused,
          "period %d, whose runner was paused past the TTL, was run by the other board" % PAUSED_PERIOD)
    check(paused is not None and any(c in (3, 76) for c in paused_codes),
          "the paused board's job did not commit: refused by the fence (3) or killed by the CLI (76)")
    check(stale_rc == 3 and not grew,
          "a job with an older token past its marker check is refused by the fence (exit 3)")
    check(all(c in (0, 3, 75, 76) for _, _, c in tries),
          "no attempt failed otherwise (exit 0, 75, or 3/76 for a lost lock)")
    rc, grew = damaged_highest(store + "-damaged")
    check(rc == 1 and not grew, "a damaged STORE/highest refuses the commit (exit %d), never reads as 0" % rc)


def main():
    cluster = Cluster(BUILD, 3, election_ms=600, heartbeat_ms=60)
    cluster.start_all(bootstrap=True)
    store = os.path.join(cluster.dir, "store")
    os.makedirs(store)
    paused = None
    try:
        cluster.wait_leader()
        paused = run(cluster, store)
    finally:
        cluster.stop_all()
    report(store, paused)
    n_ok = sum(results)
    print("%d passed, %d failed" % (n_ok, len(results) - n_ok))
    if n_ok < len(results):
        print("state kept in %s" % cluster.dir)
        return 1
    shutil.rmtree(cluster.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
