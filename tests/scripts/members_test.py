#!/usr/bin/env python3
"""`palisade member` on a local cluster of five lockd nodes, under load.

While a loop takes a lock and writes under it (`palisade lock` and `palisade
put`, as a person would), the lock group goes from five members to three,
back to five, then replaces its master's node by another, each change with
one `palisade member` command. Every change is applied (the version counts
them, `member list` shows the new members), the removed master stops
leading, every step of the loop succeeds, tokens strictly increase, and every
key the loop wrote reads back. Bad ids are usage errors that change nothing.

Then every member is replaced, one by one, by a new node on a new port and a
new data directory, as docs/operations.md ("Replacing a dead node") tells a
person to: `palisade keygen`, the new `[[identity]]` and `[[lockd]]` entries
appended to the cluster file, SIGHUP to the running daemons (no restart:
their pids stay), the new node started with `--join`, `palisade member
replace OLD NEW`, the old node stopped and its entries taken out of the file.
The removed nodes log that they were removed; a new node restarted without
`--join` comes back a member (its data directory kept its first members).
A `palisade lock` started before these replacements holds its lock through
all of them (its client learns the new members, with their keys, from its
KeepAlive replies) and exits 0 once released.
At the end, on the group of new nodes, docs/cli.md's paused holder: stopped
past its lease, it loses the lock, and its late writes are refused on every
key.
Each replacement's time (until the new node has caught up with the master)
is printed, with the bytes the new node took from its peers to catch up
(`palisade_lockd_peer_bytes_taken_total` on its /metrics).

Usage: members_test.py SOURCE_DIR PALISADE
"""
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

SOURCE = Path(sys.argv[1]).resolve()
PALISADE = Path(sys.argv[2]).resolve()
sys.path.insert(0, str(SOURCE / "contrib" / "grafana"))
from metrics_cluster import (HandStarted, LockLoad, MetricsCluster, append_to_file, exited, http_get, ports_free,  # noqa: E402
                             replace_file, wait_until)

LOCKD = PALISADE.parent.parent / "lockgroup" / "palisade-lockd"


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def members(cluster):
    """(version, [ids], {id: role}) of the member list."""
    listed = cluster.member_list()
    return listed["version"], [m["id"] for m in listed["members"]], {m["id"]: m["role"] for m in listed["members"]}


def change(cluster, *args):
    started = time.monotonic()
    done = cluster.cli("member", *args, "-o", "json", check=False)
    took = time.monotonic() - started
    print(f"+ palisade member {' '.join(args)}: exit {done.returncode} in {took:.1f} s: {done.stdout.strip()}",
          flush=True)
    check(done.returncode == 0, f"palisade member {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return json.loads(done.stdout)


def check_refused(cluster, args, code, words):
    done = cluster.cli("member", *args, check=False)
    print(f"+ palisade member {' '.join(args)}: exit {done.returncode}: {done.stderr.strip()}", flush=True)
    check(done.returncode == code, f"palisade member {' '.join(args)}: exit {done.returncode}, not {code}")
    check(words in done.stderr, f"palisade member {' '.join(args)} did not say '{words}': {done.stderr}")


def master_id(cluster):
    _, _, roles = members(cluster)
    masters = [i for i, role in roles.items() if role == "master"]
    return masters[0] if masters else None


def free_port_below_32768(taken, first=31000):
    for port in range(first, 32700):
        if port not in taken and ports_free(port, 1):
            return port
    raise RuntimeError("no free port")


class NewDaemons(HandStarted):
    """Daemons this test adds by hand, as an operator would."""

    def __init__(self, cluster):
        super().__init__(cluster.dir)
        self.cluster = cluster
        self.ports = set()
        self.first_port = 31000  # tests that run at once take ports apart
        self.metrics = {}  # lockd-ID -> its --metrics-listen address

    def new_identity(self, name, role):
        """palisade keygen NAME, and its [[identity]] appended to the cluster file; a free port for it."""
        key = self.cluster.dir / "keys" / f"{name}.key"
        done = subprocess.run([str(PALISADE), "keygen", name, "--out", str(key)], capture_output=True, text=True,
                              check=True)
        public = re.search(r"public key: (\S+)", done.stdout).group(1)
        port = free_port_below_32768(self.ports, self.first_port)
        self.ports.add(port)
        append_to_file(self.cluster.cluster_file, f"\n[[identity]]\nname = '{name}'\nkeys = ['{public}']\nroles = ['{role}']\n")
        return port


class NewNodes(NewDaemons):
    """The lockd nodes this test adds."""

    def add_to_file(self, node_id):
        """The node's identity and endpoint appended to the cluster file."""
        name = f"lockd-{node_id}"
        port = self.new_identity(name, "lockd")
        append_to_file(self.cluster.cluster_file,
                       f"\n[[lockd]]\nid = {node_id}\nendpoint = 'tcp://127.0.0.1:{port}'\nidentity = '{name}'\n")

    def start_node(self, node_id, join):
        name = f"lockd-{node_id}"
        if name not in self.metrics:
            port = free_port_below_32768(self.ports, self.first_port)
            self.ports.add(port)
            self.metrics[name] = f"127.0.0.1:{port}"
        self.start(name, [str(LOCKD), "--id", str(node_id), "--cluster", self.cluster.cluster_file, "--data-dir",
                          str(self.cluster.dir / name), "--key", str(self.cluster.dir / "keys" / f"{name}.key"),
                          "--metrics-listen", self.metrics[name]] + (["--join"] if join else []))

    def peer_bytes_taken(self, node_id):
        """What lockd node_id's /metrics says it took from its peers (its catch-up, for a node that joined)."""
        status, body = http_get(self.metrics[f"lockd-{node_id}"], "/metrics")
        check(status == 200, f"lockd-{node_id}'s /metrics: {status} {body}")
        line = next(li for li in body.splitlines() if li.startswith("palisade_lockd_peer_bytes_taken_total "))
        return int(float(line.split()[1]))

    def stop_node(self, node_id):
        self.stop(f"lockd-{node_id}")


def remove_from_file(cluster_file, node_id):
    """Takes node_id's [[lockd]] entry and its identity out of the cluster file."""
    text = Path(cluster_file).read_text()
    blocks = re.split(r"\n(?=\[)", text)
    kept = [b for b in blocks if not (b.startswith("[[lockd]]") and re.search(rf"^id = {node_id}$", b, re.M))
            and not (b.startswith("[[identity]]") and f"name = 'lockd-{node_id}'" in b)]
    check(len(kept) == len(blocks) - 2, f"lockd-{node_id}'s entries are not both in the cluster file")
    replace_file(cluster_file, "\n".join(kept))


def applied_slots(cluster):
    """{lockd id: applied slot} of the nodes `palisade status` reaches, and the master's id."""
    status = json.loads(cluster.cli("status", "-o", "json", check=False).stdout)
    nodes = status["lock_group"]["nodes"]
    master = next((n["id"] for n in nodes if n["role"] == "master"), None)
    return {n["id"]: n["applied_slot"] for n in nodes if n["applied_slot"] is not None}, master


def caught_up(cluster, node_id):
    """The slot node_id applied once it reached the master's; None while it lags."""
    slots, master = applied_slots(cluster)
    if master is None or node_id not in slots or slots[node_id] < slots[master] - 2:
        return None
    return slots[node_id]


def log_of(cluster, node_id):
    return (cluster.dir / f"lockd-{node_id}.log").read_text()


def check_unlisting_a_member_is_refused(cluster, member, load):
    """A reload of a cluster file without a member's entry changes nothing: the member keeps its vote."""
    kept = Path(cluster.cluster_file).read_text()
    remove_from_file(cluster.cluster_file, member)
    others = [name for name in cluster.pids if name.startswith("lockd-") and name != f"lockd-{member}"]
    cluster.reload()
    for name in others:
        wait_until(f"{name} to refuse the reload",
                   lambda: "no longer lists lock group member(s)" in (cluster.dir / f"{name}.log").read_text(),
                   timeout=15)
    replace_file(cluster.cluster_file, kept)
    cluster.reload()
    load.wait_for_steps(2)
    print(f"ok: a cluster file without member lockd-{member}'s entry was refused by {len(others)} nodes", flush=True)


def replace_every_member(cluster, load, nodes):
    """Each member replaced by a new node on a new port and data directory; returns the report lines."""
    report = []
    _, current, roles = members(cluster)
    # A follower's: clients read the same file, and find the master through it.
    check_unlisting_a_member_is_refused(cluster, next(i for i in current if roles.get(i) == "follower"), load)
    next_id = 6
    for old in current:
        new = next_id
        next_id += 1
        running = {**cluster.pids, **nodes.pids()}
        old_name = f"lockd-{old}"
        started = time.monotonic()
        nodes.add_to_file(new)
        for pid in running.values():
            os.kill(pid, signal.SIGHUP)
        nodes.start_node(new, join=True)
        change(cluster, "replace", str(old), str(new))
        _, ids, _ = members(cluster)
        check(old not in ids and new in ids, f"after replacing {old} by {new}: {ids}")
        wait_until(f"lockd-{new} to log that it is a member",
                   lambda: "a member of the lock group now" in log_of(cluster, new), timeout=30)
        wait_until(f"lockd-{new} to catch up", lambda: caught_up(cluster, new) is not None, timeout=30)
        took = time.monotonic() - started
        slot = caught_up(cluster, new)
        copied = nodes.peer_bytes_taken(new)
        check(copied > 0, f"lockd-{new} took no bytes from its peers")
        wait_until(f"{old_name} to log its removal", lambda: "removed from the lock group" in log_of(cluster, old),
                   timeout=30)
        if old_name in cluster.pids:
            cluster.kill(old_name, signal.SIGTERM)
        else:
            nodes.stop_node(old)
        remove_from_file(cluster.cluster_file, old)
        for name, pid in {**cluster.pids, **nodes.pids()}.items():
            os.kill(pid, signal.SIGHUP)
            if name in running:
                check(running[name] == pid and not exited(pid), f"{name} was restarted or died")
        report.append(f"lockd-{old} -> lockd-{new} in {took:.1f} s, caught up to slot {slot}, {copied} bytes taken "
                      "from its peers")
        print("+ " + report[-1], flush=True)
        load.wait_for_steps(3)
    # A node that joined, restarted without --join: still a member.
    last = next_id - 1
    nodes.stop_node(last)
    nodes.start_node(last, join=False)
    wait_until(f"lockd-{last} to answer as a member", lambda: members(cluster)[2].get(last) in ("master", "follower"),
               timeout=30)
    check("first members none" in log_of(cluster, last), f"lockd-{last} did not log its kept first members")
    load.wait_for_steps(3)
    return report


def check_member_keys(cluster):
    """`member list -o json` shows the key the membership holds for each member: the one the cluster file gives
    its identity (the CLI took it from there when it made the change)."""
    config = tomllib.loads(Path(cluster.cluster_file).read_text())
    keys = {i["name"]: i["keys"][0] for i in config["identity"]}
    identity = {n["id"]: n["identity"] for n in config["lockd"]}
    for m in cluster.member_list()["members"]:
        check(m["key"] == keys[identity[m["id"]]], f"lockd-{m['id']}'s key in `member list`: {m['key']}")
    print("ok: `member list` shows each member's key, the cluster file's", flush=True)


def connected_to(pid, port):
    """Whether process pid has an established TCP connection to 127.0.0.1:port (/proc, no tools needed)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        remote_port = int(fields[2].split(":")[1], 16)
        if remote_port == port and fields[3] == "01" and fields[9] in inodes:
            return True
    return False


def check_reload_connects(cluster):
    """After SIGHUP a follower connects again to every peer, not only to those it sends to.

    A follower talks to the master alone; were its sockets made only as
    messages go out, the first prepare or promise to another peer after a
    reload (or a membership change) would be dropped while its connection is
    being made, and a campaign would fail.
    """
    listed = cluster.member_list()
    roles = {m["id"]: m["role"] for m in listed["members"]}
    followers = [i for i in roles if roles[i] == "follower"]
    check(len(followers) >= 2, f"two followers to watch: {roles}")
    watcher, peer = followers[:2]
    # Taken before the reload: the group may be between masters just after it.
    port = int(next(m["address"] for m in listed["members"] if m["id"] == peer).rsplit(":", 1)[1])
    cluster.reload()
    wait_until(f"lockd-{watcher} to connect to lockd-{peer} after SIGHUP",
               lambda: connected_to(cluster.pids[f"lockd-{watcher}"], port), timeout=15)
    print(f"ok: after SIGHUP, follower lockd-{watcher} is connected to follower lockd-{peer}", flush=True)


# Seconds: the long-running holder's session lease. Short, so that a client that did not follow loses its
# session soon; long enough that a ThreadSanitizer build's processes, slowed on two busy cores, do not lose it
# anyway (4 s did once in CI, beside another test's cluster).
LONG_TTL = 8


def start_long_holder(cluster):
    """A `palisade lock` that holds its lock while every member is replaced: its one client, started when
    the cluster file named only the first nodes, must follow the group to the new ones."""
    held, release, sequencer = (cluster.dir / f"long.{what}" for what in ("held", "release", "sequencer"))
    holder = subprocess.Popen([str(PALISADE), "--cluster", cluster.cluster_file, "lock", "-v", "long-running", "--ttl",
                               f"{LONG_TTL}s", "--", "sh", "-c", f'echo "$PALISADE_SEQUENCER" > {sequencer}; '
                               f"touch {held}; while [ ! -e {release} ]; do sleep 0.1; done"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wait_until("the long-running holder to hold its lock", held.exists, timeout=60)
    return holder, release


def finish_long_holder(cluster, holder, release, replaced_at):
    """Still holding after the replacements, it ends as it would have without them. A client that did not
    follow the group has reached no node since the last first one stopped (before `replaced_at`): the master
    expires its session one lease later, and its grant is no longer current."""
    while time.monotonic() < replaced_at + 2 * LONG_TTL:
        time.sleep(0.1)
    if holder.poll() is not None:
        check(False, f"the long-running holder ended early, exit {holder.returncode}: {holder.stderr.read()}")
    sequencer = (cluster.dir / "long.sequencer").read_text().strip()
    current = cluster.cli("check-sequencer", sequencer, check=False)
    if current.returncode != 0:
        release.touch()  # its command, which shares its stderr, ends too
        holder.kill()
        holder.wait()
        check(False, f"the long-running holder's grant, after the replacements: exit {current.returncode}: "
              f"{current.stdout} {current.stderr}\nthe holder's stderr:\n{holder.stderr.read()}")
    release.touch()
    code = holder.wait(timeout=60)
    check(code == 0, f"the long-running holder exited {code}, not 0: {holder.stderr.read()}")
    print("ok: a `palisade lock` started before the replacements held its lock on the new nodes and exited 0",
          flush=True)


def zombie_drill(cluster):
    """docs/cli.md's paused holder, on the group of replaced nodes: a holder stopped past its lease loses
    the lock, the next holder writes, and the paused one's late writes are refused on every key."""
    keys = [f"drill-{i}" for i in range(5)]
    held = cluster.dir / "drill.held"
    sequencer = cluster.dir / "drill.sequencer"
    puts = "; ".join(f'"{PALISADE}" --cluster "{cluster.cluster_file}" put {k} paused-holder' for k in keys)
    holder = subprocess.Popen([str(PALISADE), "--cluster", cluster.cluster_file, "lock", "drill", "--ttl", "2s", "--",
                               "sh", "-c", f'echo "$PALISADE_SEQUENCER" > {sequencer}; {puts}; touch {held}; '
                               "exec sleep 600"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        wait_until("the drill's holder to write its keys", held.exists, timeout=60)
        holder.send_signal(signal.SIGSTOP)
        puts = "; ".join(f'"{PALISADE}" --cluster "{cluster.cluster_file}" put {k} next-holder || exit 1' for k in keys)
        cluster.cli("lock", "drill", "--wait", "60s", "--", "sh", "-c", puts, timeout=90)
        old = sequencer.read_text().strip()
        for k in keys:
            late = cluster.cli("put", k, "zombie", "--sequencer", old, check=False)
            check(late.returncode == 3 and "fenced" in late.stderr,
                  f"the paused holder's late put of {k}: exit {late.returncode}: {late.stderr}")
            got = cluster.cli("get", k).stdout.strip()
            check(got == "next-holder", f"{k} reads {got!r} after the paused holder's late put")
        holder.send_signal(signal.SIGCONT)
        code = holder.wait(timeout=60)
        check(code == 7, f"the paused holder's `palisade lock` exited {code}, not 7: {holder.stderr.read()}")
    finally:
        if holder.poll() is None:
            holder.send_signal(signal.SIGCONT)
            holder.kill()
            holder.wait()
    print(f"ok: the paused holder's late writes were refused on all {len(keys)} keys", flush=True)


def main():
    with tempfile.TemporaryDirectory(prefix="palisade-members-") as tmp:
        with MetricsCluster(PALISADE, Path(tmp) / "cluster", lockd=5, replicas=3) as cluster:
            version, ids, _ = members(cluster)
            check((version, ids) == (0, [1, 2, 3, 4, 5]), f"a new cluster's members: version {version}, {ids}")
            check_refused(cluster, ["add", "9"], 2, "not in")
            check_refused(cluster, ["add", "3"], 2, "a member already")
            check_refused(cluster, ["remove", "9"], 2, "not a member")
            check_refused(cluster, ["replace", "1"], 2, "two node ids")
            check(members(cluster)[0] == 0, "a refused change changed the members")
            check_reload_connects(cluster)

            load = LockLoad(cluster)
            nodes = NewNodes(cluster)
            try:  # the nodes it started stop whatever fails
                load.start()
                try:
                    load.wait_for_steps(3)
                    # Five to three: the two it drops are not the master.
                    master = master_id(cluster)
                    check(master is not None, "no master before the changes")
                    dropped = [i for i in [1, 2, 3, 4, 5] if i != master][:2]
                    reply = change(cluster, "remove", *map(str, dropped))
                    check(reply["version"] == 1, f"the first change is version {reply['version']}")
                    version, ids, _ = members(cluster)
                    check(version == 1 and ids == sorted(set([1, 2, 3, 4, 5]) - set(dropped)),
                          f"after removing {dropped}: version {version}, {ids}")
                    load.wait_for_steps(3)
                    # Back to five.
                    change(cluster, "add", *map(str, dropped))
                    version, ids, _ = members(cluster)
                    check((version, ids) == (2, [1, 2, 3, 4, 5]),
                          f"after adding {dropped} back: version {version}, {ids}")
                    load.wait_for_steps(3)
                    # The master's own node out, another node of the file in: four
                    # members first, so that there is one to bring in.
                    spare = dropped[0]
                    change(cluster, "remove", str(spare))
                    master = master_id(cluster)
                    check(master is not None and master != spare, f"master {master} after removing {spare}")
                    change(cluster, "replace", str(master), str(spare))
                    wait_until("a new master among the members", lambda: master_id(cluster) not in (None, master),
                               timeout=30)
                    version, ids, roles = members(cluster)
                    check(version == 4 and master not in ids and spare in ids and len(ids) == 4,
                          f"after replacing master {master} by {spare}: version {version}, {ids}")
                    load.wait_for_steps(3)
                    holder, release = start_long_holder(cluster)
                    try:
                        report = replace_every_member(cluster, load, nodes)
                        check_member_keys(cluster)
                        finish_long_holder(cluster, holder, release, time.monotonic())
                    finally:
                        if holder.poll() is None:
                            release.touch()
                            holder.kill()
                            holder.wait()
                finally:
                    load.stopping.set()
                    load.join(timeout=180)
                zombie_drill(cluster)
            finally:
                nodes.stop_all()
            tokens = load.verify()
            print("replacements: " + "; ".join(report))
            print(f"ok: 5 -> 3 -> 5 -> 4 members, the master's node replaced, then every member replaced by a node "
                  f"on a new port and data directory without restarting the others, under load: {len(load.done)} "
                  f"lock-and-put steps all succeeded, tokens {tokens[0]}..{tokens[-1]} strictly increasing, every "
                  f"key read back")


if __name__ == "__main__":
    main()
