"""cli_test.py BUILD - the edgelock CLI (and so libedgelock) against three real
edgelockd processes over TLS on loopback, started and stopped by PID.

Checks: lock -- CMD runs with its token and releases; FIFO handoff between
waiting clients with rising tokens; shared holders overlap; try-lock on a
held lock says who holds it (exit 75); an election seen by observe;
concurrent `edgelock lock` processes incrementing one counter file lose no
increment; a SIGKILLed client's lock goes to a waiter after TTL + lock-delay;
the leader SIGKILLed while a client waits: the waiter is granted (failover
time printed); every daemon SIGSTOPed longer than the TTL while
`lock -- CMD` runs: CMD is dead before the CLI's local lease deadline and the
CLI exits 76, and CMD's own children are dead too (it runs in a process
group of its own); a SIGKILLed CLI's CMD is killed by the kernel
(PR_SET_PDEATHSIG) and CMD's children by the CLI's watchdog, which outlives
it; a CLI stopped past its lease: the watchdog kills CMD in time (exit 76),
or, when CMD had ended by itself within the lease, the CLI exits with CMD's
status and a warning; SIGINT or SIGTERM to a CLI still waiting for the lock
ends the wait (exit 130/143), drops it on the cluster and CMD never runs, and
SIGTERM/SIGINT/SIGHUP while the session opens towards an endpoint nobody
listens on ends it at once (--timeout 1193h); stdout a pipe whose reader is
gone: read commands exit 74 (Broken pipe), elect runs CMD with SIGPIPE's
default and gives leadership back; elect's "elected" line is on stderr;
stdout and stderr through one pipe (`2>&1 | cat`) keep the order written;
--opt=value, --timeout 0, a value-taking option before --, --json where not
taken, --grace not shorter than --ttl, a command's option before the
command (64, saying where it goes); transfer-leader with no quorum is 69;
`locks --json` shows a lock in its lock-delay delayed, with its last token;
the whole cluster SIGKILLed and restarted: the held lock is
still there and the next token is higher; observe with every daemon stopped
reports errors, not "free", and exits 69; names and values with quotes,
backslashes and control characters keep --json output valid JSON; global options after the command count,
other unknown options or stray arguments exit 64; --help of every command exits 0;
`locks` leaves out a name only watched; the leader's `status` shows a
SIGSTOPped follower unreachable (its link stays up); with two of three
daemons killed a call exits 69 at --timeout, one line naming every endpoint
tried, and libedgelock returns EL_ETIMEDOUT (client_safety.c, no-quorum);
a client pointed at a node's peer port ends at once saying it was closed
there right after TLS (peer port?), not after its whole --timeout.

Membership under load (issue 11), all through the CLI while three threads
run `edgelock lock` processes back to back, each incrementing a counter file
and logging its value and token: a fourth edgelockd starts empty (--join),
`members add 4 ... --learner` makes it a learner (`members list --json`), it
stays one until `members promote 4` (retried while it catches up), then is a
voter that follows the leader and holds the lock table; the leader is removed
with `members remove`, is gone from `members list` while another node leads,
and its daemon stops by itself (exit 0). Then: the counter equals the number of
logged increments, which are 1, 2, 3... (no lost update) with rising tokens;
every lock client succeeded and some ran during the change; a lock held
throughout kept its token; the remaining three nodes grant a higher token.

libedgelock's edges (client_safety.c): a session lost locally sends no
acquire and still sends its close; an open slower than the TTL hands out
no session; a second call on a session in use gets EL_EBUSY at once; a
wait whose seq a newer request of its session made stale still returns its
grant, or EL_ETIMEDOUT once it will never be granted; a
client whose endpoints all refuse returns within its timeout; el_client_close
closes the sessions left open (their locks free at once, nothing leaked); a
refused certificate (none, or a node's) is EL_EPERM at once; one reconnect
(the leader's connection lost, the leader found through a follower's
redirect) is one EL_EVENT_GAP; names that are not UTF-8, token 0 and an
endpoint list with an empty entry are refused by the library, saying why;
el_client_close with the cluster gone takes one timeout, not a renewal's
bound more; a wait whose lease ran out returns EL_EEXPIRED at once, not a
timeout later; el_query shows the holder's whole stored name. A new client
whose first endpoint is a SIGSTOPped follower still reaches the leader
within --timeout 1500ms.

Ends with "N passed, N failed". Run with /usr/bin/python3 (python3-cbor2).
"""
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "daemon"))
from elcluster import Cluster, read_frame  # noqa: E402

BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "build")
# EDGELOCK_CLI: another build of the CLI (`make test-client-san`: ASan/UBSan)
CLI = os.environ.get("EDGELOCK_CLI") or os.path.join(BUILD, "bin", "edgelock")
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
        print("ok   " + what, flush=True)
    else:
        failed += 1
        print("FAIL " + what, flush=True)


class Env:
    def __init__(self, cluster):
        self.c = cluster
        eps = ",".join(cluster.addr(i) for i in sorted(cluster.client_port))
        certs = cluster.certs
        self.env = dict(os.environ, EDGELOCK_ENDPOINTS=eps, EDGELOCK_CA=certs + "/ca.pem",
                        EDGELOCK_CERT=certs + "/client.pem")
        self.tmp = cluster.dir

    def run(self, *args, timeout=60):
        return subprocess.run([CLI] + list(args), env=self.env, capture_output=True, text=True,
                              timeout=timeout)

    def start(self, *args):
        # Own process group: a test may kill the CLI and its command together.
        return subprocess.Popen([CLI] + list(args), env=self.env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)

    def path(self, name):
        return os.path.join(self.tmp, name)


def log_cmd(path, tag, seconds):
    """A shell command that appends 'start|end TAG TOKEN TIME' around a sleep."""
    return ["sh", "-c", 'echo "start %s $EDGELOCK_TOKEN $(date +%%s.%%N)" >> %s; sleep %s; '
            'echo "end %s $EDGELOCK_TOKEN $(date +%%s.%%N)" >> %s' % (tag, path, seconds, tag, path)]


def read_log(path):
    rows = []
    with open(path) as f:
        for line in f:
            kind, tag, token, t = line.split()
            rows.append((kind, tag, int(token), float(t)))
    return rows


def test_basics(e):
    r = e.run("lock", "demo", "--", "sh", "-c", 'echo "$EDGELOCK_LOCK $EDGELOCK_TOKEN"; exit 3')
    name, token = (r.stdout.split() + ["", "0"])[:2]
    check(r.returncode == 3 and name == "demo" and int(token) > 0,
          "lock -- CMD: CMD runs with EDGELOCK_LOCK/TOKEN, the CLI exits with its status (%d)"
          % r.returncode)
    r2 = e.run("lock", "demo", "--", "sh", "-c", 'echo $EDGELOCK_TOKEN')
    check(r2.returncode == 0 and int(r2.stdout.split()[0]) > int(token),
          "the lock was released after CMD; the next holder's token is higher")
    holder = e.start("lock", "held", "--", "sleep", "3")
    time.sleep(1.0)
    r = e.run("lock", "held", "--wait", "0", "--", "true")
    check(r.returncode == 75 and "held by" in r.stderr and "token" in r.stderr,
          "try-lock on a held lock: exit 75 and who holds it (%r)" % r.stderr.strip())
    r = e.run("locks", "--json")
    check(r.returncode == 0 and '"name":"held"' in r.stdout, "locks --json lists the held lock")
    r = e.run("status", "--json")
    check(r.returncode == 0 and r.stdout.count('"role":"leader"') == 1, "status: one leader")
    holder.wait(timeout=30)


def json_lines(text):
    """Every line of text parsed as JSON, None for one that is not. Split on
    newlines only: str.splitlines() also splits at U+0085 and U+2028."""
    rows = []
    for line in filter(None, text.split("\n")):
        try:
            rows.append(json.loads(line))
        except ValueError:
            rows.append(None)
    return rows


def test_locks_json_lines(e):
    """`locks --json` is JSON Lines, as documented: on a new cluster no line
    at all (the table says "(no locks)"), then one object per lock, each on
    a line of its own."""
    empty, table = e.run("locks", "--json"), e.run("locks")
    ps = [e.start("lock", n, "--", "sleep", "2") for n in ("jl-a", "jl-b")]
    time.sleep(1.0)
    rows = json_lines(e.run("locks", "--json").stdout)
    for p in ps:
        p.wait(timeout=30)
    check(empty.returncode == 0 and empty.stdout == "" and "(no locks)" in table.stdout,
          "locks --json with no locks: no output at all (%r)" % empty.stdout)
    check(len(rows) == 2 and all(isinstance(r, dict) for r in rows) and
          sorted(r["name"] for r in rows) == ["jl-a", "jl-b"],
          "locks --json: one object per lock per line %r" % rows)


def test_watched_not_listed(e):
    """A name only watched (observe: no holders, waiters or lock-delay) is no
    lock: `locks` and `locks --json` leave it out, as they list a lock."""
    obs = e.start("observe", "only-watched")
    first = obs.stdout.readline()  # observe watches before its first state
    p = e.start("lock", "listed-lock", "--", "sleep", "2")
    listed = eventually(lambda: "listed-lock" in e.run("locks").stdout)
    table, rows = e.run("locks").stdout, json_lines(e.run("locks", "--json").stdout)
    obs.kill()
    obs.communicate(timeout=20)
    p.wait(timeout=30)
    check(first.startswith("only-watched: free") and listed and "only-watched" not in table and
          [r["name"] for r in rows] == ["listed-lock"],
          "locks leaves out a name only watched: %r %r" % (table, rows))


def test_json_escaped(e):
    """--json stays JSON whatever names and values hold: a lock named with a
    quote, a tab, backslashes and a control character, an election whose
    value has a quote and a newline; every line of `locks --json`, `observe
    --json` and `status --json` parses, and gives the names and value back."""
    name, ename, value = 'q"uo\te\\\x01\\', 'el"ect\\', 'v"1\nline2\\'
    obs = e.start("--json", "observe", ename)
    time.sleep(1.0)
    holder = e.start("lock", name, "--", "sleep", "3")
    leader = e.start("elect", ename, value, "--", "sleep", "3")
    time.sleep(1.5)
    locks = json_lines(e.run("locks", "--json").stdout)
    status = json_lines(e.run("status", "--json").stdout)
    holder.wait(timeout=30)
    leader.wait(timeout=30)
    time.sleep(0.5)
    obs.send_signal(signal.SIGINT)
    seen = json_lines(obs.communicate(timeout=20)[0])
    names = [lock and lock.get("name") for lock in locks]
    check(None not in locks and name in names and ename in names,
          "locks --json: every line is JSON, the odd names come back as given %r" % names)
    check(len(seen) >= 2 and None not in seen and any(o["name"] == ename and
                                                      o["value"] == value for o in seen),
          "observe --json: every line is JSON, with the election's value as given %r" % seen)
    check(len(status) == 3 and None not in status, "status --json: every line is JSON")


def test_observe_delayed(e):
    """A holder's session expires with a lock-delay: observe says the lock
    is in its lock-delay, with the expired holder's token (the old CLI said
    "free" while `locks` said "delayed" and an acquire was refused), then
    "free" once the delay ends, which no event announces (it asks again
    every second). --json: "delayed" true, then false. A try or a short
    --wait meanwhile exits 75 saying the lock is in its lock-delay, with
    the expired holder's token, its bound and `observe` to see its end."""
    name = "obs-delay"
    obs, obj = e.start("observe", name), e.start("--json", "observe", name)
    time.sleep(1.0)
    holder = e.start("lock", name, "--ttl", "2s", "--lock-delay", "4s", "--", "sleep", "60")
    held = eventually(lambda: waiters_of(e, name) == 0)
    time.sleep(0.5)
    os.killpg(holder.pid, signal.SIGKILL)  # no close: the session expires at its TTL
    holder.wait(timeout=10)

    def delayed():
        return any(lock["name"] == name and lock["delayed"]
                   for lock in json_lines(e.run("locks", "--json").stdout) if lock)
    in_delay = eventually(delayed, 10.0)
    # refused meanwhile (a try; a --wait that runs out): said to be the
    # lock-delay, with its bound and where to see its end (the old CLI:
    # "lock in lock-delay", and "timed out" after a --wait)
    tries = [e.run("lock", name, "--wait", w, "--", "true") for w in ("0", "300ms")]
    ended = eventually(lambda: waiters_of(e, name) is None, 15.0)
    time.sleep(2.0)  # observe asks within a second of the end
    for p in (obs, obj):
        p.send_signal(signal.SIGINT)
    text = obs.communicate(timeout=20)[0].splitlines()
    seen = [o for o in json_lines(obj.communicate(timeout=20)[0]) if o]
    m = [re.match(r"obs-delay: held by .* token (\d+)\)$", ln) for ln in text]
    token = next((x.group(1) for x in m if x), None)
    want = ["obs-delay: in lock-delay (its holder's session expired, token %s); free once the "
            "delay ends" % token, "obs-delay: free"]
    check(held and in_delay and ended and token is not None and text[-2:] == want,
          "observe: a lock in its lock-delay is not called free; its end is seen %r" % text)
    for t, w in zip(tries, ("0", "300ms")):
        check(t.returncode == 75 and token is not None and
              ("obs-delay is in its lock-delay (its holder's session expired, token %s): free "
               "once the lock-delay that holder asked for has passed, at most 60s" % token)
              in t.stderr and "edgelock observe obs-delay` prints when" in t.stderr,
              "lock --wait %s on a lock in its lock-delay: exit %d (want 75), says so, its "
              "bound and how to see its end (%s)" % (w, t.returncode, t.stderr.strip()))
    states = [(o.get("held"), o.get("delayed"), o.get("token")) for o in seen]
    check(len(states) >= 3 and states[-3][0] and states[-2] == (False, True, states[-3][2])
          and states[-1] == (False, False, 0),
          "observe --json: held, then delayed with that token, then free %r" % states)


def test_operator_output(e):
    """What an operator reads: `locks` escapes a name's control bytes (C0,
    DEL, C1 as UTF-8) and backslashes as \\xHH, so a name cannot drive the
    terminal; `status` shows each node's last index (the lost-quorum
    survivor is the highest, docs/operations.md), --json too; `members add`
    with a bad address names it and says why, before asking the leader."""
    name = "esc\x1b[31mred\u009bx\\y\x7f\u00e9"
    holder = e.start("lock", name, "--", "sleep", "3")
    time.sleep(1.0)
    r = e.run("locks")
    holder.wait(timeout=30)
    check(r.returncode == 0 and "esc\\x1b[31mred\\xc2\\x9bx\\x5cy\\x7f\u00e9" in r.stdout
          and "\x1b" not in r.stdout and "\u009b" not in r.stdout,
          "locks: control bytes of a name shown as \\xHH (%r)" % r.stdout)
    table, rows = e.run("status"), json_lines(e.run("status", "--json").stdout)
    lasts = re.findall(r" commit (\d+) +applied \d+ +last (\d+) ", table.stdout)
    check(len(lasts) == 3 and all(int(last) >= int(commit) > 0 for commit, last in lasts),
          "status: every node's last index, at least its commit (%r)" % table.stdout)
    check(len(rows) == 3 and all(isinstance(row, dict) and row.get("last_index", -1) >=
                                 row["commit"] > 0 for row in rows),
          "status --json: last_index on every node (%r)" % rows)
    good = e.c.addr(1)
    for args, want in ((["9", "http://x", good], "PEER_ADDR http://x: not tls+tcp://HOST:PORT"),
                       (["9", good, "tls+tcp://h:0"],
                        "CLIENT_ADDR tls+tcp://h:0: not tls+tcp://HOST:PORT"),
                       (["9", "tls+tcp://" + "h" * 100 + ":1", good], "longer than 96"),
                       (["9", "tls+tcp://::1:9111", good],
                        "an IPv6 address goes in brackets: tls+tcp://[::1]:9111")):
        r = e.run("members", "add", *args)
        check(r.returncode == 64 and want in r.stderr and "already a member" not in r.stderr,
              "members add %s: exit 64 saying %r (%s)" % (" ".join(args)[:40], want,
                                                         r.stderr.strip()))


def test_members_list(e):
    """`members list` is the membership, not status's table: a header, then
    one line per member with its id, role, whether it leads (the one the
    nodes name) and its client and peer addresses; no term, commit,
    applied or last index columns. --json stays status's objects, whose
    members carry their addresses too."""
    r = e.run("members", "list")
    lines = r.stdout.splitlines()
    rows = {}
    for line in lines[1:]:
        f = line.split()
        if len(f) == 5 and f[0].isdigit():
            rows[int(f[0])] = f[1:]
    st = [row for row in json_lines(e.run("members", "list", "--json").stdout)
          if isinstance(row, dict)]
    leader = st[0].get("leader", 0) if st else 0
    peer = {i: "tls+tcp://127.0.0.1:%d" % e.c.peer_port[i] for i in e.c.peer_port}
    check(r.returncode == 0 and lines[:1] and lines[0].split() ==
          ["ID", "ROLE", "LEADER", "CLIENT_ADDR", "PEER_ADDR"] and
          sorted(rows) == [1, 2, 3] and leader in rows and
          all(rows[i] == ["voter", "yes" if i == leader else "no", e.c.addr(i), peer[i]]
              for i in rows) and
          not re.search(r"term|commit|applied|last|sessions", r.stdout),
          "members list: each member's id, role, leader or not, client and peer address, "
          "nothing of status's table (%r)" % r.stdout)
    check(len(st) == 3 and all("members" in row and "commit" in row for row in st),
          "members list --json: status's object per endpoint, as before (%r)" % st)
    check(len(st) == 3 and all(sorted((m["node"], m.get("client_addr"), m.get("peer_addr"))
                                      for m in row["members"]) ==
                               [(i, e.c.addr(i), peer[i]) for i in (1, 2, 3)] for row in st),
          "members list --json: each member's client and peer address, as the table shows "
          "(%r)" % st)
    # An endpoint longer than the 28-column default (a host name, say):
    # status's lines stay in line, the long endpoint's "unreachable" too.
    far = "tls+tcp://a-long-host-name-nobody-has.invalid:4000"
    eps = ",".join(e.c.addr(i) for i in (1, 2, 3)) + "," + far
    lines = e.run("--endpoints", eps, "status", timeout=30).stdout.splitlines()[:4]
    check(len(lines) == 4 and len(second_columns(lines)) == 1 and lines[3].startswith(far),
          "status: an endpoint of %d characters keeps the columns in line (%r)"
          % (len(far), lines))


def test_member_unknown(e):
    """`members remove` and `members promote` of an id no member has: exit 1
    naming the id as no member's and where to look, not a bare "not found"
    that left a newcomer to guess what was not found."""
    for cmd in ("remove", "promote"):
        r = e.run("members", cmd, "99")
        check(r.returncode == 1 and "node 99 is not a member" in r.stderr and
              "members list" in r.stderr,
              "members %s 99: exit 1, says node 99 is not a member (rc %d, %r)"
              % (cmd, r.returncode, r.stderr.strip()))


def test_refused_identity(e):
    """A refusal at the connection is said as such, not blamed on an [acl]
    this cluster does not have: `snapshot save` with a node's certificate
    said "needs the admin operation in the server's [acl]"; with no client
    certificate at all every command says how to give one (the library's
    words name its own cert_key_file, not --cert)."""
    f = e.path("refused.snap")
    r = e.run("--cert", os.path.join(e.c.certs, "node1.pem"), "snapshot", "save", f)
    check(r.returncode == 77 and "refused our identity" in r.stderr and "[acl]" not in r.stderr
          and not os.path.exists(f),
          "snapshot save with a node's certificate: exit 77, the identity refused, no "
          "[acl] blamed (rc %d, %r)" % (r.returncode, r.stderr.strip()))
    conf = e.path("nocert.conf")
    with open(conf, "w") as fh:
        fh.write("[client]\nendpoints = %s\nca_file = %s\n"
                 % (e.env["EDGELOCK_ENDPOINTS"], e.env["EDGELOCK_CA"]))
    env = {k: v for k, v in e.env.items() if not k.startswith("EDGELOCK_")}
    for cmd in (["status"], ["locks"], ["lock", "x", "--", "true"], ["snapshot", "save", f],
                ["transfer-leader"]):
        r = subprocess.run([CLI, "--config", conf] + cmd, env=env, capture_output=True,
                           text=True, timeout=60)
        check(r.returncode == 77 and "--cert" in r.stderr and "[acl]" not in r.stderr,
              "%s without a client certificate: exit 77, says to give --cert (rc %d, %r)"
              % (" ".join(cmd), r.returncode, r.stderr.strip()[-300:]))


def second_columns(lines):
    """Where the second field starts in each line (a set: one value when
    the lines are in line)."""
    return {m.end() - 1 for m in (re.match(r"\S+ +\S", line) for line in lines) if m}


def test_node_id_max(e):
    """Node ids run to 4294967295 in the daemon's config, and the CLI takes
    them as far (it stopped at 4294967294): a learner 4294967295 is added,
    `transfer-leader 4294967295` reaches the leader (which refuses a
    learner: exit 1, not a usage error), and it is removed again. While it
    is a member, `members list` and `status` keep their columns in line
    with a 10-digit id. 4294967296 is still a usage error."""
    big, nowhere = "4294967295", ["tls+tcp://127.0.0.1:1", "tls+tcp://127.0.0.1:2"]
    r = e.run("members", "add", big, *nowhere, "--learner")
    check(r.returncode == 0, "members add %s --learner: exit %d (%s)"
          % (big, r.returncode, r.stderr.strip()))
    seen = {}

    def in_line():
        table = e.run("members", "list").stdout.splitlines()
        seen["list"] = [line for line in table if not line.startswith("(")]
        seen["status"] = [line for line in e.run("status").stdout.splitlines()
                          if line.startswith("tls+tcp://")]
        return (any(line.startswith(big + " ") for line in seen["list"]) and
                len(second_columns(seen["list"])) == 1 and len(seen["status"]) == 3 and
                all(len({re.search(w, line).start() for line in seen["status"]}) == 1
                    for w in (r" term \d", r" leader \d", r" commit \d")))

    check(eventually(in_line), "a member %s: members list and status columns in line (%r)"
          % (big, seen))
    r = e.run("transfer-leader", big)
    check(r.returncode == 1, "transfer-leader %s: asked the leader, which refuses a learner "
          "(exit %d, want 1: %s)" % (big, r.returncode, r.stderr.strip()))
    check(eventually(lambda: e.run("members", "remove", big).returncode == 0) and
          eventually(lambda: cli_members(e.c, e) and int(big) not in cli_members(e.c, e)),
          "members remove %s: gone again" % big)
    r = e.run("members", "promote", "4294967296")
    check(r.returncode == 64 and "1 to 4294967295, not 4294967296" in r.stderr,
          "members promote 4294967296: exit 64 naming the range (%s)" % r.stderr.strip())


def test_wrong_ca(e):
    """Every endpoint's certificate fails the check against --ca (a CA of
    another cluster): exit 78 (a bad CA file) with a line saying to check
    it, from `status` and `members list` (which ask each endpoint) as from
    a request that follows the leader (`locks`), not 69 (no leader) or 77."""
    other = os.path.join(e.tmp, "other-ca")
    subprocess.run([os.path.join(os.path.dirname(__file__), "..", "..", "tools", "dev-certs.sh"),
                    other, "1"], check=True, capture_output=True)
    env = {k: v for k, v in e.env.items() if k not in ("EDGELOCK_CA", "EDGELOCK_CERT")}
    env.update(EDGELOCK_CONFIG="")
    for args in (["status"], ["members", "list"], ["locks"], ["transfer-leader", "1"]):
        r = subprocess.run([CLI, "--ca", os.path.join(other, "ca.pem"), "--timeout", "5s"]
                           + args, env=env, capture_output=True, text=True, timeout=60)
        check(r.returncode == 78 and "is the cluster's CA" in r.stderr and
              os.path.join(other, "ca.pem") in r.stderr,
              "%s with the wrong --ca: exit %d (want 78), saying to check it (%s)"
              % (" ".join(args), r.returncode, r.stderr.strip()[-300:]))
    # With a client certificate (of the real CA) the CLI refuses it at load,
    # before any endpoint is asked: that line blamed the certificate alone.
    # (Without one given, a checkout where `make run` wrote
    # build/edgelock.conf gave the loop above that certificate, and it failed.)
    r = subprocess.run([CLI, "--ca", os.path.join(other, "ca.pem"), "--cert",
                        e.env["EDGELOCK_CERT"], "status"], env=env, capture_output=True,
                       text=True, timeout=60)
    check(r.returncode == 78 and "is the cluster's CA" in r.stderr and
          os.path.join(other, "ca.pem") + " (from --ca)" in r.stderr,
          "status with the wrong --ca and a client certificate: exit %d (want 78), saying to "
          "check the CA, from --ca (%s)" % (r.returncode, r.stderr.strip()[-300:]))


def test_peer_port(e):
    """A client pointed at a node's peer port: TLS passes there (any
    certificate of the CA), then the node closes the connection for the
    client certificate. The CLI waited its whole --timeout (12 s) and said
    "TLS handshake: no answer in time" (an outside tester); it now ends at
    once saying what happened, for `lock` (exit 69, CMD not run), as for
    `status`; with a client port among the endpoints it goes there."""
    peer = "tls+tcp://127.0.0.1:%d" % e.c.peer_port[1]
    want = "closed by the node right after the TLS handshake (is this its peer port? " \
        "clients use client_addr)"
    for args in (["lock", "peer-port", "--", "touch", e.path("peer-port-ran")], ["status"]):
        t0 = time.time()
        r = e.run("--timeout", "12s", "--endpoints", peer, *args)
        took = time.time() - t0
        check(r.returncode == 69 and took < 3.0 and want in r.stderr + r.stdout and
              not os.path.exists(e.path("peer-port-ran")),
              "%s on a peer port: exit %d (want 69) after %.2f s of a 12 s timeout, saying "
              "so (%s)" % (args[0], r.returncode, took, (r.stderr + r.stdout).strip()[-300:]))
    r = e.run("--timeout", "12s", "--endpoints", peer + "," + e.c.addr(1), "lock", "peer-port",
              "--", "true")
    check(r.returncode == 0, "lock with a peer port and a client port: the client port serves "
          "it (exit %d, %s)" % (r.returncode, r.stderr.strip()[-300:]))


def newer_daemon(certs, seen):
    """A fake node on loopback (TLS with node1's certificate, its own
    CHALLENGE) that answers every request with a reply of client protocol
    version 2: the id decodes, the body does not (EL_EVERSION). Counts in
    seen the connections and requests it got."""
    import socket
    import ssl
    import struct
    import threading
    import cbor2
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(os.path.join(certs, "node1.pem"))
    ctx.load_verify_locations(os.path.join(certs, "ca.pem"))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    srv.settimeout(0.2)

    def send(sock, msg):
        body = cbor2.dumps(msg, canonical=True)
        sock.sendall(struct.pack(">I", len(body)) + body)

    def serve_one(raw):
        try:
            tls = ctx.wrap_socket(raw, server_side=True)
            tls.settimeout(10)
            send(tls, {0: 1, 1: 1, 2: os.urandom(32), 3: "node1"})  # CHALLENGE
            read_frame(tls)  # the PROOF
            while True:
                req = cbor2.loads(read_frame(tls))
                seen["requests"] += 1
                send(tls, {0: 2, 1: 129, 2: req[2]})  # version 2: EL_EVERSION
        except (OSError, EOFError, ssl.SSLError, struct.error, KeyError):
            pass

    def serve():
        while not seen["stop"]:
            try:
                raw, _ = srv.accept()
            except socket.timeout:
                continue
            seen["accepted"] += 1
            threading.Thread(target=serve_one, args=(raw,), daemon=True).start()
    seen.update(accepted=0, requests=0, stop=False)
    t = threading.Thread(target=serve, daemon=True)
    t.start()
    return srv, t


def test_undecodable_reply(e):
    """A reply whose id decodes but whose body does not (a daemon of a newer
    client protocol) ends the call at once with that error, saying so. The
    library dropped it: each try timed out after 1.5 s and the connection
    was torn down and redialed until the call's timeout."""
    seen = {}
    srv, t = newer_daemon(e.c.certs, seen)
    t0 = time.time()
    r = e.run("--timeout", "6s", "--endpoints", "tls+tcp://127.0.0.1:%d" % srv.getsockname()[1],
              "lock", "undecodable", "--", "true")
    took = time.time() - t0
    seen["stop"] = True
    t.join(5)
    srv.close()
    out = (r.stderr + r.stdout).strip()
    check(r.returncode != 0 and took < 3.0 and seen["accepted"] == 1 and
          seen["requests"] == 1 and "does not decode" in out,
          "a reply that does not decode ends the call at once: exit %d after %.2f s of a 6 s "
          "timeout, %d connections, %d requests (want 1, 1), saying so (%s)"
          % (r.returncode, took, seen["accepted"], seen["requests"], out[-300:]))


def test_open_key_warned(e):
    """A client key file every user may read is used, with a warning on
    stderr saying the chmod (edgelockd refuses its own such key); a 0600
    one gets none."""
    key = os.path.join(e.tmp, "open-client.pem")
    with open(os.path.join(e.c.certs, "client.pem")) as f, open(key, "w") as g:
        g.write(f.read())
    os.chmod(key, 0o644)
    r = e.run("--cert", key, "locks")
    check(r.returncode == 0 and "edgelock: warning: %s holds this client's private key and "
          "every user may read it (mode 0644): chmod 600 it" % key in r.stderr,
          "a client key every user may read: used, with a warning (%s)" % r.stderr.strip())
    r = e.run("locks")
    check(r.returncode == 0 and "warning" not in r.stderr,
          "a 0600 client key: no warning (%s)" % r.stderr.strip())


def test_args_after_command(e):
    """Global options after the command count as before it: status with an
    endpoint nothing listens on (and a short --timeout) finds no leader (69)
    instead of asking the cluster of the environment. Anything else the
    command does not take is a usage error (64) naming it; a command's own
    option before the command too, saying which command takes it and how
    to write it after the command."""
    r = e.run("status", "--endpoints", "tls+tcp://127.0.0.1:1", "--timeout", "1s")
    check(r.returncode == 69 and "127.0.0.1:1" in r.stdout,
          "status --endpoints X (after the command) asks X: exit %d %r"
          % (r.returncode, r.stdout.strip()))
    r = e.run("locks", "--json", "--timeout", "5s")
    check(r.returncode == 0 and None not in json_lines(r.stdout),
          "locks --json --timeout 5s: global options after the command (exit %d)" % r.returncode)
    for args, bad in ((["status", "--bogus"], "--bogus"), (["locks", "extra", "args"], "extra"),
                      (["observe", "x", "y"], "y"), (["lock", "x", "--frob", "--", "true"], "--frob")):
        r = e.run(*args)
        check(r.returncode == 64 and bad in r.stderr and "--help" in r.stderr,
              "%s: exit %d (want 64), naming %s (%s)"
              % (" ".join(args), r.returncode, bad, r.stderr.strip()))
    # a command's own option before the command (as etcdctl's and consul's
    # global flags go): still 64, but saying whose it is and where it goes
    # (the old CLI said "unknown option --ttl" alone)
    for args, whose, fix in ((["--ttl", "5", "lock", "x", "--", "true"], "`lock` and `elect`",
                              "edgelock lock --ttl 5 ..."),
                             (["--wait=2s", "elect", "x", "v"], "`lock` and `elect`",
                              "edgelock elect --wait=2s ..."),
                             (["-n", "2", "lock", "x", "--", "true"], "`lock`", "edgelock lock -n 2 ..."),
                             (["--learner", "members", "add", "4", "a", "b"], "`members add`",
                              "edgelock members add --learner ...")):
        r = e.run(*args)
        opt = args[0].split("=")[0]
        check(r.returncode == 64 and ("%s is an option of %s" % (opt, whose)) in r.stderr and
              fix in r.stderr and "--endpoints" in r.stderr,
              "%s: exit %d (want 64), says %s takes it and to write %s (%s)"
              % (" ".join(args), r.returncode, whose, fix, r.stderr.strip()))


def test_fifo_handoff(e):
    log = e.path("fifo.log")
    first = e.start("lock", "fifo", "--", *log_cmd(log, "A", 1.5))
    time.sleep(0.7)
    waiters = []
    for tag in "BCD":
        waiters.append(e.start("lock", "fifo", "--", *log_cmd(log, tag, 0.2)))
        time.sleep(0.3)
    rcs = [p.wait(timeout=60) for p in [first] + waiters]
    rows = read_log(log)
    starts = [r for r in rows if r[0] == "start"]
    order = "".join(r[1] for r in starts)
    tokens = [r[2] for r in starts]
    overlap = any(rows[i][0] == "start" and rows[i + 1][0] == "start" for i in range(len(rows) - 1))
    check(rcs == [0, 0, 0, 0] and order == "ABCD", "FIFO handoff: granted in arrival order (%s)" % order)
    check(tokens == sorted(tokens) and len(set(tokens)) == 4, "tokens rise with each grant %s" % tokens)
    check(not overlap, "no two holders of the exclusive lock at once")


def test_shared(e):
    log = e.path("shared.log")
    ps = [e.start("lock", "sh", "--shared", "--", *log_cmd(log, t, 1.0)) for t in "XY"]
    rcs = [p.wait(timeout=60) for p in ps]
    rows = read_log(log)
    check(rcs == [0, 0] and [r[0] for r in rows[:2]] == ["start", "start"],
          "two shared holders hold the lock at once")


def test_counter(e):
    path = e.path("counter")
    with open(path, "w") as f:
        f.write("0\n")
    script = 'n=$(cat %s); sleep 0.05; echo $((n + 1)) > %s' % (path, path)
    ps = [e.start("lock", "counter", "--", "sh", "-c", script) for _ in range(8)]
    rcs = [p.wait(timeout=120) for p in ps]
    with open(path) as f:
        value = int(f.read())
    check(rcs == [0] * 8 and value == 8, "8 concurrent `edgelock lock` increments: counter = %d" % value)


def test_election_observe(e):
    obs = e.start("observe", "job")
    time.sleep(1.0)
    r = e.run("elect", "job", "node-a", "--", "sleep", "1")
    time.sleep(1.0)
    obs.send_signal(signal.SIGINT)
    out, _ = obs.communicate(timeout=20)
    check(r.returncode == 0 and "value node-a" in out and out.strip().endswith("free"),
          "elect with a value; observe printed the leader, its value, then free")


def waiters_of(e, name):
    """name's waiters as `locks --json` lists them (None: not listed)."""
    for line in e.run("locks", "--json").stdout.splitlines():
        lock = json.loads(line)
        if lock["name"] == name:
            return lock["waiters"]
    return None


def test_signal_while_waiting(e):
    """SIGINT to `lock`, SIGTERM to `elect`, while each waits behind a holder:
    the wait ends at once, the queued request is dropped on the cluster, the
    CLI exits 128 + the signal, and CMD never runs (not even once the holder
    lets go)."""
    for sig, verb in ((signal.SIGINT, "lock"), (signal.SIGTERM, "elect")):
        name = "intr-" + verb
        stop, marker = e.path(name + ".stop"), e.path(name + ".ran")
        args = [name] if verb == "lock" else [name, "v"]
        holder = e.start(verb, *args, "--", "sh", "-c",
                         "while [ ! -e %s ]; do sleep 0.1; done" % stop)
        eventually(lambda: waiters_of(e, name) == 0)
        waiter = e.start(verb, *args, "--", "touch", marker)
        queued = eventually(lambda: waiters_of(e, name) == 1)
        waiter.send_signal(sig)
        try:
            rc = waiter.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None  # the old CLI waited on
        dropped = eventually(lambda: waiters_of(e, name) == 0, 5.0)
        open(stop, "w").close()
        holder.wait(timeout=30)
        if rc is None:
            waiter.wait(timeout=30)
        time.sleep(0.5)
        check(queued and rc == 128 + sig and dropped and not os.path.exists(marker),
              "%s while `%s` waits: exit %s (want %d), wait dropped %s, CMD not run %s (%s)"
              % (sig.name, verb, rc, 128 + sig, dropped, not os.path.exists(marker),
                 waiter.stderr.read().strip()))


class RecordHoldRelay:
    """A TCP relay from 127.0.0.1 to one daemon's client port for one
    connection. It passes the client's first `passed` TLS application-data
    records (a TLS record: type, version, 2-byte length, body), then holds
    everything the client sends (held is set) until release() is called.
    The daemon's side always passes."""

    def __init__(self, port, passed):
        import socket
        import threading
        self.up, self.passed = port, passed
        self.held, self.released = threading.Event(), threading.Event()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(1)
        self.ls.settimeout(30)
        self.port = self.ls.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def release(self):
        self.released.set()

    def _serve(self):
        import select
        import socket
        try:
            client, _ = self.ls.accept()
        except OSError:
            return
        daemon = socket.create_connection(("127.0.0.1", self.up))
        pending, apps = b"", 0
        try:
            while True:
                ready, _, _ = select.select([client, daemon], [], [], 0.05)
                if daemon in ready:
                    data = daemon.recv(65536)
                    if not data:
                        return
                    client.sendall(data)
                if client in ready:
                    data = client.recv(65536)
                    if not data:
                        return
                    pending += data
                while not self.held.is_set() and len(pending) >= 5:
                    n = 5 + int.from_bytes(pending[3:5], "big")
                    if len(pending) < n:
                        break
                    if pending[0] == 0x17 and apps == self.passed:
                        self.held.set()
                        break
                    apps += pending[0] == 0x17
                    daemon.sendall(pending[:n])
                    pending = pending[n:]
                if self.released.is_set() and pending:
                    daemon.sendall(pending)
                    pending = b""
        except OSError:
            return
        finally:
            client.close()
            daemon.close()
            self.ls.close()


def test_signal_during_holder_query(cluster, e):
    """A refused `lock` asks who holds the lock, bounded by --timeout alone.
    A SIGINT while that question is out (held back here by a relay, as by
    a cluster gone silent) ends the CLI: exit 130, the refusal said, no
    holder line, CMD not run. The old CLI waited for the answer (up to
    --timeout, 1193h at most) and exited 75 once it came. The CLI's
    records on its connection: its hello, OPEN, ACQUIRE (--wait 0: refused
    at once), then the holder query, which the relay holds."""
    name = "intr-query"
    stop, marker = e.path(name + ".stop"), e.path(name + ".ran")
    holder = e.start("lock", name, "--", "sh", "-c", "while [ ! -e %s ]; do sleep 0.1; done"
                     % stop)
    eventually(lambda: waiters_of(e, name) == 0)
    relay = RecordHoldRelay(cluster.client_port[cluster.wait_leader()], passed=3)
    waiter = subprocess.Popen([CLI, "--endpoints", "tls+tcp://127.0.0.1:%d" % relay.port,
                               "--timeout", "60s", "lock", name, "--wait", "0", "--",
                               "touch", marker], env=e.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    held = relay.held.wait(20.0)
    time.sleep(0.3)
    waiter.send_signal(signal.SIGINT)
    time.sleep(0.5)
    relay.release()  # the query's answer would come now; the close goes through
    try:
        _, err = waiter.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        waiter.kill()
        _, err = waiter.communicate()
    relay.thread.join(timeout=5)
    open(stop, "w").close()
    holder.wait(timeout=30)
    check(held and waiter.returncode == 130 and "is held by" not in err and
          "lock %s: busy" % name in err and "Interrupt" in err and not os.path.exists(marker),
          "SIGINT while a refused `lock` asks who holds the lock: exit %s (want 130), the "
          "refusal said, no holder line, CMD not run (%s)" % (waiter.returncode, err.strip()))


def catches(pid, sig):
    """Has process pid a handler for sig (SigCgt of /proc/PID/status)?"""
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    except OSError:
        pass
    return False


def test_signal_while_opening():
    """SIGTERM, SIGINT, SIGHUP while `lock`/`elect` opens its session towards
    an endpoint nobody listens on (bound, not listening: refused, retried
    until --timeout): the CLI exits 128 + the signal at once and CMD never
    runs. The old CLI caught the signal and went on opening until --timeout
    (with 1193h, for good). No sleep: the signal goes once the CLI's
    handler is in place (SigCgt), right before the open."""
    import socket
    tmp = tempfile.mkdtemp(prefix="cli-open-")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    ep = "tls+tcp://127.0.0.1:%d" % sock.getsockname()[1]
    try:
        for sig, verb in ((signal.SIGTERM, "lock"), (signal.SIGINT, "elect"),
                          (signal.SIGHUP, "lock")):
            marker = os.path.join(tmp, "ran")
            args = ["x"] if verb == "lock" else ["x", "v"]
            p = subprocess.Popen([CLI, "--endpoints", ep, "--ca",
                                  os.path.join(BUILD, "certs", "ca.pem"), verb] + args +
                                 ["--timeout", "1193h", "--", "touch", marker],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 start_new_session=True)
            eventually(lambda: catches(p.pid, sig) or p.poll() is not None, 10.0)
            t0 = time.time()
            p.send_signal(sig)
            try:
                rc = p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                p.kill()
                rc = None
            took = time.time() - t0
            err = p.communicate(timeout=10)[1]
            check(rc == 128 + sig and took < 3 and not os.path.exists(marker),
                  "%s while `%s` opens its session (nobody listens): exit %s (want %d) after "
                  "%.1f s, CMD not run (%s)" % (sig.name, verb, rc, 128 + sig, took, err.strip()))
    finally:
        sock.close()
        shutil.rmtree(tmp, ignore_errors=True)


def closed_pipe():
    """The write end of a pipe whose read end is closed (its reader gone)."""
    r, w = os.pipe()
    os.close(r)
    return w


def test_closed_stdout(e):
    """stdout a pipe whose reader has gone (`edgelock status | head -0`):
    the read commands exit 74, 'writing the output: Broken pipe', not 141
    (killed by SIGPIPE). elect wins and runs CMD, which gets SIGPIPE's
    default back (its echo dies of it: 141, its status), and leadership is
    given back (the old CLI died of SIGPIPE writing 'elected', CMD never
    ran, and the dead session held the election for its TTL)."""
    stop = e.path("pipe-held.stop")
    holder = e.start("lock", "pipe-held", "--", "sh", "-c",
                     "while [ ! -e %s ]; do sleep 0.1; done" % stop)
    eventually(lambda: waiters_of(e, "pipe-held") == 0)  # listed: locks has a line
    for args in (["status"], ["status", "--json"], ["locks"], ["locks", "--json"],
                 ["members", "list"]):
        w = closed_pipe()
        try:
            r = subprocess.run([CLI] + args, env=e.env, stdout=w, stderr=subprocess.PIPE,
                               text=True, timeout=60)
        finally:
            os.close(w)
        check(r.returncode == 74 and "writing the output: Broken pipe" in r.stderr,
              "%s | (reader gone): exit %d (want 74), saying why (%s)"
              % (" ".join(args), r.returncode, r.stderr.strip()))
    open(stop, "w").close()
    holder.wait(timeout=30)
    marker = e.path("pipe-elect.ran")
    w = closed_pipe()
    try:
        r = subprocess.run([CLI, "elect", "pipe-elect", "v", "--", "sh", "-c",
                            "touch %s; echo data; touch %s.after" % (marker, marker)],
                           env=e.env, stdout=w, stderr=subprocess.PIPE, text=True, timeout=60)
    finally:
        os.close(w)
    again = e.run("elect", "pipe-elect", "w", "--wait", "0", "--", "true")
    check(r.returncode == 141 and os.path.exists(marker) and
          not os.path.exists(marker + ".after") and again.returncode == 0,
          "elect with stdout a closed pipe: CMD ran, died of SIGPIPE (exit %d, want 141), "
          "leadership given back (next elect: %d) (%s)"
          % (r.returncode, again.returncode, r.stderr.strip()))


def test_signal_while_unreachable(cluster, e):
    """SIGTERM to a waiting `lock` while every daemon is stopped: the close
    cannot reach the cluster, so the CLI gives up after --timeout rather
    than wait out its session's lease, exits 143, and CMD never runs."""
    name = "intr-down"
    stop, marker = e.path(name + ".stop"), e.path(name + ".ran")
    holder = e.start("lock", name, "--", "sh", "-c",
                     "while [ ! -e %s ]; do sleep 0.1; done" % stop)
    eventually(lambda: waiters_of(e, name) == 0)
    waiter = e.start("lock", name, "--timeout", "1s", "--ttl", "20s", "--", "touch", marker)
    queued = eventually(lambda: waiters_of(e, name) == 1)
    for i in list(cluster.procs):
        cluster.signal(i, signal.SIGSTOP)
    t0 = time.time()
    waiter.send_signal(signal.SIGTERM)
    try:
        rc = waiter.wait(timeout=8)
    except subprocess.TimeoutExpired:
        rc = None  # the old CLI waited for the lease (20 s)
    took = time.time() - t0
    for i in list(cluster.procs):
        cluster.signal(i, signal.SIGCONT)
    cluster.wait_leader()
    open(stop, "w").close()
    holder.wait(timeout=30)
    if rc is None:
        waiter.wait(timeout=40)
    time.sleep(0.5)
    check(queued and rc == 143 and not os.path.exists(marker),
          "SIGTERM while `lock` waits and no daemon answers: exit %s after %.1f s (want 143 "
          "within --timeout and a little), CMD not run %s (%s)"
          % (rc, took, not os.path.exists(marker), waiter.stderr.read().strip()))


def test_observe_unreachable(cluster, e):
    """observe while every daemon is stopped: a query that fails is an error,
    not "free", and once its session's lease runs out observe exits 69 (no
    leader reachable)."""
    obs = e.start("observe", "watched")
    time.sleep(1.5)
    for i in list(cluster.procs):
        cluster.signal(i, signal.SIGSTOP)
    try:
        rc = obs.wait(timeout=40)
    except subprocess.TimeoutExpired:
        rc = None
    finally:
        for i in list(cluster.procs):
            cluster.signal(i, signal.SIGCONT)
    if rc is None:
        obs.kill()
    out, err = obs.communicate(timeout=20)
    states = [x for x in out.splitlines() if "connection to the leader lost" not in x]
    check(rc == 69 and states == ["watched: free"] and "no leader reachable" in err,
          "observe with the cluster stopped: exit %s (want 69), no state made up %r (%s)"
          % (rc, out, err.strip()))
    cluster.wait_leader()


def status_of(e, node):
    """node's own `status --json` object (None when it does not answer)."""
    for row in json_lines(e.run("status", "--json").stdout):
        if row.get("node") == node:
            return row
    return None


def reachable_seen(e, leader, node):
    row = status_of(e, leader)
    if row is None or row["role"] != "leader":
        return None
    return [m["reachable"] for m in row["members"] if m["node"] == node][0]


def test_status_silent_peer(cluster, e):
    """A follower SIGSTOPped keeps its TCP link up, but the leader hears
    nothing from it: after an election timeout the leader's `status` shows
    it unreachable (it said reachable as long as the link lived), and
    reachable again once it answers."""
    leader = cluster.wait_leader()
    other = [i for i in sorted(cluster.procs) if i != leader][0]
    before = reachable_seen(e, leader, other)
    cluster.signal(other, signal.SIGSTOP)
    try:
        cut = eventually(lambda: reachable_seen(e, leader, other) is False, timeout=10)
    finally:
        cluster.signal(other, signal.SIGCONT)
    back = eventually(lambda: reachable_seen(e, leader, other) is True, timeout=15)
    check(before is True and cut and back,
          "status on the leader: a stopped follower is unreachable while stopped (%s), "
          "reachable before (%s) and after (%s)" % (cut, before, back))


def test_transfer_silent(cluster, e):
    """transfer-leader to a follower the leader has not heard from for an
    election timeout (SIGSTOPped) is refused, exit 1, saying so, and the
    leader stays; it was accepted, held new writes for the transfer's
    timeout and cost elections when the node woke (an outside tester)."""
    leader = cluster.wait_leader()
    other = [i for i in sorted(cluster.procs) if i != leader][0]
    cluster.signal(other, signal.SIGSTOP)
    try:
        cut = eventually(lambda: reachable_seen(e, leader, other) is False, timeout=10)
        r = e.run("transfer-leader", str(other), timeout=30)
    finally:
        cluster.signal(other, signal.SIGCONT)
    time.sleep(1.5)  # a TimeoutNow left queued to it would have woken it into a campaign
    check(cut and r.returncode == 1 and "has not heard from that node" in r.stderr and
          cluster.wait_leader() == leader,
          "transfer-leader to a stopped follower: refused, exit 1, the leader kept (%d %s)"
          % (r.returncode, (r.stdout + r.stderr).strip()))
    eventually(lambda: reachable_seen(e, leader, other) is True, timeout=15)


def test_stopped_first_endpoint(cluster, e):
    """A follower SIGSTOPped accepts TCP (the kernel does) but never
    finishes TLS. A new client that lists it first must still reach the
    leader within a short --timeout: each dial gets a share of what is left
    of the call, not a whole bound of its own (it used to spend 2 s on the
    stopped node and give up with a timeout of 1.5 s)."""
    leader = cluster.wait_leader()
    other = [i for i in sorted(cluster.procs) if i != leader][0]
    eps = [cluster.addr(other)] + [cluster.addr(i) for i in sorted(cluster.client_port)
                                   if i != other]
    env = dict(e.env, EDGELOCK_ENDPOINTS=",".join(eps))
    cluster.signal(other, signal.SIGSTOP)
    try:
        runs = [subprocess.run([CLI, "--timeout", "1500ms", "lock", "stopped-first", "--",
                                "true"], env=env, capture_output=True, text=True, timeout=30)
                for _ in range(3)]
    finally:
        cluster.signal(other, signal.SIGCONT)
    bad = [(r.returncode, r.stderr.strip()) for r in runs if r.returncode != 0]
    check(not bad, "a new client whose first endpoint is a stopped follower reaches the "
          "leader within --timeout 1500ms (3 runs): %s" % (bad or "all ok"))


def test_no_quorum(cluster, e):
    """Two of three daemons killed: no leader can be elected. A call gives up
    at its timeout with one line saying no leader was reachable and naming
    every endpoint tried (all three: two refuse, one is not the leader), and
    the CLI exits 69; libedgelock returns EL_ETIMEDOUT, never EL_ENOTLEADER
    (client_safety.c, no-quorum)."""
    dead = [i for i in sorted(cluster.procs)][:2]
    for i in dead:
        cluster.kill(i)
    alone = [i for i in sorted(cluster.procs)][0]
    try:
        # a leader left alone steps down within an election timeout (CheckQuorum)
        eventually(lambda: (status_of(e, alone) or {}).get("role") not in (None, "leader"))
        t0 = time.time()
        out = e.run("--timeout", "3s", "locks")
        took = time.time() - t0
        err = out.stderr.strip()
        named = all(cluster.addr(i) in err for i in cluster.client_port)
        # the survivor answers "not the leader", unless its handshake (TLS, or
        # the identity challenge after it) outlasts the 3 s under load:
        # either way it is named with its error;
        # the words do not claim there is no quorum (a node cut off from a
        # leader that has one says the same)
        knows_none = "not the leader (it knows no leader: no quorum, or it cannot reach the leader)"
        check(out.returncode == 69 and "no leader reachable within" in err and named and
              (knows_none in err or "no answer in time" in err or
               "no challenge in time" in err) and "\n" not in err and
              took < 8,
              "no quorum: locks exits 69 after %.1f s, one line naming every endpoint: %s"
              % (took, err))
        lk = e.run("--timeout", "2s", "lock", "nq", "--", "true")
        check(lk.returncode == 69 and "no leader reachable" in lk.stderr,
              "no quorum: lock exits 69 (%s)" % lk.stderr.strip())
        tr = e.run("--timeout", "2s", "transfer-leader")
        check(tr.returncode == 69 and "no leader reachable" in tr.stderr,
              "no quorum: transfer-leader exits 69, no leader reachable, not 1 'not found' "
              "(%d: %s)" % (tr.returncode, tr.stderr.strip()))
        r = subprocess.run([os.path.join(BUILD, "bin", "client-safety-test"), "no-quorum"],
                           env=e.env, capture_output=True, text=True, timeout=120)
        check(r.returncode == 0, "no quorum: libedgelock returns EL_ETIMEDOUT naming the "
              "endpoints: %s %s" % (r.stdout.strip(), r.stderr[-600:]))
    finally:
        for i in dead:
            cluster.start(i)
        cluster.wait_leader()


def merged_through_pipe(e, *args):
    """The lines of `edgelock ARGS 2>&1 | cat`: stdout and stderr on one
    pipe, in the order they reached it."""
    r = subprocess.run(["sh", "-c", '"$@" 2>&1 | cat', "sh", CLI] + list(args), env=e.env,
                       stdout=subprocess.PIPE, text=True, timeout=60)
    return r.stdout.splitlines()


def test_status_no_leader(cluster, e):
    """status is a health check: with two of three daemons SIGSTOPped the
    survivor answers (it says what it is) but no node is or knows the
    leader: exit 69 with a line saying so, as `locks` exits 69 then; 0
    again once they are resumed. Through `2>&1 | cat`, status's and
    members list's lines come in the order written: that line last."""
    cluster.wait_leader()
    stopped = sorted(cluster.procs)[:2]
    alone = sorted(cluster.procs)[2]
    for i in stopped:
        cluster.signal(i, signal.SIGSTOP)
    try:
        # the survivor loses its leader (or, leading, steps down: CheckQuorum)
        eventually(lambda: (status_of(e, alone) or {}).get("leader", -1) == 0, timeout=15)
        r = e.run("--timeout", "2s", "status")
        piped = [merged_through_pipe(e, "--timeout", "2s", cmd, *rest)
                 for cmd, *rest in (("status",), ("members", "list"))]
        w = closed_pipe()
        try:
            gone = subprocess.run([CLI, "--timeout", "2s", "status"], env=e.env, stdout=w,
                                  stderr=subprocess.PIPE, text=True, timeout=60)
        finally:
            os.close(w)

        def stopped_unreachable():
            row = status_of(e, alone) or {"members": []}
            seen = {m["node"]: m["reachable"] for m in row["members"]}
            return all(seen.get(i) is False for i in stopped) and seen.get(alone) is True
        # campaigning, it hears no answer from them (their links stay up)
        cut = eventually(stopped_unreachable, timeout=10)
    finally:
        for i in stopped:
            cluster.signal(i, signal.SIGCONT)
    check(r.returncode == 69 and "no leader" in r.stderr and
          re.search(r"node %d " % alone, r.stdout) is not None,
          "status with two of three daemons stopped: exit %d (want 69), each node's answer "
          "still printed (%r, %s)" % (r.returncode, r.stdout, r.stderr.strip()))
    # stdout lines first, then the "no leader" line on stderr, as written
    # (the old CLI's stdout, fully buffered on the pipe, came out at exit,
    # below its stderr)
    for what, lines, first in (("status", piped[0], r"node %d " % alone),
                               ("members list", piped[1], r"^ID +ROLE")):
        at = [i for i, ln in enumerate(lines) if re.search(first, ln)]
        late = [i for i, ln in enumerate(lines) if "no leader" in ln]
        check(at and late and at[0] < late[0],
              "%s 2>&1 | cat: stdout's lines before the stderr line written after them %r"
              % (what, lines))
    # stdout flushed before that line (and failing there): still "Broken pipe"
    check(gone.returncode == 69 and "writing the output: Broken pipe" in gone.stderr,
          "status with no leader, stdout a pipe whose reader is gone: exit %d (want 69), "
          "saying why (%s)" % (gone.returncode, gone.stderr.strip()))
    check(cut, "status on the node left alone (no leader): the stopped members are "
          "unreachable, itself reachable (%s)" % status_of(e, alone))
    cluster.wait_leader()
    ok = eventually(lambda: e.run("status").returncode == 0, timeout=15)
    check(ok, "status exits 0 again once a leader is back")


def test_status_leader_unanswered():
    """A cluster of its own, with a 4 s election timeout so the followers
    name a stopped leader long enough. The leader SIGSTOPped while its
    endpoint is asked: status exits 69 saying node L, the leader nodes A and
    B name, did not answer at its endpoint (it exited 0 on the followers'
    word: an outside tester); with the leader outside the endpoint list the
    followers' word still stands (exit 0). A follower removed with `members
    remove` still names the leader for five election timeouts: status says
    the leader's configuration does not list it and exits 1, not 0 showing
    it as a follower."""
    c = Cluster(BUILD, 3, tmp=os.path.join(BUILD, "tmp", "cli-unanswered-%d" % os.getpid()),
                election_ms=4000, heartbeat_ms=200)
    e = Env(c)
    try:
        c.start_all(bootstrap=True)
        leader = c.wait_leader()
        others = [i for i in sorted(c.procs) if i != leader]
        c.signal(leader, signal.SIGSTOP)
        try:
            time.sleep(0.3)
            r = e.run("--timeout", "1s", "status")
            rest = e.run("--timeout", "1s", "--endpoints",
                         ",".join(c.addr(i) for i in others), "status")
        finally:
            c.signal(leader, signal.SIGCONT)
        want = (r"node %d, the leader nodes %d and %d name, did not answer at %s: it is stopped, "
                r"paused or cut off" % (leader, others[0], others[1], re.escape(c.addr(leader))))
        check(r.returncode == 69 and re.search(want, r.stderr) is not None,
              "status with the leader stopped among the endpoints: exit %d (want 69), says it "
              "did not answer (%s)" % (r.returncode, r.stderr.strip()))
        check(rest.returncode == 0, "status with the stopped leader outside the endpoints: "
              "the followers' word stands, exit %d (%s)" % (rest.returncode, rest.stderr.strip()))
        leader = c.wait_leader()
        gone = [i for i in sorted(c.procs) if i != leader][0]
        rm = e.run("members", "remove", str(gone))
        time.sleep(1.0)  # applied and committed: the leader sends it nothing more
        st = status_of(e, gone) or {}
        r = e.run("status")
        check(rm.returncode == 0 and st.get("leader") == leader and r.returncode == 1 and
              ("node %d (%s) names node %d its leader, but node %d's configuration does not "
               "list it" % (gone, c.addr(gone), leader, leader)) in r.stderr,
              "status with a removed node still naming the leader: exit %d (want 1), says it "
              "is no follower (%s; %s)" % (r.returncode, st, r.stderr.strip()))
    finally:
        c.stop_all()


def test_output_full(e):
    """A command whose output cannot be written (stdout on /dev/full) fails
    with exit 74 and says so: an empty `locks --json` would otherwise pass
    for "no locks", and observe would run on, printing nowhere."""
    holder = e.start("lock", "full-out", "--", "sleep", "3")
    time.sleep(1.0)
    for args in (["locks", "--json"], ["status", "--json"], ["locks"], ["members", "list"]):
        with open("/dev/full", "w") as full:
            r = subprocess.run([CLI] + args, env=e.env, stdout=full, stderr=subprocess.PIPE,
                               text=True, timeout=60)
        check(r.returncode == 74 and "writing the output" in r.stderr,
              "%s > /dev/full: exit %d (want 74), saying why (%s)"
              % (" ".join(args), r.returncode, r.stderr.strip()))
    holder.wait(timeout=30)
    with open("/dev/full", "w") as full:
        obs = subprocess.Popen([CLI, "observe", "full-out"], env=e.env, stdout=full,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        rc = obs.wait(timeout=20)
    except subprocess.TimeoutExpired:
        obs.kill()
        rc = None
    err = obs.communicate(timeout=20)[1]
    check(rc == 74 and "writing the output" in err,
          "observe > /dev/full: exits %s (want 74) instead of running on (%s)"
          % (rc, err.strip()))


def test_snapshot_files(e):
    """snapshot save writes a new file of its own (mkstemp), never through a
    symlink planted at FILE.tmp; FILE itself must be a regular file or
    absent: a FIFO or a symlink there is refused (exit 1) and left as it
    was."""
    e.run("lock", "snap-seed", "--", "true")  # a lock table that has had an entry
    tmp = tempfile.mkdtemp(prefix="cli-snap-", dir=e.tmp)
    victim = os.path.join(tmp, "victim")
    with open(victim, "w") as f:
        f.write("precious\n")
    backup = os.path.join(tmp, "backup")
    os.symlink(victim, backup + ".tmp")
    r = e.run("snapshot", "save", backup)
    with open(victim, "rb") as f:
        kept = f.read() == b"precious\n"
    check(r.returncode == 0 and kept and os.path.islink(backup + ".tmp") and
          os.path.isfile(backup) and not os.path.islink(backup) and
          os.stat(backup).st_mode & 0o777 == 0o600,
          "snapshot save: a symlink at FILE.tmp is not written through, FILE is a new "
          "0600 file (exit %d: %s)" % (r.returncode, r.stderr.strip()))
    fifo, link = os.path.join(tmp, "fifo"), os.path.join(tmp, "link")
    os.mkfifo(fifo)
    os.symlink(victim, link)
    for path, what, still in ((fifo, "a FIFO", lambda: stat.S_ISFIFO(os.lstat(fifo).st_mode)),
                              (link, "a symbolic link", lambda: os.path.islink(link))):
        r = e.run("snapshot", "save", path)
        with open(victim, "rb") as f:
            kept = f.read() == b"precious\n"
        check(r.returncode == 1 and what in r.stderr and still() and kept,
              "snapshot save onto %s: refused (exit %d), left as it was (%s)"
              % (what, r.returncode, r.stderr.strip()))
    left = sorted(n for n in os.listdir(tmp) if ".tmp-" in n)
    check(left == [], "snapshot save leaves no temporary file behind (%r)" % left)
    # its result is FILE: stdout on /dev/full does not turn a backup into exit 74
    quiet = os.path.join(tmp, "quiet")
    with open("/dev/full", "w") as full:
        r = subprocess.run([CLI, "snapshot", "save", quiet], env=e.env, stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=60)
    check(r.returncode == 0 and os.path.getsize(quiet) > 0 and "the backup is written" in r.stderr,
          "snapshot save with stdout on /dev/full: the backup is written, exit 0 and a "
          "warning (exit %d: %s)" % (r.returncode, r.stderr.strip()))
    shutil.rmtree(tmp, ignore_errors=True)


def test_elected_escaped(e):
    """elect prints the name it won escaped, as locks and observe show it: a
    newline in the name does not split the line."""
    r = e.run("elect", "el\nx", "v", "--", "true")
    check(r.returncode == 0 and r.stdout == "" and
          re.search(r"^edgelock: elected el\\x0ax: token \d+$", r.stderr, re.M),
          "elect: 'elected NAME' (the name escaped) is on stderr, stdout is CMD's (%r, %r)"
          % (r.stdout, r.stderr))


def test_ttl_over_limit(e):
    """A --ttl over the cluster's [limits] max_session_ttl_ms (10 min by
    default) is the cluster's refusal (exit 1) naming the limit, not a
    usage error."""
    r = e.run("lock", "ttl-over", "--ttl", "11m", "--", "true")
    check(r.returncode == 1 and "max_session_ttl_ms" in r.stderr,
          "lock --ttl 11m: exit %d (want 1), naming the server's limit (%s)"
          % (r.returncode, r.stderr.strip()))


def delayed_row(e, name):
    """name's `locks --json` object while it is in its lock-delay, else None."""
    for row in json_lines(e.run("locks", "--json").stdout):
        if row["name"] == name and row.get("delayed") is True:
            return row
    return None


def test_killed_client(e):
    """A SIGKILLed client's lock goes to a waiter after TTL + lock-delay;
    meanwhile `locks --json` shows it delayed with the token it was held by
    (the old CLI: "token":0, and "delayed" for semaphores only)."""
    holder = e.start("lock", "k", "--ttl=2s", "--lock-delay=2s", "--", "sh", "-c",
                     "echo $EDGELOCK_TOKEN; exec sleep 60")
    line = holder.stdout.readline().strip()  # the old CLI refused --ttl=2s: none
    token = int(line) if line.isdigit() else -1
    t0 = time.time()
    os.killpg(holder.pid, signal.SIGKILL)
    holder.wait()
    rows = []
    eventually(lambda: rows.append(delayed_row(e, "k")) or rows[-1] is not None, 6.0)
    row = rows[-1] if rows else None
    r = e.run("lock", "k", "--wait", "20s", "--", "true")
    waited = time.time() - t0
    check(r.returncode == 0 and waited >= 3.0,
          "a SIGKILLed client's lock went to a waiter after TTL + lock-delay (%.1f s)" % waited)
    check(row and row["mode"] == "delayed" and row["token"] == token and row["holders"] == 0,
          "locks --json: a lock in its lock-delay has delayed true and its holder's token %d "
          "(%r)" % (token, row))


def test_granted_while_stopped(e):
    """A waiter stopped (SIGSTOP) while queued is granted the lock while it is
    stopped and resumed past its TTL: the library's lease is lost by then, so
    the grant must not reach the application as a success (the CLI must not
    run CMD). Found by the chaos suite (tests/chaos)."""
    marker = e.path("granted-while-stopped")
    holder = e.start("lock", "gws", "--", "sleep", "2")
    time.sleep(0.5)
    waiter = e.start("lock", "gws", "--ttl", "3s", "--wait", "60s", "--", "touch", marker)
    time.sleep(0.5)
    os.killpg(waiter.pid, signal.SIGSTOP)
    holder.wait(timeout=60)  # released: granted to the stopped waiter
    time.sleep(4.5)          # past the waiter's 3 s lease
    os.killpg(waiter.pid, signal.SIGCONT)
    _, err = waiter.communicate(timeout=60)
    check(waiter.returncode != 0 and not os.path.exists(marker),
          "a grant that arrived while the waiter was stopped past its TTL is not a success: "
          "CMD not run (exit %d: %s)" % (waiter.returncode, err.strip()))
    # ... and says so as documented: 76, lost before CMD could start, with
    # the grant's token; not 69 "no leader" (an outside tester: the cluster
    # answered all along)
    check(waiter.returncode == 76 and "was granted (token" in err and
          "the command was not run" in err,
          "... exit 76 naming the grant's token (exit %d)" % waiter.returncode)


def test_leader_killed(cluster, e):
    holder = e.start("lock", "fo", "--", "sleep", "2")
    time.sleep(0.7)
    waiter = e.start("lock", "fo", "--wait", "60s", "--", "sh", "-c", "echo $EDGELOCK_TOKEN")
    seen_path = e.path("observe-fo.json")
    observer = subprocess.Popen([CLI, "observe", "fo", "--json"], env=e.env,
                                stdout=open(seen_path, "w"), stderr=subprocess.DEVNULL,
                                start_new_session=True)
    text_path = e.path("observe-fo.txt")
    text_observer = subprocess.Popen([CLI, "observe", "fo"], env=e.env,
                                     stdout=open(text_path, "w"), stderr=subprocess.DEVNULL,
                                     start_new_session=True)
    time.sleep(0.5)
    leader = cluster.wait_leader()
    t0 = time.time()
    cluster.kill(leader)
    new = cluster.wait_leader(exclude=(leader,))
    failover = time.time() - t0
    out, err = waiter.communicate(timeout=90)
    holder.wait(timeout=60)
    def seen():
        with open(seen_path) as f:
            return f.read().splitlines()
    # the observer notices the dead connection at its next keepalive (ttl/3)
    eventually(lambda: any('"token":%s,' % out.strip() in x for x in seen()), 20.0)
    os.kill(observer.pid, signal.SIGINT)
    observer.wait(timeout=30)
    lines = seen()
    check(any('"gap":true' in x for x in lines) and
          all(a != b for a, b in zip(lines, lines[1:])),
          "observe across the leader's SIGKILL says changes may have been missed (a gap "
          "line), and prints no state twice in a row: %r" % lines)
    # the gap is reported when the leader's connection is lost, before any
    # node answers again: the text says so, not "reconnected"
    os.kill(text_observer.pid, signal.SIGINT)
    text_observer.wait(timeout=30)
    with open(text_path) as f:
        text = f.read()
    check("fo: connection to the leader lost (or events came too fast); changes may be missed "
          "until the watch is back" in text
          and "reconnected" not in text,
          "observe (text) across the leader's SIGKILL says the connection was lost: %r" % text)
    print("  failover after SIGKILL of leader %d: node %d leads after %.0f ms"
          % (leader, new, failover * 1000), flush=True)
    check(waiter.returncode == 0 and out.strip().isdigit(),
          "leader SIGKILLed: a new leader is elected and the waiting client gets the lock (%s)"
          % err.strip())
    cluster.start(leader)


def test_cluster_stopped(cluster, e):
    beat = e.path("beats")
    cmd = "while true; do date +%s.%N >> " + beat + "; sleep 0.05; done"
    p = e.start("lock", "stopme", "--ttl", "3s", "--", "sh", "-c", cmd)
    time.sleep(1.0)
    waiter = e.start("lock", "stopme", "--ttl", "3s", "--wait", "60s", "--", "true")
    time.sleep(0.5)
    t_stop = time.time()
    for i in list(cluster.procs):
        cluster.signal(i, signal.SIGSTOP)
    try:
        rc = p.wait(timeout=30)
        t_exit = time.time()
        _, werr = waiter.communicate(timeout=30)
    finally:
        for i in list(cluster.procs):
            cluster.signal(i, signal.SIGCONT)
    check(waiter.returncode == 69 and "edgelock: lock: lock" not in werr,
          "a waiter whose lease ran out with every daemon stopped exits 69 (no leader "
          "answered), not 1 (refused), saying 'lock' once (exit %d: %s)"
          % (waiter.returncode, werr.strip()))
    with open(beat) as f:
        last = float(f.read().split()[-1])
    check(rc == 76, "all daemons stopped past the TTL: the CLI exits 76 (lock lost), got %d" % rc)
    check(last < t_stop + 3.0 and t_exit < t_stop + 3.5,
          "CMD was dead before the local lease deadline (last beat %.2f s after the stop)"
          % (last - t_stop))


def alive(pid):
    """pid is a process that has not ended (a zombie has)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def pid_from(path):
    """The pid a command wrote to path, once it has (0 after 10 s)."""
    def written():
        return os.path.exists(path) and open(path).read().strip().isdigit()
    return int(open(path).read()) if eventually(written, 10.0) else 0


def gone_or_killed(pid, timeout):
    """Whether pid ends within timeout; one still alive is SIGKILLed then,
    by its PID (the test started it), so a failure leaves nothing behind."""
    gone = eventually(lambda: not alive(pid), timeout)
    if not gone and pid > 0:
        os.kill(pid, signal.SIGKILL)
    return gone


def test_lost_kills_group(cluster, e):
    """The lock lost while CMD runs: CMD's own children (a shell's background
    job here) are killed with it, not only CMD, before another client could
    be granted the lock."""
    pidf = e.path("grandchild.pid")
    p = e.start("lock", "group", "--ttl", "2s", "--", "sh", "-c",
                "sleep 300 & echo $! > %s; wait" % pidf)
    grandchild = pid_from(pidf)
    for i in list(cluster.procs):
        cluster.signal(i, signal.SIGSTOP)
    try:
        rc = p.wait(timeout=30)
    finally:
        for i in list(cluster.procs):
            cluster.signal(i, signal.SIGCONT)
    gone = gone_or_killed(grandchild, 2.0)
    check(rc == 76 and grandchild > 0 and gone,
          "lock lost: the CLI exits 76 (%d) and CMD's child (pid %d) was killed too"
          % (rc, grandchild))


class MuteRelay:
    """A TCP relay from 127.0.0.1 to one daemon's client port. While mute it
    holds back what the daemon sends (renewal replies then go unanswered,
    as behind a cut link), and passes it all on when unmuted."""

    def __init__(self, port):
        import socket
        import threading
        self.up = port
        self.mute = threading.Event()
        self.stop = threading.Event()
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(8)
        self.port = self.ls.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        import select
        import socket
        pairs = []
        while not self.stop.is_set():
            socks = [self.ls] + [x for pair in pairs for x in pair]
            wants = [x for x in socks if x is self.ls or not self.mute.is_set()
                     or any(x is pair[0] for pair in pairs)]
            ready, _, _ = select.select(wants, [], [], 0.05)
            for r in ready:
                if r is self.ls:
                    c, _ = self.ls.accept()
                    pairs.append((c, socket.create_connection(("127.0.0.1", self.up))))
                    continue
                pair = next(p for p in pairs if r in p)
                other = pair[1] if r is pair[0] else pair[0]
                try:
                    data = r.recv(65536)
                    if data:
                        other.sendall(data)
                        continue
                except OSError:
                    pass
                for x in pair:
                    x.close()
                pairs.remove(pair)
        for pair in pairs:
            for x in pair:
                x.close()
        self.ls.close()

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)


def recovered_run(cluster, e, name, on_term, hold_back):
    """`lock NAME --ttl 12s --grace 6s` of a Python CMD through a muting
    relay: mute after 0.5 s, unmute hold_back s after CMD saw SIGTERM (its
    handler runs on_term, then CMD exits 3 at 11 s if still alive). The
    first renewal (at 4 s) fails, SIGTERM follows (left <= 6.2 s), and the
    next retry (every 0.5 s) lands long before the SIGKILL (left <= 0.22 s).
    Returns (exit code, stderr, whether CMD saw SIGTERM, `locks` output)."""
    leader = cluster.wait_leader()
    relay = MuteRelay(cluster.client_port[leader])
    got = e.path(name + "-term")
    script = ("import signal, sys, time\n"
              "def term(*a):\n"
              "    open(%r, 'w').write('term')\n"
              "    %s\n"
              "signal.signal(signal.SIGTERM, term)\n"
              "end = time.time() + 11\n"
              "while time.time() < end:\n"
              "    time.sleep(0.05)\n"
              "sys.exit(3)\n" % (got, on_term))
    try:
        p = subprocess.Popen([CLI, "--endpoints", "tls+tcp://127.0.0.1:%d" % relay.port, "lock",
                              name, "--ttl", "12s", "--grace", "6s", "--",
                              sys.executable, "-c", script], env=e.env, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, start_new_session=True)
        time.sleep(0.5)
        relay.mute.set()
        deadline = time.time() + 12
        while not os.path.exists(got) and time.time() < deadline and p.poll() is None:
            time.sleep(0.02)
        termed = os.path.exists(got)
        time.sleep(hold_back)
        relay.mute.clear()
        _, err = p.communicate(timeout=30)
    finally:
        relay.close()
    return p.returncode, err, termed, e.run("locks").stdout


def test_recovered_lease(cluster, e):
    """Renewals fail long enough for CMD's SIGTERM, then one gets through
    before the deadline: the lock was never lost, so the CLI exits with CMD's
    status, not 76 "lost, killed", says the lease was renewed again, and
    releases the lock (an outside tester saw 76 and the lock left to
    expire). Once with a CMD that ignores the SIGTERM and ends by itself
    (status 3), once with one that obeys it at once (status 5) while the
    renewal is still held back: the CLI waits for the lease to settle rather
    than report it lost (a second tester saw 76 there)."""
    for name, on_term, hold_back, want in (("recovered", "pass", 0.0, 3),
                                           ("obeyed", "sys.exit(5)", 0.5, 5)):
        rc, err, termed, held = recovered_run(cluster, e, name, on_term, hold_back)
        check(termed and rc == want and "renewed again" in err and name not in held,
              "lease renewed after SIGTERM (%s): CMD's status (%r, want %d), a warning, the "
              "lock released (SIGTERM seen %r; %s; locks: %r)"
              % (name, rc, want, termed, err.strip()[-300:], held))


def test_killed_cli(e):
    """A SIGKILLed CLI cannot kill CMD itself: the kernel does (PDEATHSIG)."""
    pidf = e.path("orphan.pid")
    p = e.start("lock", "orphan", "--ttl", "2s", "--", "sh", "-c",
                "echo $$ > %s; exec sleep 300" % pidf)
    cmd = pid_from(pidf)
    p.kill()  # the CLI's PID only: CMD is in a process group of its own
    p.wait()
    check(cmd > 0 and gone_or_killed(cmd, 2.0),
          "the CLI SIGKILLed: its CMD (pid %d) was killed too" % cmd)


def test_killed_cli_group(e):
    """A SIGKILLed CLI's watchdog outlives it and kills CMD's whole group at
    once, CMD's children too: PDEATHSIG alone killed only CMD, and a shell
    script's `sleep` ran on while the session expired and another client was
    granted the lock. A CMD that ends normally leaves its background
    children alone: the CLI tells the watchdog it is done."""
    pidf, cmdf = e.path("killed-cli-child.pid"), e.path("killed-cli-cmd.pid")
    p = e.start("lock", "killedgroup", "--ttl", "2s", "--", "sh", "-c",
                "echo $$ > %s; sleep 30 & echo $! > %s; wait" % (cmdf, pidf))
    child, cmd = pid_from(pidf), pid_from(cmdf)
    dog = watchdog_of(p.pid, cmd)
    p.kill()  # the CLI's PID only: CMD and the watchdog are in groups of their own
    p.wait()
    gone = child > 0 and gone_or_killed(child, 1.5)
    dog_gone = dog > 0 and gone_or_killed(dog, 1.5)
    check(gone and dog_gone,
          "the CLI SIGKILLed: CMD's child (pid %d) was killed at once, not left to outlive "
          "the lease (killed %s), and the watchdog (pid %d) exited (%s)"
          % (child, gone, dog, dog_gone))
    pidf = e.path("left-child.pid")
    r = e.run("lock", "killedgroup", "--wait", "20s", "--", "sh", "-c",
              "sleep 30 >/dev/null 2>&1 & echo $! > %s" % pidf)
    left = pid_from(pidf)
    time.sleep(0.5)
    kept = left > 0 and alive(left)
    if left > 0 and kept:
        os.kill(left, signal.SIGKILL)
    check(r.returncode == 0 and kept,
          "CMD ended normally: the child it left in the background runs on (exit %d, alive %s)"
          % (r.returncode, kept))


def test_hangup_passed_on(e):
    """A SIGHUP (a terminal hang-up, `kill -HUP`) or SIGUSR1 to the CLI is
    passed on to CMD's group, and the lock is released when CMD ends, as for
    SIGTERM. Before, the default action killed the CLI alone: CMD's children
    ran on, nothing was released, and the next client waited for the TTL."""
    for sig, name in ((signal.SIGHUP, "HUP"), (signal.SIGUSR1, "USR1")):
        pidf = e.path("hup-%s.pid" % name)
        p = e.start("lock", "hangup", "--ttl", "30s", "--", "sh", "-c",
                    "trap 'echo got-%s; exit 7' %s; echo $$ > %s; "
                    "while :; do sleep 0.1; done" % (name, name, pidf))
        pid_from(pidf)
        os.kill(p.pid, sig)
        out, err = p.communicate(timeout=30)
        r = e.run("lock", "hangup", "--wait", "0", "--", "true")
        check(p.returncode == 7 and "got-%s" % name in out and r.returncode == 0,
              "SIG%s to the CLI: passed on to CMD (it exits 7), the lock released at once "
              "(exit %d, %r; the next lock --wait 0 exits %d)"
              % (name, p.returncode, out.strip(), r.returncode))


def test_stopped_cli_done(e):
    """CMD ended by itself within its lease while the CLI was stopped (a
    zombie it had not reaped), and the CLI was resumed past the lease: the
    CLI exits with CMD's status (0) and warns that the lease ran out before
    the lock was released. Before, it said CMD was killed and exited 76,
    which a cron wrapper reads as "not done" and runs the job again."""
    pidf = e.path("stopped-done.pid")
    p = e.start("lock", "stopdone", "--ttl", "3s", "--", "sh", "-c",
                "echo $$ > %s; sleep 0.5; echo done" % pidf)
    cmd = pid_from(pidf)
    os.kill(p.pid, signal.SIGSTOP)  # the CLI only: CMD runs on and ends in 0.5 s
    r = e.run("lock", "stopdone", "--wait", "20s", "--", "true")  # once the lease ran out
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=30)
    check(cmd > 0 and r.returncode == 0 and p.returncode == 0 and out.strip() == "done" and
          "ran out before the lock could be released" in err and "killed" not in err,
          "CMD ended within its lease while the CLI was stopped past it: the CLI exits with "
          "CMD's status (waiter exit %d, CLI exit %d, out %r: %s)"
          % (r.returncode, p.returncode, out.strip(), err.strip()[-300:]))


def test_stopped_dog_late(e):
    """The CLI and its watchdog stopped together (a whole board paused) while
    CMD runs on and ends after the lease: the watchdog, resumed past its kill
    time, finds CMD a zombie, but one that ended late, and must not vouch for
    it; the CLI exits 76, never CMD's 0 ("ended within its lease")."""
    pidf = e.path("stopped-dog.pid")
    p = e.start("lock", "stopdog", "--ttl", "2s", "--", "sh", "-c",
                "echo $$ > %s; sleep 3" % pidf)
    cmd = pid_from(pidf)
    dog = watchdog_of(p.pid, cmd)
    for pid in (dog, p.pid):
        if pid > 0:
            os.kill(pid, signal.SIGSTOP)
    time.sleep(4.0)  # CMD ends at 3 s, past the 2 s lease
    if dog > 0:
        os.kill(dog, signal.SIGCONT)  # first: it sees the zombie, 2 s late
        time.sleep(0.3)
    os.kill(p.pid, signal.SIGCONT)
    _, err = p.communicate(timeout=30)
    check(cmd > 0 and dog > 0 and p.returncode == 76 and "watchdog killed" not in err and
          "may have run past the lease" in err,
          "CLI and watchdog stopped, CMD ended after the lease: exit 76, not CMD's status, "
          "and no claim that the watchdog acted in time (exit %d: %s)"
          % (p.returncode, err.strip()[-200:]))


def test_stopped_cli(e):
    """A CLI stopped (SIGSTOP: a debugger, an operator) while CMD runs cannot
    kill CMD in time itself; its watchdog process does, before the lease
    ends, so the lock can go to a waiter while the CLI is still stopped and
    CMD is not running beside it. On resume the CLI reports the loss (76).
    Found by testing from outside: CMD ran on 5 s past another's grant."""
    pidf = e.path("stopped-cli.pid")
    p = e.start("lock", "stopcli", "--ttl", "2s", "--", "sh", "-c",
                "echo $$ > %s; exec sleep 300" % pidf)
    cmd = pid_from(pidf)
    os.kill(p.pid, signal.SIGSTOP)  # the CLI only: CMD is in a group of its own
    died = cmd > 0 and gone_or_killed(cmd, 10.0)
    r = e.run("lock", "stopcli", "--wait", "20s", "--", "true")  # the CLI still stopped
    os.kill(p.pid, signal.SIGCONT)
    _, err = p.communicate(timeout=30)
    check(died and r.returncode == 0 and p.returncode == 76 and "watchdog killed" in err,
          "a stopped CLI's CMD (pid %d) was killed by its watchdog before the lease ended "
          "(killed %s, a waiter got the lock: exit %d, the CLI on resume: exit %d %s)"
          % (cmd, died, r.returncode, p.returncode, err.strip()[-200:]))
    # The watchdog killed first (by anyone): the CLI must not die of SIGPIPE
    # at its next write, and a new watchdog must cover the stopped CLI.
    pidf = e.path("stopped-cli-2.pid")
    p = e.start("lock", "stopcli", "--ttl", "2s", "--", "sh", "-c",
                "echo $$ > %s; exec sleep 300" % pidf)
    cmd = pid_from(pidf)
    dog = watchdog_of(p.pid, cmd)
    if dog > 0:
        os.kill(dog, signal.SIGKILL)
    time.sleep(0.5)  # the CLI replaces it within a turn
    os.kill(p.pid, signal.SIGSTOP)
    died = cmd > 0 and gone_or_killed(cmd, 10.0)
    r = e.run("lock", "stopcli", "--wait", "20s", "--", "true")
    os.kill(p.pid, signal.SIGCONT)
    _, err = p.communicate(timeout=30)
    check(dog > 0 and died and r.returncode == 0 and p.returncode == 76 and
          "starting another" in err,
          "the watchdog SIGKILLed, then the CLI stopped: a new watchdog killed CMD in time "
          "(watchdog %d, killed %s, waiter exit %d, CLI exit %d: %s)"
          % (dog, died, r.returncode, p.returncode, err.strip()[-200:]))


def watchdog_of(cli, cmd):
    """The CLI's child that is not CMD: its watchdog (0 when not found)."""
    for _ in range(50):
        try:
            with open("/proc/%d/task/%d/children" % (cli, cli)) as f:
                kids = [int(x) for x in f.read().split() if int(x) != cmd]
            if kids:
                return kids[0]
        except OSError:
            pass
        time.sleep(0.1)
    return 0


def test_cluster_restart(cluster, e):
    holder = e.start("lock", "durable", "--ttl", "30s", "--", "sh", "-c",
                     "echo $EDGELOCK_TOKEN; sleep 8")
    time.sleep(1.5)
    for i in list(cluster.procs):
        cluster.kill(i)
    cluster.start_all()
    cluster.wait_leader(timeout=30)
    r = e.run("locks", "--json")
    check('"name":"durable"' in r.stdout and '"holders":1' in r.stdout,
          "after SIGKILL of the whole cluster and a restart, the held lock is still held")
    out, _ = holder.communicate(timeout=60)
    first = int(out.split()[0])
    r = e.run("lock", "durable", "--wait", "30s", "--", "sh", "-c", "echo $EDGELOCK_TOKEN")
    check(holder.returncode == 0 and r.returncode == 0 and int(r.stdout.split()[0]) > first,
          "the holder kept its lock through the restart; the next token is higher")


class Load:
    """Lock traffic from CLI processes: WORKERS threads each run
    `edgelock lock load -- sh -c INCREMENT` back to back until stopped. The
    increment reads the counter file, writes it plus one, and appends
    "VALUE TOKEN TIME" to a log: under a working lock the log's values are
    1, 2, 3... with rising tokens, and the counter equals the log's length."""
    WORKERS = 3

    def __init__(self, e):
        import threading
        self.e = e
        self.counter, self.log = e.path("load.counter"), e.path("load.log")
        with open(self.counter, "w") as f:
            f.write("0\n")
        open(self.log, "w").close()
        self.script = ('n=$(cat %s); n=$((n + 1)); echo $n > %s; '
                       'echo "$n $EDGELOCK_TOKEN $(date +%%s.%%N)" >> %s'
                       % (self.counter, self.counter, self.log))
        self.stopping = threading.Event()
        self.rcs, self.errs = [], []
        self.threads = [threading.Thread(target=self.work, daemon=True)
                        for _ in range(self.WORKERS)]
        for t in self.threads:
            t.start()

    def work(self):
        while not self.stopping.is_set():
            r = self.e.run("lock", "load", "--wait", "30s", "--", "sh", "-c", self.script,
                           timeout=60)
            self.rcs.append(r.returncode)
            if r.returncode != 0:
                self.errs.append(r.stderr.strip())

    def stop(self):
        self.stopping.set()
        for t in self.threads:
            t.join(timeout=90)

    def rows(self):
        with open(self.log) as f:
            return [(int(v), int(t), float(at)) for v, t, at in (line.split() for line in f)]

    def done_between(self, t0, t1):
        return sum(1 for _, _, at in self.rows() if t0 <= at <= t1)


def cli_members(cluster, e, leader=False):
    """node -> role ("voter", "learner", ...) as the leader reports it through
    `edgelock members list --json` asked of every running node (the leader
    may be one the clients' endpoint list lacks); {} while none leads. With
    leader=True: (the leader's id, that map)."""
    eps = ",".join(cluster.addr(i) for i in sorted(cluster.procs))
    r = e.run("--endpoints", eps, "members", "list", "--json", timeout=30)
    for line in r.stdout.splitlines():
        st = json.loads(line)
        if st.get("role") == "leader":
            roles = {m["node"]: m["role"] for m in st["members"]}
            return (st["node"], roles) if leader else roles
    return (0, {}) if leader else {}


def eventually(pred, timeout=15.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(0.2)
    return False


def join_fourth(cluster, e):
    """Node 4 starts empty (--join), is added as a learner, then promoted."""
    cluster.add_node(4)
    cluster.start(4, "--join")
    peer4 = "tls+tcp://127.0.0.1:%d" % cluster.peer_port[4]
    r = e.run("members", "add", "4", peer4, cluster.addr(4), "--learner")
    check(r.returncode == 0 and "committed at index" in r.stdout,
          "members add 4 --learner: accepted (%s)" % (r.stdout + r.stderr).strip())
    check(eventually(lambda: cli_members(cluster, e).get(4) == "learner"),
          "members list --json: node 4 is a learner %s" % cli_members(cluster, e))
    time.sleep(0.5)
    check(cli_members(cluster, e).get(4) == "learner",
          "a --learner member is not promoted on its own")
    for tries in range(1, 51):  # refused (busy) until node 4 holds every commit
        r = e.run("members", "promote", "4")
        if r.returncode != 1:
            break
        time.sleep(0.2)
    check(r.returncode == 0, "members promote 4: accepted after %d tries (%s)"
          % (tries, (r.stdout + r.stderr).strip()))
    check(eventually(lambda: cli_members(cluster, e).get(4) == "voter"),
          "members list --json: node 4 is a voter %s" % cli_members(cluster, e))
    r = e.run("members", "promote", "4")
    check(r.returncode == 1 and "not a learner" in r.stderr,
          "promoting a voter again: exit 1, and why (%s)" % r.stderr.strip())
    leader, _ = cli_members(cluster, e, leader=True)
    r = e.run("--endpoints", cluster.addr(4), "status", "--json")
    st = json.loads(r.stdout or "{}")
    check(st.get("node") == 4 and st.get("leader") == leader and st.get("locks", 0) >= 1,
          "status on node 4: it follows leader %d and has the lock table (%s)"
          % (leader, r.stdout.strip()))


def remove_leader(cluster, e):
    """The leader removes itself, steps down; its daemon is stopped by PID."""
    old, _ = cli_members(cluster, e, leader=True)
    r = e.run("members", "remove", str(old))
    check(old != 0 and r.returncode == 0, "members remove %d (the leader): accepted (%s)"
          % (old, (r.stdout + r.stderr).strip()))
    rest = {1, 2, 3, 4} - {old}

    def gone():
        leader, roles = cli_members(cluster, e, leader=True)
        return leader in rest and roles.keys() == rest
    check(eventually(gone), "members list --json: node %d is gone, another leads: %s"
          % (old, cli_members(cluster, e, leader=True)))
    # A removed daemon that knows its removal committed stops by itself, exit 0.
    proc = cluster.procs[old]
    try:
        rc = proc.wait(10.0)
    except subprocess.TimeoutExpired:
        rc = None
    cluster.stop(old)  # by PID, if it is still there
    check(rc == 0, "the removed node %d (PID %d) stopped by itself: exit %r" % (old, proc.pid, rc))


def check_load(cluster, e, load, t0, t1):
    rows = load.rows()
    with open(load.counter) as f:
        value = int(f.read())
    values, tokens = [v for v, _, _ in rows], [t for _, t, _ in rows]
    during = load.done_between(t0, t1)
    print("  load: %d increments, %d during the change (%.1f s), exits %s"
          % (len(rows), during, t1 - t0, sorted(set(load.rcs))), flush=True)
    check(value == len(rows) and values == list(range(1, len(rows) + 1)),
          "no lost update: counter %d, %d increments logged in order" % (value, len(rows)))
    check(during >= 3 and all(rc == 0 for rc in load.rcs),
          "the lock served every CLI client through the change (%d of %d during it) %s"
          % (during, len(rows), load.errs[:3]))
    check(all(a < b for a, b in zip(tokens, tokens[1:])), "the tokens rose with each grant")
    left = ",".join(cluster.addr(i) for i in sorted(cluster.procs))
    r = e.run("--endpoints", left, "lock", "load", "--wait", "10s", "--", "sh", "-c",
              "echo $EDGELOCK_TOKEN")
    check(r.returncode == 0 and tokens and int(r.stdout.split()[0]) > tokens[-1],
          "the new membership %s serves a lock afterwards, with a higher token (%s)"
          % (sorted(cluster.procs), (r.stdout + r.stderr).strip()))


def test_membership_under_load(cluster, e):
    """Issue 11: a fourth node joins as a learner and is promoted, then the
    leader is removed, all through the CLI while CLI lock traffic runs."""
    stop = e.path("steady.stop")
    steady = e.start("lock", "steady", "--", "sh", "-c", "echo $EDGELOCK_TOKEN; "
                     "while [ ! -e %s ]; do sleep 0.1; done" % stop)
    load = Load(e)
    try:
        time.sleep(1.0)
        t0 = time.time()
        join_fourth(cluster, e)
        t_join = time.time()
        remove_leader(cluster, e)
        t1 = time.time()
        print("  membership: node 4 a voter after %.1f s, the leader removed after %.1f s more"
              % (t_join - t0, t1 - t_join), flush=True)
        time.sleep(1.0)
    finally:
        load.stop()
    check_load(cluster, e, load, t0, t1)
    r = e.run("--endpoints", cluster.addr(4), "locks", "--json")
    open(stop, "w").close()
    out, err = steady.communicate(timeout=30)
    check(steady.returncode == 0 and '"name":"steady","mode":"exclusive","holders":1,"token":%s,'
          % out.strip() in r.stdout,
          "a lock held through the whole change stayed held with its token (%s)" % err.strip())


def test_open_retry(cluster):
    """A retried OPEN_SESSION (same nonce, as after a lost reply) returns the
    session the first attempt made, and makes no second one."""
    leader = cluster.wait_leader()
    conn = cluster.connect(leader)
    try:
        first = conn.call({1: 1, 9: 10000, 14: 0x5EED1234ABCD})
        again = conn.call({1: 1, 9: 10000, 14: 0x5EED1234ABCD})
        other = conn.call({1: 1, 9: 10000, 14: 0x5EED1234ABCE})
    finally:
        conn.close()
    check(first.get(4) and again.get(4) == first.get(4) and other.get(4) != first.get(4),
          "a retried open (same nonce) returns the same session (%s, %s); a new nonce, a new one"
          % (first.get(4), again.get(4)))


def test_many_sessions_slow_disk():
    """A cluster of three on slow disks (each fdatasync 30 ms, an SD card's;
    the LD_PRELOAD shim tests/daemon/slow_fsync.c): one client keeps its
    most sessions (64, TTL 2 s) alive, none ever in doubt or lost
    (client_safety.c, many-sessions). Renewed one at a time, each waiting
    for its own sync, they were not."""
    cluster = Cluster(BUILD, 3, tmp=os.path.join(BUILD, "tmp", "cli-slow-%d" % os.getpid()))
    flag = os.path.join(cluster.dir, "slow")
    open(flag, "w").close()
    for i in cluster.peer_port:
        cluster.slow_disk(i, flag, 30)
    cluster.start_all(bootstrap=True)
    try:
        cluster.wait_leader()
        r = subprocess.run([os.path.join(BUILD, "bin", "client-safety-test"), "many-sessions"],
                           env=Env(cluster).env, capture_output=True, text=True,
                           errors="replace", timeout=120)
        check(r.returncode == 0, "64 sessions of one client on slow disks: none in doubt or "
              "lost: %s %s" % (r.stdout.strip(), r.stderr[-600:]))
    finally:
        cluster.stop_all()


def cpu_wakeups(pid):
    """Voluntary context switches (sleeps) of process pid so far, summed over
    its threads (preemptions under load are not counted)."""
    n = 0
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                n += sum(int(ln.split()[1]) for ln in f
                         if ln.startswith("voluntary_ctxt_switches"))
        except OSError:
            pass  # the thread ended meanwhile
    return n


def holders_of(e, name):
    """How many hold the lock name, as `locks --json` says (0: none, or no such lock)."""
    rows = [r for r in json_lines(e.run("locks", "--json").stdout) if r and r.get("name") == name]
    return rows[0].get("holders", 0) if rows else 0


def sleeps_in_3s(pid):
    """Voluntary context switches of process pid over 3 s."""
    before = cpu_wakeups(pid)
    time.sleep(3)
    return cpu_wakeups(pid) - before


def test_idle_holder(e):
    """A CLI holding a lock, or observing one, sleeps while nothing happens.
    It looked at its lease every 20 ms (every 50 ms for an election held
    without a command, every 200 ms observing): 50, 20 and 5 wake-ups a
    second for as long as it ran, a board's idle power. Over 3 s with the
    default 10 s TTL: at most 30 sleeps holding (were about 150 and 60), 15
    observing (were about 20); the lock and the leadership still held, then
    released on SIGTERM; observe ends at once on SIGTERM."""
    for name, args in (("idle-lock", ["lock", "idle-lock", "--", "sleep", "30"]),
                       ("idle-elect", ["elect", "idle-elect", "me"])):
        p = e.start(*args)
        try:
            eventually(lambda: holders_of(e, name) == 1)
            time.sleep(0.5)
            n = sleeps_in_3s(p.pid)
            held = holders_of(e, name) == 1
            check(n <= 30 and held and p.poll() is None,
                  "%s: the CLI holding it slept: %d sleeps in 3 s (want at most 30), "
                  "still held: %s" % (args[0], n, held))
            if args[0] == "elect":
                obs = e.start("observe", name)
                time.sleep(1.0)
                n = sleeps_in_3s(obs.pid)
                obs.send_signal(signal.SIGTERM)
                t0 = time.time()
                out, _ = obs.communicate(timeout=30)
                check(n <= 15 and "held by" in out and obs.returncode == 0 and
                      time.time() - t0 < 2.0,
                      "observe: slept %d times in 3 s (want at most 15), ended on SIGTERM in "
                      "%.2f s, exit %s" % (n, time.time() - t0, obs.returncode))
        finally:
            os.killpg(p.pid, signal.SIGTERM)
            p.communicate(timeout=30)
        check(p.returncode in (0, 143) and holders_of(e, name) == 0,
              "%s: released on SIGTERM (exit %s)" % (args[0], p.returncode))


def test_client_threads(e):
    """libedgelock shared by 8 threads, and a watcher that sends nothing
    (tests/integration/client_threads.c, under ASan/UBSan)."""
    r = subprocess.run([os.path.join(BUILD, "bin", "client-threads-test")], env=e.env,
                       capture_output=True, text=True, timeout=120)
    check(r.returncode == 0 and r.stdout.strip().endswith("client threads: ok"),
          "one client shared by 8 threads: every reply reached its thread, and a watcher "
          "got each change without sending: %s %s" % (r.stdout[-600:], r.stderr[-600:]))


def test_client_safety(e):
    """libedgelock's edges (tests/integration/client_safety.c, under
    ASan/UBSan): each check prints its own line."""
    r = subprocess.run([os.path.join(BUILD, "bin", "client-safety-test")], env=e.env,
                       capture_output=True, text=True, errors="replace", timeout=300)
    check(r.returncode == 0 and r.stdout.strip().endswith("client safety: ok"),
          "libedgelock's edges: %s %s" % (r.stdout.strip(), r.stderr[-600:]))


def test_help():
    env = dict(os.environ)
    ok = all(subprocess.run([CLI] + a + ["--help"], capture_output=True, env=env).returncode == 0
             for a in ([], ["lock"], ["elect"], ["observe"], ["status"], ["locks"], ["members"],
                       ["transfer-leader"]))
    bad = subprocess.run([CLI, "frobnicate"], capture_output=True, text=True)
    check(ok and bad.returncode == 64 and "unknown command" in bad.stderr,
          "--help on every command exits 0; an unknown command exits 64")
    ver = subprocess.run([CLI, "--version"], capture_output=True, text=True)
    daemon = subprocess.run([os.path.join(BUILD, "bin", "edgelockd"), "--version"],
                            capture_output=True, text=True).stdout
    m = re.match(r"edgelock (\S+ \(revision \S+\)), client protocol (\d+)\n$", ver.stdout)
    check(ver.returncode == 0 and m is not None and
          daemon.startswith("edgelockd %s, client protocol %s," % m.groups()),
          "edgelock --version exits 0 naming the release, revision and protocol of the "
          "edgelockd built beside it (%r / %r)" % (ver.stdout, daemon[:60]))
    extra = subprocess.run([CLI, "members", "list", "extra"], capture_output=True, text=True)
    check(extra.returncode == 64, "members list with a stray argument exits 64")
    nowhere = subprocess.run([CLI, "--config", "/nonexistent", "status"], capture_output=True,
                             text=True)
    check(nowhere.returncode == 78 and "/nonexistent: cannot open the client config: No such"
          in nowhere.stderr, "a config that cannot be opened exits 78, saying why (%s)"
          % nowhere.stderr.strip())
    try:
        zero = subprocess.run([CLI, "--config", "/dev/zero", "status"], capture_output=True,
                              text=True, timeout=30)
        check(zero.returncode == 78 and "line 1" in zero.stderr,
              "a config line that never ends (/dev/zero) is refused (%s)" % zero.stderr.strip())
    except subprocess.TimeoutExpired:
        check(False, "a config line that never ends (/dev/zero) is refused: still reading")
    test_local_files()
    test_usage_named()
    test_client_config()


def test_local_files():
    """Files the CLI reads or writes itself, checked before any cluster is asked."""
    tmp = tempfile.mkdtemp(prefix="cli-files-")
    try:
        # libinih reads 199 characters of a line, then the rest as a line of
        # its own: this comment's tail would set the endpoints.
        conf = os.path.join(tmp, "client.conf")
        with open(conf, "w") as f:
            f.write("[client]\n; " + "x" * 197 + "endpoints = tls+tcp://127.0.0.1:1\n"
                    "ca_file = /nonexistent/ca.pem\n")
        out = subprocess.run([CLI, "--config", conf, "status"], capture_output=True, text=True)
        check(out.returncode == 78 and "line 2 is longer than 199" in out.stderr,
              "a config line too long for libinih is refused, not read in parts (%s)"
              % out.stderr.strip())
        # FILE.tmp must stay another file than FILE, or a failed save
        # destroys the backup it was to replace.
        deep = tmp
        while len(deep) < 3900:
            deep = os.path.join(deep, "d" * 200)
        os.makedirs(deep)
        backup = os.path.join(deep, "b" * (4094 - len(deep) - 1))
        with open(backup, "w") as f:
            f.write("an older backup\n")
        out = subprocess.run([CLI, "--endpoints", "tls+tcp://127.0.0.1:1", "--ca",
                              os.path.join(BUILD, "certs", "ca.pem"),
                              "snapshot", "save", backup], capture_output=True, text=True)
        with open(backup) as f:
            kept = f.read() == "an older backup\n"
        check(out.returncode == 64 and "too long" in out.stderr and kept,
              "snapshot save: a path too long for FILE.tmp is refused, the old backup kept (%s)"
              % out.stderr.strip())
        out = subprocess.run([CLI, "--config", tmp, "status"], capture_output=True, text=True)
        check(out.returncode == 78 and "is a directory" in out.stderr,
              "a directory as the config is named as such (%s)" % out.stderr.strip())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    out = subprocess.run([CLI, "lock", "-n", "2", "x", "--shared", "--", "true"],
                         capture_output=True, text=True)
    check(out.returncode == 64 and "exclude each other" in out.stderr,
          "lock -n with --shared says why it is refused (%s)" % out.stderr.strip())
    out = subprocess.run([CLI, "--endpoints", "tls+tcp://127.0.0.1:1", "--ca",
                          os.path.join(BUILD, "certs", "ca.pem"), "--timeout", "300ms", "locks"],
                         capture_output=True, text=True)
    check(out.returncode == 69 and out.stdout == "",
          "locks with no cluster: exit 69 and no table header (%r)" % out.stdout)
    ca = os.path.join(BUILD, "certs", "ca.pem")
    many = ",".join("tls+tcp://127.0.0.1:%d" % (i + 1) for i in range(17))
    for eps, want in (("tls+tcp://h:99999", "is not tls+tcp://HOST:PORT"),
                      ("tls+tcp://", "is not tls+tcp://HOST:PORT"), (many, "more than 16"),
                      ("tls+tcp://::1:9111", "is not tls+tcp://HOST:PORT (PORT 1..65535); an "
                       "IPv6 address goes in brackets: tls+tcp://[::1]:9111")):
        out = subprocess.run([CLI, "--endpoints", eps, "--ca", ca, "status"],
                             capture_output=True, text=True)
        check(out.returncode == 78 and want in out.stderr,
              "endpoints %.40s: refused at open (%s)" % (eps, out.stderr.strip()))
    out = subprocess.run([CLI, "elect", "x", "v", "--shared"], capture_output=True, text=True)
    check(out.returncode == 64 and "--shared" in out.stderr,
          "elect refuses --shared (%s)" % out.stderr.strip())


def test_usage_named():
    """A usage error names what is wrong on its first line, then the usage;
    a lock name that is not UTF-8 is refused before anything is asked (the
    endpoint here answers nothing: asking would be 69, not 64); a duration
    too long says the maximum."""
    nowhere = ["--endpoints", "tls+tcp://127.0.0.1:1", "--ca",
               os.path.join(BUILD, "certs", "ca.pem"), "--timeout", "300ms"]
    for args, named in ((["members", "frob"], "frob"), (["members"], "missing"),
                        (["members", "add", "0", "a", "b"], "not 0"),
                        (["members", "add", "-1", "a", "b"], "not -1"),
                        (["members", "add", "4x", "a", "b"], "not 4x"),
                        (["members", "add", "99999999999999999999", "a", "b"],
                         "not 99999999999999999999"),
                        (["members", "add", "4", "a"], "CLIENT_ADDR is missing"),
                        (["members", "add", "4", "tls+tcp://a:1", "tls+tcp://A:1"],
                         "PEER_ADDR and CLIENT_ADDR are one address, tls+tcp://a:1: a node "
                         "needs a port for each"),
                        (["members", "add", "4", "", "tls+tcp://a:2"],
                         "CLIENT_ADDR tls+tcp://a:2 without PEER_ADDR: give both, or neither"),
                        (["members", "add", "4", "tls+tcp://a:1", "tls+tcp://a:2", "--bogus"],
                         "unknown option --bogus"),
                        (["members", "remove", "x"], "not x"),
                        (["members", "promote"], "ID is missing"),
                        (["transfer-leader", "x"], "not x"),
                        (["transfer-leader", "1", "2"], "unexpected argument 2"),
                        (["snapshot", "load", "f"], "load"), (["snapshot", "save"], "missing"),
                        (["snapshot"], "a subcommand is missing (snapshot save FILE)"),
                        (["snapshot", "save", "a", "b"], "unexpected argument b"),
                        (["observe"], "NAME is missing"),
                        (["lock", "x"], "CMD is missing"), (["lock", "--", "ls"], "NAME is missing"),
                        (["elect", "x"], "VALUE is missing"),
                        (["lock", "bad\udcff", "--", "true"], "NAME must be UTF-8 text"),
                        (["elect", "bad\udcff", "v"], "NAME must be UTF-8 text"),
                        (["lock", "x", "--ttl", "10000h", "--", "true"],
                         "--ttl 10000h: too long (a duration is at most 1193h); the cluster"),
                        (["observe", "bad\udcff"], "NAME must be UTF-8 text, not \"bad\\xff\""),
                        (["--timeout", "10000h", "status"], "too long (a duration is at most "
                         "1193h)"),
                        (["--timeout", "0", "status"], "--timeout 0: a request's bound must"),
                        (["--timeout=0", "status"], "--timeout 0: a request's bound must"),
                        (["lock", "x", "--ttl=10000h", "--", "true"], "--ttl 10000h: too long"),
                        (["lock", "x", "--endpoints", "--", "true"], "--endpoints needs a value"),
                        (["lock", "x", "--ttl", "--", "true"], "--ttl needs a duration"),
                        (["lock", "x", "-n", "--", "true"], "-n needs a number"),
                        (["--json=yes", "status"], "--json takes no value"),
                        (["transfer-leader", "--json"], "--json is not taken here"),
                        (["elect", "x", "v", "--json"], "--json is not taken here"),
                        (["lock", "x", "--json", "--", "true"], "--json is not taken here"),
                        (["members", "remove", "4", "--json"], "--json is not taken here"),
                        (["lock", "x", "--ttl", "5s", "--grace=5s", "--", "true"],
                         "--grace must be shorter than --ttl")):
        r = subprocess.run([CLI] + nowhere + args, capture_output=True, text=True,
                           errors="replace", timeout=30)
        first = (r.stderr.splitlines() or [""])[0]
        check(r.returncode == 64 and named in first,
              "%s: exit %d (want 64), the first line names it: %r"
              % (" ".join(args), r.returncode, first))
    r = subprocess.run([CLI, "--endpoints=tls+tcp://127.0.0.1:1",
                        "--ca=" + os.path.join(BUILD, "certs", "ca.pem"), "--timeout=300ms",
                        "status"], capture_output=True, text=True, timeout=30)
    check(r.returncode == 69, "--opt=value is taken for the global options: exit %d (want 69: "
          "nobody at that endpoint) (%s)" % (r.returncode, r.stderr.strip()))


def test_client_config():
    """Where the cluster is: the endpoints without a CA say the CA is
    missing; EDGELOCK_CONFIG= (empty) is unset, and so are EDGELOCK_CERT=,
    EDGELOCK_CA= and EDGELOCK_ENDPOINTS=; a [client] key given twice
    is refused naming both lines, as the daemon's config does."""
    tmp = tempfile.mkdtemp(prefix="cli-conf-")
    try:
        empty = os.path.join(tmp, "empty.conf")
        with open(empty, "w") as f:
            f.write("[client]\n")
        env = dict(os.environ, EDGELOCK_ENDPOINTS="tls+tcp://127.0.0.1:1")
        env.pop("EDGELOCK_CA", None)
        r = subprocess.run([CLI, "--config", empty, "status"], env=env, capture_output=True,
                           text=True)
        check(r.returncode == 78 and "no CA file" in r.stderr,
              "endpoints without a CA: says the CA is missing (%s)" % r.stderr.strip())
        env = dict(os.environ, EDGELOCK_CONFIG="")
        r = subprocess.run([CLI, "--endpoints", "tls+tcp://127.0.0.1:1", "--ca",
                            os.path.join(BUILD, "certs", "ca.pem"), "--timeout", "300ms",
                            "status"], env=env, capture_output=True, text=True)
        check(r.returncode == 69 and "cannot open" not in r.stderr,
              "EDGELOCK_CONFIG= (empty) acts as unset: exit %d (%s)"
              % (r.returncode, r.stderr.strip()))
        # EDGELOCK_CERT= and EDGELOCK_CA= (empty) are unset too: the config's
        # files are used (they were files named "", exit 78)
        full = os.path.join(tmp, "full.conf")
        with open(full, "w") as f:
            f.write("[client]\nendpoints = tls+tcp://127.0.0.1:1\nca_file = %s\n"
                    "cert_key_file = %s\n" % (os.path.join(BUILD, "certs", "ca.pem"),
                                               os.path.join(BUILD, "certs", "client.pem")))
        for var in ("EDGELOCK_CERT", "EDGELOCK_CA", "EDGELOCK_ENDPOINTS"):
            env = dict(os.environ, **{var: ""})
            r = subprocess.run([CLI, "--config", full, "--timeout", "300ms", "status"], env=env,
                               capture_output=True, text=True)
            check(r.returncode == 69 and "127.0.0.1:1" in r.stdout + r.stderr,
                  "%s= (empty) acts as unset, the config's value used: exit %d (%s)"
                  % (var, r.returncode, r.stderr.strip()))
        twice = os.path.join(tmp, "twice.conf")
        with open(twice, "w") as f:
            f.write("[client]\nendpoints = tls+tcp://127.0.0.1:1\nca_file = /x\n"
                    "endpoints = tls+tcp://127.0.0.1:2\n")
        r = subprocess.run([CLI, "--config", twice, "status"], capture_output=True, text=True)
        check(r.returncode == 78 and "twice.conf:4: [client] endpoints given twice (first on "
              "line 2)" in r.stderr, "a [client] key given twice is refused (%s)"
              % r.stderr.strip())
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    check_help_exit_codes()
    check_readme_usage()
    r = subprocess.run([CLI, "lock", "--help"], capture_output=True, text=True)
    check(r.returncode == 0 and "EDGELOCK_SESSION" in r.stdout and "126" in r.stdout,
          "lock --help names EDGELOCK_SESSION and exit 126/127")


def check_readme_usage():
    """cmd/edgelock/README.md's usage lines are each command's --help usage
    (the README's `elect` lacked --grace, which the --help had)."""
    readme = os.path.join(os.path.dirname(__file__), "..", "..", "cmd", "edgelock", "README.md")
    with open(readme) as f:
        doc = {" ".join(line.split()) for line in f if line.startswith("    edgelock ")}
    missing = []
    for cmd in ("lock", "elect", "observe", "status", "locks", "members", "transfer-leader",
                "snapshot"):
        text = subprocess.run([CLI, cmd, "--help"], capture_output=True, text=True).stdout
        usage, lines = [], text.splitlines()
        for line in lines:  # "usage: ...", its continuation lines and further forms
            if line.startswith("usage: ") or line.startswith("       edgelock "):
                usage.append(line[7:])
            elif line.startswith("       ") and usage:
                usage[-1] += " " + line
            else:
                break
        missing += [u for u in (" ".join(u.split()) for u in usage) if u not in doc]
    check(not missing, "cmd/edgelock/README.md has every command's --help usage (missing %r)"
          % missing)


def check_help_exit_codes():
    """--help lists the exit codes as a man page's EXIT STATUS does: one
    code per line, its meaning starting in one column (continuation lines
    indented to it), no line wider than the rest of the text (the old
    paragraph ran "...within --wait; 76 lock" to 100 columns)."""
    r = subprocess.run([CLI, "--help"], capture_output=True, text=True)
    tail = r.stdout.split("exit codes:\n", 1)[-1].splitlines()
    codes = {}
    for line in tail:
        m = re.match(r"  (\d+|CMD's) +(\S.*)$", line)
        if m:
            codes[m.group(1)] = (line.index(m.group(2)), m.group(2))
    cols = {col for col, _ in codes.values()}
    want = {"0": "ok", "1": "refused", "64": "usage", "69": "no leader reachable",
            "70": "internal error", "74": "writing the output", "75": "lock held or not granted",
            "76": "lock lost while CMD ran", "77": "permission denied", "78": "bad configuration",
            "79": "`lock -n N`", "126": "CMD found but not executable", "127": "CMD not found",
            "130": "SIGINT", "143": "SIGTERM", "CMD's": "exit with CMD's status"}
    indent = " " * min(cols or {0})
    check(r.returncode == 0 and all(k in codes and v in codes[k][1] for k, v in want.items())
          and len(cols) == 1 and all(len(line) <= 80 and re.match(r"(  |%s)\S" % indent, line)
                                     for line in tail),
          "--help: one exit code per line, aligned, each with its meaning (%r)" % tail)


def start_cluster():
    """Three nodes, bootstrapped, a leader elected. No per-identity session
    bound: client_safety's urgent-slots check opens a client's most
    sessions (64) beside the others of this run."""
    cluster = Cluster(BUILD, 3, election_ms=600, heartbeat_ms=60,
                      extra="[limits]\nsessions_per_client = 0\n")
    cluster.start_all(bootstrap=True)
    try:
        cluster.wait_leader()
    except Exception:
        cluster.stop_all()
        raise
    return cluster


def main():
    test_help()
    test_signal_while_opening()
    test_status_leader_unanswered()
    test_many_sessions_slow_disk()
    cluster = start_cluster()
    try:
        test_open_retry(cluster)
        e = Env(cluster)
        test_locks_json_lines(e)  # first: on a cluster without locks
        test_watched_not_listed(e)
        for t in (test_basics, test_json_escaped, test_operator_output, test_members_list, test_member_unknown,
                  test_refused_identity,
                  test_node_id_max, test_wrong_ca, test_peer_port, test_undecodable_reply,
                  test_open_key_warned, test_args_after_command, test_fifo_handoff, test_shared, test_counter,
                  test_election_observe, test_observe_delayed, test_signal_while_waiting, test_killed_client, test_granted_while_stopped,
                  test_killed_cli, test_killed_cli_group, test_hangup_passed_on, test_stopped_cli,
                  test_stopped_cli_done, test_stopped_dog_late,
                  test_client_threads, test_client_safety, test_idle_holder,
                  test_output_full, test_closed_stdout, test_snapshot_files, test_ttl_over_limit,
                  test_elected_escaped):
            t(e)
        test_leader_killed(cluster, e)
        test_cluster_stopped(cluster, e)
        test_lost_kills_group(cluster, e)
        test_recovered_lease(cluster, e)
        test_signal_during_holder_query(cluster, e)
        test_observe_unreachable(cluster, e)
        test_signal_while_unreachable(cluster, e)
        test_status_silent_peer(cluster, e)
        test_transfer_silent(cluster, e)
        test_stopped_first_endpoint(cluster, e)
        test_status_no_leader(cluster, e)
        test_no_quorum(cluster, e)
        test_cluster_restart(cluster, e)
        test_membership_under_load(cluster, e)
    finally:
        cluster.stop_all()
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


def main_sanitized():
    """The CLI built with ASan/UBSan (EDGELOCK_CLI) through the steps where
    its threads and signals meet: a wait, an open, a holder query and a
    close, each cut short by a signal, the process leaving by _exit while a
    thread is still in the library; CMD's watchdog; observe's loop. Each
    sanitizer report goes to a file (log_path); none may exist at the end.
    A stack object the holder query's thread wrote after its function had
    returned was found so."""
    reports = os.path.join(BUILD, "tmp", "cli-san-%d" % os.getpid())
    os.makedirs(reports, exist_ok=True)
    for var in ("ASAN_OPTIONS", "UBSAN_OPTIONS"):
        os.environ[var] = ("log_path=%s/report:print_stacktrace=1:detect_stack_use_after_return=1"
                           % reports)
    test_signal_while_opening()
    cluster = start_cluster()
    try:
        e = Env(cluster)
        for t in (test_basics, test_election_observe, test_observe_delayed,
                  test_signal_while_waiting, test_killed_cli, test_hangup_passed_on):
            t(e)
        test_signal_during_holder_query(cluster, e)
    finally:
        cluster.stop_all()
    found = sorted(os.listdir(reports))
    text = "".join(open(os.path.join(reports, f), errors="replace").read()[:800] for f in found[:3])
    check(not found, "the sanitized CLI: no ASan/UBSan report (%d: %s)" % (len(found), text))
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main_sanitized() if os.environ.get("EDGELOCK_CLI") else main())
