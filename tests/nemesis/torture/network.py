"""The campaign's network: each daemon in a network namespace of its own,
joined to a bridge in the host's namespace by a veth pair. Clients run in the
host's namespace and reach every daemon through the bridge.

Faults are iptables rules in a daemon's namespace: a partition drops what a
node sends to some addresses (one way, or both ways with the peer's rules);
a lossy link drops a random share of what a node receives and sends. TCP
holds back what a dropped link did not deliver and sends it once the link
heals, so a healed partition also delivers old messages late: the delayed
packet of the classic lease failure. (This kernel has no sch_netem, so no
fixed latency is added.)

Every name the campaign creates starts with its tag, so that `sweep` can
remove what an interrupted campaign left behind.
"""
import ipaddress
import subprocess

HOST = "host"  # the clients' side: the bridge's own address


def run(*argv, check=True):
    r = subprocess.run(list(argv), capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)}: {r.stderr.strip() or r.returncode}")
    return r


class Network:
    def __init__(self, tag, names, subnet="10.77.0.0/24"):
        """tag: a short prefix (at most 6 characters) of every name made;
        names: the daemons, each given a namespace and an address."""
        if len(tag) > 6:
            raise ValueError("the tag names interfaces: at most 6 characters")
        self.tag = tag
        net = ipaddress.ip_network(subnet)
        hosts = list(net.hosts())
        self.prefix = net.prefixlen
        self.bridge = f"{tag}br"
        self.addresses = {HOST: str(hosts[0])}
        for i, name in enumerate(names):
            self.addresses[name] = str(hosts[9 + i])
        self.names = list(names)
        self.made = []  # what up() made, in order, for down()
        self.rules = {name: [] for name in names}  # iptables rules in force, per namespace
        self.slowed = set()  # names whose links are slowed (tc tbf both ways)

    def namespace(self, name):
        return f"{self.tag}-{name}"

    def in_namespace(self, name):
        """The argv prefix that runs a command in `name`'s namespace."""
        return ["ip", "netns", "exec", self.namespace(name)]

    def up(self):
        run("ip", "link", "add", self.bridge, "type", "bridge")
        self.made.append(("link", self.bridge))
        run("ip", "addr", "add", f"{self.addresses[HOST]}/{self.prefix}", "dev", self.bridge)
        run("ip", "link", "set", self.bridge, "up")
        for i, name in enumerate(self.names):
            ns = self.namespace(name)
            outside, inside = f"{self.tag}v{i}", f"{self.tag}p{i}"
            run("ip", "netns", "add", ns)
            self.made.append(("netns", ns))
            run("ip", "link", "add", outside, "type", "veth", "peer", "name", inside)
            self.made.append(("link", outside))
            run("ip", "link", "set", inside, "netns", ns)
            run(*self.in_namespace(name), "ip", "link", "set", inside, "name", "eth0")
            run(*self.in_namespace(name), "ip", "addr", "add", f"{self.addresses[name]}/{self.prefix}", "dev", "eth0")
            run(*self.in_namespace(name), "ip", "link", "set", "eth0", "up")
            run(*self.in_namespace(name), "ip", "link", "set", "lo", "up")
            run("ip", "link", "set", outside, "master", self.bridge)
            run("ip", "link", "set", outside, "up")

    def down(self):
        for kind, what in reversed(self.made):
            if kind == "netns":
                run("ip", "netns", "del", what, check=False)
            else:
                run("ip", "link", "del", what, check=False)
        self.made = []

    def _rule(self, name, rule):
        run(*self.in_namespace(name), "iptables", "-A", *rule)
        self.rules[name].append(rule)

    def cut(self, name, to):
        """`name` sends nothing to `to` (a daemon, or HOST: the clients)."""
        self._rule(name, ["OUTPUT", "-d", self.addresses[to], "-j", "DROP"])

    def lossy(self, name, share):
        """`name` drops `share` of what it sends and of what it receives."""
        for chain in ("INPUT", "OUTPUT"):
            self._rule(name, [chain, "-m", "statistic", "--mode", "random", "--probability", f"{share:.3f}", "-j",
                              "DROP"])

    def slow(self, name, kbit):
        """`name`'s link carries `kbit` kbit/s each way, queueing what exceeds
        it up to 400 ms (then dropping): this kernel has no netem to add a
        fixed latency, but a congested link delays every message."""
        i = self.names.index(name)
        shape = ["root", "tbf", "rate", f"{kbit}kbit", "burst", "4kb", "latency", "400ms"]
        run(*self.in_namespace(name), "tc", "qdisc", "add", "dev", "eth0", *shape)
        self.slowed.add(name)
        run("tc", "qdisc", "add", "dev", f"{self.tag}v{i}", *shape)

    def heal(self, name=None):
        for n in [name] if name else self.names:
            for rule in reversed(self.rules[n]):
                run(*self.in_namespace(n), "iptables", "-D", *rule, check=False)
            self.rules[n] = []
            if n in self.slowed:
                run(*self.in_namespace(n), "tc", "qdisc", "del", "dev", "eth0", "root", check=False)
                run("tc", "qdisc", "del", "dev", f"{self.tag}v{self.names.index(n)}", "root", check=False)
                self.slowed.discard(n)


def leftovers(tag_prefix):
    """Namespaces whose names start with `tag_prefix`."""
    return [line.split()[0] for line in run("ip", "netns", "list").stdout.splitlines()
            if line.split() and line.split()[0].startswith(tag_prefix)]


def sweep(tag_prefix):
    """Removes namespaces and links whose names start with `tag_prefix`: what
    interrupted campaigns left. Returns what it removed."""
    removed = []
    for ns in leftovers(tag_prefix):
        for pid in run("ip", "netns", "pids", ns, check=False).stdout.split():
            run("kill", "-KILL", pid, check=False)
            removed.append(f"process {pid}")
        run("ip", "netns", "del", ns, check=False)
        removed.append(ns)
    for line in run("ip", "-o", "link", "show").stdout.splitlines():
        parts = line.split(":")
        if len(parts) > 1:
            link = parts[1].strip().split("@")[0]
            if link.startswith(tag_prefix):
                run("ip", "link", "del", link, check=False)
                removed.append(link)
    return removed
