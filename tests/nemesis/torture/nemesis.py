"""The nemesis: faults drawn from a seed, one at a time on the daemons, and
pauses of writer clients past their sessions' lease beside them. Within the
budget the docs promise to survive, at most one lock group node and one
replica are faulty at any moment (f = 1 of 3); `over_budget` breaks two of
a group at once, where palisade must refuse to answer rather than answer
wrongly.

Each fault is one line of the nemesis log (JSON): kind, target, start and
end (microseconds of CLOCK_MONOTONIC, as the clients' histories), and for a
kill or pause of the master, how long the group went without one.
"""
import json
import signal
import threading
import time

from network import HOST

# Every kind of fault, and what it does to its target.
KINDS = {
    "kill": "SIGKILL of a node, then a restart",
    "kill-master": "SIGKILL of the lock group's master, then a restart",
    "pause": "SIGSTOP of a node, then SIGCONT",
    "pause-master": "SIGSTOP of the lock group's master, then SIGCONT",
    "partition": "no traffic between the node and the other nodes, both ways",
    "one-way": "the node's messages to the other nodes are dropped; theirs reach it",
    "clients-cut": "the node and the clients cannot reach each other",
    "loss": "a random share of the node's packets dropped",
    "slow": "the node's link slowed to 16-128 kbit/s each way: messages queue up to 400 ms",
    "clock": "the node's wall clock stepped within max_clock_offset (500 ms)",
    "clock-beyond": "the node's wall clock stepped beyond max_clock_offset",
    "disk-sync": "a replica's fsyncs fail (EIO)",
    "disk-full": "a replica's disk fills up",
}


def now_us():
    return time.monotonic_ns() // 1000


class Nemesis:
    def __init__(self, rng, cluster, network, log_path, kinds, over_budget=False):
        self.rng, self.cluster, self.network = rng, cluster, network
        self.kinds = list(kinds)
        self.over_budget = over_budget
        self.log = open(log_path, "a")
        self.lock = threading.Lock()
        self.counts = {}

    def record(self, entry):
        with self.lock:
            self.log.write(json.dumps(entry) + "\n")
            self.log.flush()
            self.counts[entry["kind"]] = self.counts.get(entry["kind"], 0) + 1

    def targets(self, kind):
        if kind.startswith("disk"):
            return [self.rng.choice(self.cluster.replica_names)]
        group = self.rng.choice([self.cluster.lockd_names, self.cluster.replica_names])
        if kind.endswith("-master"):
            group = self.cluster.lockd_names
            master = self.cluster.master()
            if master:
                others = [n for n in group if n != master]
                return [master] + (self.rng.sample(others, 1) if self.over_budget else [])
        count = 2 if self.over_budget else 1
        return self.rng.sample(group, count)

    def apply(self, kind, targets, seconds):
        """Breaks the targets, waits, heals them. Returns extra fields for the log."""
        extra = {}
        master_before = self.cluster.master() if kind.startswith(("kill", "pause")) else None
        hit_master = master_before in targets
        hurt, heal = self.fault(kind.removesuffix("-master"), extra)
        for t in targets:
            hurt(t)
        failover_from = now_us()
        found = self.wait_for_master(failover_from, seconds) if hit_master else time.sleep(seconds)
        for t in targets:
            heal(t)
        if hit_master:
            # A master's lease outlives a short fault: watch on after the heal.
            extra["failover_ms"] = found if found is not None else self.wait_for_master(failover_from, 30, first=True)
        return extra

    def fault(self, kind, extra):
        """What breaks a target as `kind` says, and what heals it afterwards."""
        cluster, net = self.cluster, self.network
        if kind == "kill":
            return (lambda t: cluster.daemons[t].kill()), (lambda t: cluster.daemons[t].start())
        if kind == "pause":
            return (lambda t: cluster.daemons[t].signal(signal.SIGSTOP),
                    lambda t: cluster.daemons[t].signal(signal.SIGCONT))
        if kind in ("partition", "one-way"):
            def cut(t):
                for other in (n for n in net.names if n != t):
                    net.cut(t, other)
                    if kind == "partition":
                        net.cut(other, t)
            return cut, (lambda t: net.heal())  # the others' rules too
        if kind == "clients-cut":
            return (lambda t: net.cut(t, HOST)), net.heal
        if kind == "slow":
            kbit = extra["kbit"] = self.rng.choice([16, 32, 64, 128])
            return (lambda t: net.slow(t, kbit)), net.heal
        if kind == "loss":
            share = extra["share"] = round(self.rng.uniform(0.1, 0.5), 3)
            return (lambda t: net.lossy(t, share)), net.heal
        if kind in ("clock", "clock-beyond"):
            offset = self.rng.uniform(0.05, 0.45) if kind == "clock" else self.rng.uniform(1.0, 30.0)
            offset = extra["offset_s"] = round(offset * self.rng.choice([-1, 1]), 3)
            return (lambda t: cluster.set_clock(t, offset)), (lambda t: cluster.set_clock(t, 0))
        # disk-sync, disk-full. A replica whose commit failed refuses writes
        # until restarted (docs/storage.md): the disk fixed, the operator
        # restarts it.
        spoil = cluster.fail_syncs if kind == "disk-sync" else cluster.fill_disk

        def mend(t):
            spoil(t, False)
            cluster.daemons[t].restart()
        return (lambda t: spoil(t, True)), mend

    def wait_for_master(self, since_us, seconds, first=False):
        """Watches for a master for `seconds` (until the first, with `first`);
        returns the milliseconds from `since_us` until one answered, or None."""
        end = time.monotonic() + seconds
        found = None
        while time.monotonic() < end:
            if found is None and self.cluster.master() is not None:
                found = (now_us() - since_us) // 1000
                if first:
                    break
            time.sleep(0.2)
        return found

    def run(self, until, quiet_s=(0.5, 2.0), fault_s=(2.0, 6.0)):
        """Faults one after another, with quiet gaps, until `until` (monotonic
        seconds): every kind once, in an order drawn from the seed, then again."""
        order = []
        while time.monotonic() < until:
            time.sleep(self.rng.uniform(*quiet_s))
            if time.monotonic() >= until:
                break
            order = order or self.rng.sample(self.kinds, len(self.kinds))
            kind = order.pop(0)
            targets = self.targets(kind)
            seconds = min(self.rng.uniform(*fault_s), max(0.5, until - time.monotonic()))
            start = now_us()
            extra = self.apply(kind, targets, seconds)
            self.record({"kind": kind, "targets": targets, "start": start, "end": now_us(), **extra})


class HistoryTail:
    """Follows one writer's history file as it grows: the last grant it
    recorded, how many writes it made with it, and the newest token it was
    granted of each lock."""

    def __init__(self, path):
        self.path, self.offset, self.partial = path, 0, b""
        self.grant, self.made, self.newest = None, 0, {}

    def poll(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                data = f.read()
        except FileNotFoundError:
            return
        self.offset += len(data)
        *lines, self.partial = (self.partial + data).split(b"\n")
        for line in lines:
            call = json.loads(line)
            if call["op"] == "acquire":
                ok = call["result"] == "ok"
                self.grant, self.made = (call if ok else None), 0
                if ok:
                    self.newest[call["lock"]] = max(self.newest.get(call["lock"], 0), call["token"])
            elif call["op"] in ("put", "del"):
                self.made += 1

    def writes_to_come(self):
        """The grant it holds with at least one write still to start, or
        None. Up to one write may be in flight: two must be left to make."""
        if self.grant is None or self.made > self.grant.get("writes", 0) - 2:
            return None
        return self.grant


def stopped(pid, timeout_s=1.0):
    """Whether the process is stopped (state T): a SIGSTOP takes effect a
    moment after kill() returns."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "T":
                    return True
        except (FileNotFoundError, IndexError):
            return False
        time.sleep(0.001)
    return False


class ClientPauser:
    """Now and then SIGSTOPs a writer that holds a lock with writes still to
    make, keeps it stopped until another writer was granted that lock (its
    session expired meanwhile), and SIGCONTs it: it wakes holding a grant
    that is gone and writes with it, a zombie write. Writers caught between
    grants are let go at once and another is tried."""

    def __init__(self, rng, clients, nemesis, lease_s):
        self.rng, self.clients, self.nemesis, self.lease_s = rng, clients, nemesis, lease_s
        self.tails = {c.number: HistoryTail(c.history) for c in clients}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.wait(self.rng.uniform(2.0, 8.0)):
            self.pause_one()

    def superseded(self, client, grant):
        for number, tail in self.tails.items():
            tail.poll()
            if number != client.number and tail.newest.get(grant["lock"], 0) > grant["token"]:
                return True
        return False

    def pause_one(self):
        for _ in range(500):
            if self.stop.is_set():
                return
            client = self.rng.choice(self.clients)
            if client.poll() is not None:
                continue
            start = now_us()
            client.send_signal(signal.SIGSTOP)
            tail = self.tails[client.number]
            tail.poll()
            grant = tail.writes_to_come() if stopped(client.pid) else None
            if grant is None:
                client.send_signal(signal.SIGCONT)
                self.stop.wait(self.rng.uniform(0.01, 0.05))
                continue
            # Its session must expire and the lock go to another writer;
            # a writer that never gets it (faults) ends the pause later.
            deadline = time.monotonic() + self.lease_s + 30
            superseded = False
            while not superseded and time.monotonic() < deadline and not self.stop.wait(0.1):
                superseded = self.superseded(client, grant)
            client.send_signal(signal.SIGCONT)
            self.nemesis.record({"kind": "client-pause", "targets": [f"client-{client.number}"], "start": start,
                                 "end": now_us(), "lock": grant["lock"], "token": grant["token"],
                                 "superseded": superseded})
            return
