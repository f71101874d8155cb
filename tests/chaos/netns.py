"""netns.py - the chaos suite's network: one network namespace per daemon and
per client group, each with a veth link to a Linux bridge that lives in a
namespace of its own, so no traffic of the test touches the host's network.
Partitions are nftables rules inside the namespaces (a set of blocked peer
addresses per namespace, dropped both ways); healing empties the sets.

Names carry the run's PID (elc<PID>-n1, ...): parallel runs cannot collide,
and addresses (10.77.0.0/24) only exist inside this run's namespaces.

    net = Net("elc%d" % os.getpid())
    net.add("n1", "10.77.0.11") ...
    net.block("n1", "n2")     # both ways
    net.heal()
    net.cleanup()             # deletes every namespace (and so every link)
"""
import subprocess

NFT_TABLE = """
table inet chaos {
    set blocked { type ipv4_addr; }
    chain input { type filter hook input priority 0; ip saddr @blocked drop; }
    chain output { type filter hook output priority 0; ip daddr @blocked drop; }
}
"""


def sh(*args, check=True, **kw):
    return subprocess.run(list(args), check=check, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, **kw)


class Net:
    def __init__(self, prefix):
        self.prefix = prefix
        self.addr = {}       # member -> IPv4 address
        self.made = []       # namespaces created, for cleanup
        self.blocked = set()  # (a, b) pairs blocked, both directions
        self.bridge = self.ns("br")
        try:
            self._netns_add(self.bridge)
            sh("ip", "-n", self.bridge, "link", "add", "br0", "type", "bridge")
            sh("ip", "-n", self.bridge, "link", "set", "br0", "up")
        except (subprocess.CalledProcessError, OSError):
            self.cleanup()
            raise

    def ns(self, member):
        return "%s-%s" % (self.prefix, member)

    def _netns_add(self, name):
        sh("ip", "netns", "add", name)
        self.made.append(name)
        sh("ip", "-n", name, "link", "set", "lo", "up")

    def add(self, member, ip):
        """A namespace for member, linked to the bridge, with address ip/24."""
        name = self.ns(member)
        self._netns_add(name)
        port = "p-" + member
        sh("ip", "-n", self.bridge, "link", "add", port, "type", "veth", "peer", "name", "eth0",
           "netns", name)
        sh("ip", "-n", self.bridge, "link", "set", port, "master", "br0", "up")
        sh("ip", "-n", name, "addr", "add", ip + "/24", "dev", "eth0")
        sh("ip", "-n", name, "link", "set", "eth0", "up")
        sh("ip", "netns", "exec", name, "nft", "-f", "-", input=NFT_TABLE)
        self.addr[member] = ip

    def exec_args(self, member):
        """The command prefix that runs a program inside member's namespace."""
        return ["ip", "netns", "exec", self.ns(member)]

    def _set(self, op, member, ip):
        sh("ip", "netns", "exec", self.ns(member), "nft", op, "element", "inet", "chaos",
           "blocked", "{ %s }" % ip, check=False)

    def block(self, a, b):
        """Drop all traffic between members a and b (both ways)."""
        if (a, b) in self.blocked or (b, a) in self.blocked or a == b:
            return
        self.blocked.add((a, b))
        self._set("add", a, self.addr[b])
        self._set("add", b, self.addr[a])

    def block_at(self, a, b):
        """Drop traffic between a and b both ways, by rules in a's namespace
        only: b's kernel sees its packets lost on the wire and backs off its
        retransmits, as behind a cut cable (a sender whose own output rule
        drops a packet retries every 500 ms instead, never backing off)."""
        if (a, b) in self.blocked or (b, a) in self.blocked or a == b:
            return
        self.blocked.add((a, b))
        self._set("add", a, self.addr[b])

    def heal(self):
        for a, b in list(self.blocked):
            self._set("delete", a, self.addr[b])
            self._set("delete", b, self.addr[a])
        self.blocked.clear()

    def cleanup(self):
        for name in reversed(self.made):
            sh("ip", "netns", "del", name, check=False)
        self.made = []
