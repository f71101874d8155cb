#!/usr/bin/env python3
"""certs_test.py BUILD_DIR - expired and revoked certificates, and SIGHUP (issue 12).

A CA, node and client certificates and a CRL made with openssl (`openssl ca`,
so the CRL is the CA's own) in the test's temp dir; a three-node cluster with
[tls] crl_file and client_auth = optional (so TLS lets an expired client
certificate through and the identity proof is where it is refused, with the
reason in the log). Checks:
  - an expired client certificate is refused, the log says "expired on";
  - a node whose own certificate is expired or revoked exits 2 at start,
    saying so;
  - after revoking a client's certificate in a new CRL and SIGHUP to every
    node: that client is refused ("revoked (CRL)"), another client still
    works, and the cluster keeps its leader and term (no election);
  - a key file every user may read, a CA file every user may write, at
    SIGHUP: refused saying the chmod, the old files kept;
  - a CRL file that does not parse at SIGHUP: the node logs why, keeps the
    old files (the revoked client is still refused) and keeps running;
  - a CRL that revokes the node's own certificate and a client's, SIGHUP:
    the client is refused there all the same, the node says its own
    certificate is revoked, and keeps serving;
  - a proof whose certificate TLS would refuse as a client's (a CA's,
    keyUsage keyCertSign only, extendedKeyUsage serverAuth only) is refused
    saying why; a node certificate without serverAuth does not start;
  - a CRL past its nextUpdate at SIGHUP: refused naming the CRL and its
    date, the old one kept; a client CN with a space: said not a name;
  - a CRL with 90 s left: a warning at once, and the gauge
    edgelock_crl_next_update_seconds (scraped with --metrics).
Every process is stopped by PID. Runs against BUILD/bin/edgelockd (or $EDGELOCKD).
"""
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from auth_test import refused  # noqa: E402
from elcluster import (Cluster, Checks, eventually, free_ports, tls_context,  # noqa: E402
                       write_private)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
check = Checks()

CA_CNF = """[ca]
default_ca = test
[test]
dir = {d}
database = {d}/index.txt
new_certs_dir = {d}/issued
serial = {d}/serial
crlnumber = {d}/crlnumber
certificate = {d}/ca.pem
private_key = {d}/ca.key
default_md = sha256
default_crl_days = 30
policy = anything
copy_extensions = none
unique_subject = no
[anything]
organizationalUnitName = supplied
commonName = supplied
[client_ext]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
[node_ext]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth, clientAuth
subjectAltName = DNS:localhost, IP:127.0.0.1
[server_only_ext]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
[cert_sign_ext]
basicConstraints = CA:FALSE
keyUsage = critical, keyCertSign
[ca_ext]
basicConstraints = critical, CA:TRUE
[node_client_only_ext]
basicConstraints = CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = clientAuth
"""




def openssl(*args):
    subprocess.run(["openssl"] + list(args), check=True, capture_output=True)


class CA:
    """The dev CA of tools/dev-certs.sh in dir, with an `openssl ca` database."""

    def __init__(self, d):
        self.d = d
        subprocess.run([os.path.join(ROOT, "tools", "dev-certs.sh"), d, "3"], check=True,
                       capture_output=True)
        os.makedirs(os.path.join(d, "issued"))
        open(os.path.join(d, "index.txt"), "w").close()
        with open(os.path.join(d, "serial"), "w") as f:
            f.write("1000\n")
        with open(os.path.join(d, "crlnumber"), "w") as f:
            f.write("01\n")
        self.cnf = os.path.join(d, "ca.cnf")
        with open(self.cnf, "w") as f:
            f.write(CA_CNF.format(d=d))

    def mint(self, file, cn, ou="client", start=None, end=None, ext=None):
        """file.pem: certificate and key for OU=ou, CN=cn, with the
        extensions of section ext of CA_CNF (default: ou's); start/end
        (YYYYMMDDHHMMSSZ) for a validity in the past."""
        key, csr, crt = (os.path.join(self.d, file + s) for s in (".key", ".csr", ".crt"))
        openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256",
                "-out", key)
        openssl("req", "-new", "-key", key, "-subj", "/OU=%s/CN=%s" % (ou, cn), "-out", csr)
        dates = ["-startdate", start, "-enddate", end] if start else ["-days", "30"]
        openssl("ca", "-batch", "-config", self.cnf, "-extensions", ext or ou + "_ext", "-notext",
                "-in", csr, "-out", crt, *dates)
        with open(crt) as c, open(key) as k:
            return write_private(os.path.join(self.d, file + ".pem"), c.read() + k.read())

    def revoke(self, file):
        openssl("ca", "-config", self.cnf, "-revoke", os.path.join(self.d, file + ".crt"))

    def crl(self, path, last=None, next_=None):
        """Write the CA's CRL to path (atomically: a node may read it any time);
        last/next_ (YYYYMMDDHHMMSSZ): its lastUpdate and nextUpdate."""
        dates = (["-crl_lastupdate", last, "-crl_nextupdate", next_] if last
                 else ["-crldays", "30"])
        openssl("ca", "-config", self.cnf, "-gencrl", *dates, "-out", path + ".new")
        os.replace(path + ".new", path)


def log_text(c, i):
    with open(c.log(i)) as f:
        return f.read()


def works(c, i, pem):
    """A client proving with pem opens a session on node i."""
    conn = c.connect(i, cert=pem)
    try:
        rep = conn.call({1: 1, 9: 10000})
        return rep.get(3, 0) == 0 and rep.get(4, 0) != 0
    finally:
        conn.close()


def refused_as(c, i, pem, words, proof_cert=None):
    """pem's proof (or proof_cert's, over pem's TLS) is refused on node i
    and node i's log says words."""
    conn = c.connect(i, cert=pem, proof_cert=proof_cert)
    try:
        ok = refused(conn)
    finally:
        conn.close()
    deadline = time.time() + 3
    while words not in log_text(c, i) and time.time() < deadline:
        time.sleep(0.05)
    return ok and words in log_text(c, i)


def start_fails(c, ca, name, flags, words):
    """Node 1 with these flags on a fresh data dir: exit 2 saying words."""
    data = os.path.join(c.dir, "fresh-" + name)
    os.makedirs(data)
    try:
        p = subprocess.run([c.bin, "-c", c.config(1), "--data-dir", data, "--bootstrap"] +
                           flags, capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:  # it started (and was killed)
        check("start: %s: exit 2 saying %r" % (name, words), False, "it started")
        return
    out = p.stdout + p.stderr
    check("start: %s: exit 2 saying %r" % (name, words), p.returncode == 2 and words in out,
          "rc %d: %s" % (p.returncode, out[-600:]))


def wait_logged(c, words, timeout=5.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if all(log_text(c, i).count(words) >= 1 for i in c.procs):
            return True
        time.sleep(0.05)
    return False


def hup_all(c):
    for i in sorted(c.procs):
        c.signal(i, signal.SIGHUP)


def term_of(c, i):
    return c.status(i).get(24, 0)


def test_usage(c, ca, pems, leader):
    """A proof is held to what TLS asks of a client certificate (an outside
    security tester): one TLS would refuse (not a CA, keyUsage with
    digitalSignature, extendedKeyUsage with clientAuth) is refused when it
    comes in the proof, over the TLS of a good one, saying why."""
    for name, ext, words in [
            ("server-only", "server_only_ext", "extendedKeyUsage lacks clientAuth"),
            ("cert-sign", "cert_sign_ext", "keyUsage lacks digitalSignature"),
            ("a-ca", "ca_ext", "is a CA's (basicConstraints CA:TRUE), not a client's")]:
        bad = ca.mint(name, name, ext=ext)
        check("proof with a certificate TLS would refuse (%s): refused saying %r"
              % (name, words), refused_as(c, leader, pems["good"], words, proof_cert=bad))
    check("a proof with the usages TLS wants still works", works(c, leader, pems["good"]))


def test_reload(c, ca, crl, pems, leader):
    term = term_of(c, leader)
    ca.revoke("doomed")
    ca.crl(crl)
    hup_all(c)
    check("SIGHUP: every node says it reloaded", wait_logged(c, "SIGHUP: reloaded"))
    for i in sorted(c.procs):
        check("node%d: the revoked client is refused, the log says revoked (CRL)" % i,
              refused_as(c, i, pems["doomed"], "revoked (CRL)"))
    text = log_text(c, leader)
    check("the refusal names the certificate", "certificate of doomed (serial" in text,
          text[-800:])
    cli = os.path.join(os.path.abspath(c.build), "bin", "edgelock")
    r = subprocess.run([cli, "--endpoints", c.addr(leader), "--ca", os.path.join(ca.d, "ca.pem"),
                        "--cert", pems["doomed"], "--timeout", "3s", "locks"],
                       capture_output=True, text=True, timeout=30)
    check("the CLI with the revoked certificate exits 77 and says it may be revoked",
          r.returncode == 77 and "revoked" in r.stderr, "%d %s" % (r.returncode, r.stderr))
    check("another client still works", works(c, leader, pems["good"]))
    time.sleep(3 * c.election_ms / 1000.0)  # long enough for any election to show
    check("the same leader, the same term after the reload",
          c.wait_leader() == leader and term_of(c, leader) == term,
          "leader %d, term %d -> %d" % (leader, term, term_of(c, leader)))
    check("no node exited", all(p.poll() is None for p in c.procs.values()))


def test_future_cert_logged(c, ca, leader):
    """A certificate not valid yet, refused by TLS on the peer port (which
    always asks for one): the node says so at warning, naming where it came
    from and its own clock. A board without a real-time clock refuses every
    peer and client so until it sets its time, and said nothing (an outside
    tester saw only the client's "alert 46")."""
    pem = ca.mint("future", "node9", "node", start="20990101000000Z", end="20991231000000Z")
    raw = socket.create_connection(("127.0.0.1", c.peer_port[leader]), timeout=5)
    try:
        with tls_context(c.certs, pem).wrap_socket(raw) as s:
            s.recv(1)
    except (OSError, ssl.SSLError):
        pass
    words = "warning: net: peer connection from 127.0.0.1:"
    said = eventually(lambda: words in log_text(c, leader), 3.0)
    text = log_text(c, leader)
    line = text[text.find(words):].split("\n")[0] if said else text[-400:]
    check("a certificate not valid yet, refused by TLS: logged with its address, the reason "
          "and this node's clock", said and "TLS refused its certificate" in line and
          "future" in line and "by this node's clock, now " in line, line)


def served_serial(c, port, cert):
    """The serial of the certificate a TLS handshake on port presents."""
    from cryptography import x509
    raw = socket.create_connection(("127.0.0.1", port), timeout=5)
    with tls_context(c.certs, cert).wrap_socket(raw) as s:
        return x509.load_der_x509_certificate(s.getpeercert(binary_form=True)).serial_number


def pem_serial(path):
    from cryptography import x509
    return x509.load_pem_x509_certificate(open(path, "rb").read()).serial_number


def leader_seen(c, i):
    try:
        return c.status(i).get(17)
    except (OSError, EOFError):
        return None


def test_renewal(c, ca, leader):
    """A renewed node certificate, swapped in by SIGHUP: the TLS handshakes of
    both ports present it at once (no restart), the cluster stays, and a
    restarted follower links up again with the leader dialing it with the
    renewed certificate."""
    own = os.path.join(ca.d, "node%d.pem" % leader)
    before = served_serial(c, c.client_port[leader], "good.pem")
    renewed = ca.mint("node%d-renewed" % leader, "node%d" % leader, "node")
    shutil.copy(renewed, own + ".new")
    os.replace(own + ".new", own)
    term = term_of(c, leader)
    c.signal(leader, signal.SIGHUP)
    deadline = time.time() + 5
    while log_text(c, leader).count("SIGHUP: reloaded") < 2 and time.time() < deadline:
        time.sleep(0.05)
    want = pem_serial(renewed)
    check("renewal: the client port presents the renewed certificate",
          before != want and served_serial(c, c.client_port[leader], "good.pem") == want,
          "before %x, want %x" % (before, want))
    other = next(i for i in sorted(c.procs) if i != leader)
    check("renewal: the peer port presents it too",
          served_serial(c, c.peer_port[leader], "node%d.pem" % other) == want)
    c.stop(other)
    c.start(other)
    deadline = time.time() + 15
    while time.time() < deadline and leader_seen(c, other) != leader:
        time.sleep(0.1)
    check("renewal: a restarted follower hears the leader again", leader_seen(c, other) == leader)
    check("renewal: the same leader, the same term",
          c.wait_leader() == leader and term_of(c, leader) == term,
          "term %d -> %d" % (term, term_of(c, leader)))


def test_bad_reload(c, crl, pems, leader):
    good = open(crl, "rb").read()
    with open(crl, "w") as f:
        f.write("not a CRL\n")
    c.signal(leader, signal.SIGHUP)
    deadline = time.time() + 5
    while "kept the old certificates" not in log_text(c, leader) and time.time() < deadline:
        time.sleep(0.05)
    text = log_text(c, leader)
    check("bad CRL at SIGHUP: logged, old files kept",
          "SIGHUP: kept the old certificates" in text and "not a readable" in text,
          text[-800:])
    check("bad CRL at SIGHUP: the node keeps running", c.procs[leader].poll() is None)
    check("bad CRL at SIGHUP: the revoked client is still refused",
          refused_as(c, leader, pems["doomed"], "revoked (CRL)"))
    check("bad CRL at SIGHUP: a good client still works", works(c, leader, pems["good"]))
    with open(crl, "wb") as f:
        f.write(good)


def hup_until(c, i, words, before):
    """SIGHUP node i, then its log text once words shows more than before times."""
    c.signal(i, signal.SIGHUP)
    deadline = time.time() + 5
    while log_text(c, i).count(words) <= before and time.time() < deadline:
        time.sleep(0.05)
    return log_text(c, i)


def test_expired_crl_reload(c, ca, crl, pems, leader):
    """A new CRL already past its nextUpdate, SIGHUP: refused whole (it would
    refuse every certificate), the line naming the CRL and its date, not the
    node's certificate as before (an outside tester); the old CRL is kept."""
    good = open(crl, "rb").read()
    ca.crl(crl, "20200101000000Z", "20210101000000Z")
    kept = "SIGHUP: kept the old certificates: "
    text = hup_until(c, leader, kept, log_text(c, leader).count(kept))
    line = text[text.rfind(kept):].split("\n")[0]
    check("expired CRL at SIGHUP: the line names the CRL, its date and what follows",
          "[tls] crl_file %s: expired on 2021-01-01 00:00:00 UTC" % crl in line and
          "openssl ca -gencrl" in line and "every certificate would be refused" in line and
          "not accepted by the cluster CA" not in line, line)
    check("expired CRL at SIGHUP: the old CRL kept, the revoked client still refused",
          refused_as(c, leader, pems["doomed"], "revoked (CRL)"))
    check("expired CRL at SIGHUP: a good client still served", works(c, leader, pems["good"]))
    with open(crl, "wb") as f:
        f.write(good)


def test_crl_lapsing(c, ca, crl, leader, url):
    """A CRL with about 90 s left, SIGHUP: a warning at once (every new proof
    would be refused when it lapses, and nothing said so), and the gauge
    edgelock_crl_next_update_seconds gives its nextUpdate."""
    import urllib.request
    now = time.time()
    fmt = "%Y%m%d%H%M%SZ"
    nxt = int(now) + 90
    ca.crl(crl, time.strftime(fmt, time.gmtime(now - 60)), time.strftime(fmt, time.gmtime(nxt)))
    words = "warning: crl_file %s expires on %s" % (
        crl, time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(nxt)))
    text = hup_until(c, leader, words, 0)
    check("CRL lapsing within a day: a warning at once, with its date", words in text,
          text[-600:])
    value = None
    deadline = time.time() + 3
    while value != nxt and time.time() < deadline:
        with urllib.request.urlopen(url, timeout=3) as r:
            for ln in r.read().decode().splitlines():
                if ln.startswith("edgelock_crl_next_update_seconds "):
                    value = int(ln.split()[1])
        time.sleep(0.1)
    check("the gauge edgelock_crl_next_update_seconds is the CRL's nextUpdate", value == nxt,
          "%r, want %d" % (value, nxt))


def test_spaced_cn(c, ca, pems, leader):
    """A CN with a space is refused saying the CN is no name (it said the
    subject lacked a CN)."""
    spaced = ca.mint("spaced", "ops-1 x")
    check("a client CN with a space: refused saying it is not a valid name",
          refused_as(c, leader, pems["good"], 'CN "ops-1 x" is not a valid name (1 to 64 '
                     'printable ASCII bytes, no space)', proof_cert=spaced))


def test_missing_file_reload(c, pems, leader):
    """A [tls] file that cannot be opened at SIGHUP is said as such, with
    the system's reason, not "not a readable PEM" (a renewed certificate
    the service user may not read is a good PEM: an outside tester; this
    suite runs as root, so a missing file stands for it)."""
    ca = os.path.join(c.certs, "ca.pem")
    before = log_text(c, leader).count("kept the old certificates")
    os.rename(ca, ca + ".away")
    try:
        c.signal(leader, signal.SIGHUP)
        said = eventually(lambda: log_text(c, leader).count("kept the old certificates") >
                          before, 5.0)
    finally:
        os.rename(ca + ".away", ca)
    text = log_text(c, leader)
    check("a [tls] file missing at SIGHUP: 'cannot read' with the reason, old files kept",
          said and "ca.pem: cannot read: No such file or directory" in text and
          works(c, leader, pems["good"]), text[-500:])


def test_open_key_reload(c, pems, leader):
    """A key file every user may read, or a CA file every user may write,
    swapped in before a SIGHUP: refused as at the start (the modes are
    checked again), the old certificates kept."""
    for name, mode, words, back in [
            ("node%d.pem" % leader, 0o644, "every user may read it (mode 0644): chmod 600",
             0o600),
            ("ca.pem", 0o666, "every user may replace it (mode 0666): chmod 644", 0o644)]:
        path = os.path.join(c.certs, name)
        before = log_text(c, leader).count("kept the old certificates")
        os.chmod(path, mode)
        try:
            c.signal(leader, signal.SIGHUP)
            deadline = time.time() + 5
            while (log_text(c, leader).count("kept the old certificates") == before
                   and time.time() < deadline):
                time.sleep(0.05)
            text = log_text(c, leader)
            check("%s %04o at SIGHUP: refused, saying %r, old files kept" % (name, mode, words),
                  text.count("kept the old certificates") > before and words in text,
                  text[-600:])
            check("%s %04o at SIGHUP: the node keeps running and serving" % (name, mode),
                  c.procs[leader].poll() is None and works(c, leader, pems["good"]))
        finally:
            os.chmod(path, back)


def test_own_revoked_reload(c, ca, crl, pems, leader):
    """A new CRL that revokes the node's own certificate as well as a
    client's, SIGHUP: the node applies it to the client all the same (it
    kept its old CRL, so the client was still served there: an outside
    tester got a lock with a revoked certificate) and says its own
    certificate is revoked."""
    check("a client works before its revocation", works(c, leader, pems["doomed2"]))
    ca.revoke("node%d-renewed" % leader)  # the leader's certificate since test_renewal
    ca.revoke("doomed2")
    ca.crl(crl)
    before = log_text(c, leader).count("SIGHUP: reloaded")
    c.signal(leader, signal.SIGHUP)
    deadline = time.time() + 5
    while log_text(c, leader).count("SIGHUP: reloaded") == before and time.time() < deadline:
        time.sleep(0.05)
    text = log_text(c, leader)
    check("own certificate revoked at SIGHUP: the new CRL is applied, the revoked client "
          "refused", refused_as(c, leader, pems["doomed2"], "certificate of doomed2"),
          text[-800:])
    check("own certificate revoked at SIGHUP: said, with what to do",
          "revokes this node's own certificate" in text and "install a new certificate" in text,
          text[-800:])
    check("own certificate revoked at SIGHUP: the node keeps running and serving",
          c.procs[leader].poll() is None and works(c, leader, pems["good"]))


def main():
    build = sys.argv[1] if len(sys.argv) > 1 else "build"
    c = Cluster(build, 3, tmp=os.path.join(os.path.abspath(build), "tmp",
                                           "certs-%d" % os.getpid()))
    try:
        ca = CA(os.path.join(c.dir, "pki"))
        crl = os.path.join(c.dir, "pki", "crl.pem")
        ca.crl(crl)  # nothing revoked yet
        c.certs = ca.d
        c.extra = "[tls]\nclient_auth = optional\ncrl_file = %s\n" % crl
        for i in c.peer_port:
            c.write_config(i, list(c.peer_port))
        pems = {"good": ca.mint("good", "good"), "doomed": ca.mint("doomed", "doomed"),
                "doomed2": ca.mint("doomed2", "doomed2"),
                "expired": ca.mint("expired", "expired", start="20200101000000Z",
                                   end="20210101000000Z"),
                "node1-old": ca.mint("node1-old", "node1", "node", "20200101000000Z",
                                     "20210101000000Z"),
                "node1-revoked": ca.mint("node1-revoked", "node1", "node")}
        start_fails(c, ca, "expired own certificate", ["--cert-key-file", pems["node1-old"]],
                    "expired on 2021-01-01")
        ca.revoke("node1-revoked")
        ca.crl(crl)
        start_fails(c, ca, "revoked own certificate",
                    ["--cert-key-file", pems["node1-revoked"]], "revoked (CRL)")
        start_fails(c, ca, "own certificate without serverAuth",
                    ["--cert-key-file", ca.mint("node1-client-only", "node1", "node",
                                                ext="node_client_only_ext")],
                    "extendedKeyUsage lacks serverAuth (a node certificate needs serverAuth "
                    "and clientAuth)")
        urls = {i: "http://127.0.0.1:%d/metrics" % p
                for i, p in zip(sorted(c.peer_port), free_ports(3))}
        for i in sorted(c.peer_port):
            c.start(i, "--bootstrap", "--metrics", urls[i])
        leader = c.wait_leader()
        check("a client certificate works before the reload", works(c, leader, pems["doomed"]))
        check("an expired client certificate is refused, the log says expired on <date>",
              refused_as(c, leader, pems["expired"], "expired on 2021-01-01"))
        test_usage(c, ca, pems, leader)
        test_reload(c, ca, crl, pems, leader)
        test_future_cert_logged(c, ca, leader)
        test_renewal(c, ca, leader)
        test_bad_reload(c, crl, pems, leader)
        test_expired_crl_reload(c, ca, crl, pems, leader)
        test_spaced_cn(c, ca, pems, leader)
        test_open_key_reload(c, pems, leader)
        test_missing_file_reload(c, pems, leader)
        test_own_revoked_reload(c, ca, crl, pems, leader)
        test_crl_lapsing(c, ca, crl, leader, urls[leader])
    except Exception as e:  # a crashed step fails the suite
        check("certs test", False, "raised %r" % (e,))
    finally:
        c.stop_all()
        check.no_sanitizer_reports(c)
    return check.summary()


if __name__ == "__main__":
    sys.exit(main())
