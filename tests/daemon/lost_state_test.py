"""lost_state_test.py BUILD - a member that lost state it had acknowledged,
and voted, is said by the node whose committed entries get overwritten
(suite daemon-lost-state).

Raft is safe only while every member keeps what it acknowledged. An outside
tester restarted a board whose store does not survive power loss: with a
stale member it elected a leader that overwrote committed entries, and no
log said a word. Here, on three real edgelockd: node A is killed (stale),
locks are taken by B and C, then C is killed, its data directory
wiped and C bootstrapped afresh (what a RAM store does at power-up) while
B is paused, A and C elect A, and B, resumed, gets its committed entries
contradicted. The Raft core refuses those appends and keeps B's log (B
then follows no one); B must also log the "safety: leader ... contradict
what this node knew committed" line, naming what to do, where it only
counted a refused message. (A node restarted meanwhile cannot tell: the
commit index is volatile, Raft's Figure 2.) Processes by PID
(elcluster.py).

Prints "ok NAME" / "FAIL NAME: why" per check and "N passed, N failed".
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from elcluster import Checks, Cluster, eventually, free_ports  # noqa: E402

check = Checks()


def log_text(c, i):
    with open(c.log(i)) as f:
        return f.read()


def take_locks(c, leader, prefix, n):
    conn = c.connect(leader)
    try:
        s = conn.call({1: 1, 9: 60000, 13: "w", 14: random.getrandbits(64)}).get(4, 0)
        errs = [conn.call({1: 4, 4: s, 5: k + 1, 6: "%s%d" % (prefix, k)}).get(3, 0)
                for k in range(n)]
        return s != 0 and errs == [0] * n
    finally:
        conn.close()


def run(c):
    first = c.wait_leader()
    check("a lock taken on the new cluster", take_locks(c, first, "a", 1))
    stale = next(i for i in sorted(c.procs) if i != first)
    c.kill(stale)
    leader = c.wait_leader()
    check("with the stale node down, locks are taken", take_locks(c, leader, "b", 10))
    keeper, wiped = leader, next(i for i in sorted(c.procs) if i != leader)
    commit = c.status(keeper).get(25, 0)
    # The keeper is paused, not killed: the commit index is volatile (Raft,
    # Figure 2), so only a running node knows which entries it saw committed.
    c.signal(keeper, signal.SIGSTOP)
    c.kill(wiped)
    shutil.rmtree(c.data(wiped))
    c.start(wiped, "--bootstrap")  # empty, as a RAM store after a power cut
    c.start(stale)
    try:
        check("the stale node and the empty one elect the stale node",
              c.wait_leader(exclude=(keeper,)) == stale)
    finally:
        c.signal(keeper, signal.SIGCONT)
    line = "safety: leader %d (term " % stale
    said = eventually(lambda: line in log_text(c, keeper), 15.0)
    text = log_text(c, keeper)
    tail = text[text.find(line):][:600] if said else text[-600:]
    check("the node whose committed entries the new leader contradicts says so, at error, "
          "with what to do",
          said and "contradict what this node knew committed (up to " in tail and
          "--join" in tail and "error:" in text[max(0, text.find(line) - 40):text.find(line)],
          "commit was %d: %s" % (commit, tail))
    check("the other nodes, which lost nothing they knew committed, say nothing of it",
          "safety:" not in log_text(c, stale) and "safety:" not in log_text(c, wiped))
    st = c.status(keeper)
    check("the refusing node keeps its committed entries",
          st.get(25, 0) >= commit and st.get(26, 0) >= commit, "%r, commit was %d" % (st, commit))


def wipe_follower(c, leader, flag, what, before, after):
    """Locks taken (before: prefix, count), a follower killed, its data
    wiped and started again under its id with flag, more locks taken
    (after); (the wiped follower, the other one)."""
    check("%s: locks taken" % what, take_locks(c, leader, *before))
    wiped, other = [i for i in sorted(c.procs) if i != leader]
    c.kill(wiped)
    shutil.rmtree(c.data(wiped))
    c.start(wiped, flag)
    check("%s: more locks taken" % what, take_locks(c, leader, *after))
    return wiped, other


def holds_log_again(c, leader, wiped, what):
    commit = c.status(leader).get(25, 0)
    check("%s: it holds the log again" % what,
          eventually(lambda: c.status(wiped).get(25, 0) >= commit, 15.0),
          "%r, leader's commit %d" % (c.status(wiped), commit))


def run_wiped_follower(c):
    """A follower's data wiped under a running leader and the board started
    again under its id (bootstrapped with the same [peers], so its hellos
    pass): its replies hint below what it acknowledged. Before, the leader
    took each as stale: the follower stayed empty while `status` showed it
    reachable, and when the other follower died the cluster stopped, with
    nothing in any log (an outside tester). Now the leader says so and sends
    it the log again, and the cluster survives the other follower's loss."""
    leader = c.wait_leader()
    wiped, other = wipe_follower(c, leader, "--bootstrap", "wiped follower", ("c", 10), ("d", 3))
    line = "safety: node %d acknowledged entries up to " % wiped
    said = eventually(lambda: line in log_text(c, leader), 15.0)
    check("wiped follower: the leader says it lost entries it acknowledged, with what to do",
          said and "members remove %d" % wiped in log_text(c, leader),
          log_text(c, leader)[-600:])
    holds_log_again(c, leader, wiped, "wiped follower")
    c.kill(other)
    check("wiped follower: with the other follower dead, locks are still taken",
          take_locks(c, c.wait_leader(timeout=20), "e", 2))


def lock_token(c, leader, name):
    conn = c.connect(leader)
    try:
        s = conn.call({1: 1, 9: 60000, 13: "w", 14: random.getrandbits(64)}).get(4, 0)
        rep = conn.call({1: 4, 4: s, 5: 1, 6: name})
        return rep.get(11, 0) if rep.get(3, 0) == 0 else 0
    finally:
        conn.close()


def run_empty_joiner(c):
    """A member's data wiped while two of three are down, started again
    under its id with --join (before, it voted while empty), beside a
    stale member: the two elected the stale one, whose tokens went
    backwards (an outside tester). A node that knows no configuration does
    not vote: no leader until the node with the newest entries is back,
    and the next token is above every one granted."""
    leader = c.wait_leader()
    stale, wiped = [i for i in sorted(c.procs) if i != leader]
    c.kill(stale)
    leader = c.wait_leader()
    top = max(lock_token(c, leader, "t%d" % k) for k in range(5))
    c.kill(leader)
    c.kill(wiped)
    shutil.rmtree(c.data(wiped))
    c.start(wiped, "--join")
    c.start(stale)
    time.sleep(5 * c.election_ms / 1000.0)
    roles = {i: c.status(i).get(23) for i in (stale, wiped)}
    check("empty joiner: it does not vote, so the stale node is not elected",
          3 not in roles.values(), repr(roles))
    check("empty joiner: it says why it does not vote",
          eventually(lambda: "knows no configuration yet" in log_text(c, wiped), 10.0),
          log_text(c, wiped)[-500:])
    c.start(leader)
    now = c.wait_leader(timeout=30)
    token = lock_token(c, now, "after")
    check("empty joiner: once the newest node is back, the next token is above all before",
          token > top, "token %d, highest before %d" % (token, top))


def run_joined_unremoved(c):
    """A follower's data wiped and the board started again with --join,
    without `members remove` first. Its log starts empty, so the leader
    sent it the entries from index 1 on, and a young cluster's
    configuration was in no entry: only in the bootstrap snapshot at index
    0, which a follower never needs. It caught up but knew no
    configuration, so it never voted: with the leader lost, the cluster
    stopped for good (an outside tester). Now a node compacts its first
    applied entry into a snapshot, which carries the configuration to any
    follower that needs the log from its start."""
    leader = c.wait_leader()
    wiped, other = wipe_follower(c, leader, "--join", "joined unremoved", ("f", 3), ("g", 3))
    holds_log_again(c, leader, wiped, "joined unremoved")
    c.kill(leader)
    now = c.wait_leader(timeout=20)
    check("joined unremoved: with the leader dead, the two others elect a leader",
          now in (wiped, other), "leader %r" % (now,))
    check("joined unremoved: and locks are taken again",
          now in (wiped, other) and take_locks(c, now, "h", 2))


def run_cloned_identity(c):
    """A second board given a follower's certificate (and its config, with
    its own addresses) while that follower still runs: the others took both
    as one node, which then has two votes to give in a term, and said only
    that its address moved (an outside tester). A node dials another on one
    connection at a time, so frames still arriving on the older connection
    a second after the newer one said hello mean two live processes. First,
    a follower simply restarted (SIGKILL, start) must not be taken for that."""
    leader = c.wait_leader()
    twin, other = [i for i in sorted(c.procs) if i != leader]
    line = "safety: two connections present node %d's certificate at once" % twin
    c.kill(other)
    c.start(other)
    c.wait_leader()
    check("cloned identity: the leader logs no such line for a restarted follower",
          not eventually(lambda: "safety: two connections" in log_text(c, leader), 4.0))
    ports = free_ports(2)
    with open(c.config(twin)) as f:
        text = f.read()
    text = text.replace(c.data(twin), c.data(twin) + "-twin")
    text = text.replace(":%d\n" % c.peer_port[twin], ":%d\n" % ports[0])
    text = text.replace(":%d\n" % c.client_port[twin], ":%d\n" % ports[1])
    with open(c.config(twin) + "-twin", "w") as f:
        f.write(text)
    with open(c.log(twin) + "-twin", "a") as logf:
        p = subprocess.Popen([c.bin, "-c", c.config(twin) + "-twin", "--bootstrap"],
                             stdout=logf, stderr=subprocess.STDOUT)
    try:
        said = eventually(lambda: line in log_text(c, leader), 20.0)
        text = log_text(c, leader)
        at = text.find(line)
        check("cloned identity: the leader says, at error, that two boards present node %d's "
              "certificate, with both addresses and what to do" % twin,
              said and "error:" in text[max(0, at - 40):at] and
              ":%d" % ports[0] in text[at:at + 500] and "stop the board" in text[at:at + 500],
              text[-800:])
    finally:
        p.terminate()
        p.wait()


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    random.seed(int(os.environ.get("SEED", "1")))
    for t in (run, run_wiped_follower, run_empty_joiner, run_joined_unremoved,
              run_cloned_identity):
        c = Cluster(build, 3)
        try:
            c.start_all(bootstrap=True)
            t(c)
        except Exception as e:  # a crashed step fails the suite
            check("lost state: " + t.__name__, False, "raised %r" % (e,))
        finally:
            c.stop_all()
            check.no_sanitizer_reports(c)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
