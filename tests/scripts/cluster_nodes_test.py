#!/usr/bin/env python3
"""`palisade cluster add lockd` and `palisade cluster remove lockd-N` on a
running local cluster (secure, as `cluster up` makes it), under load.

While a loop takes a lock and writes under it (`palisade lock` and `palisade
put`), two lockd nodes are added and two removed, the master's node first,
each with one command as a person types it; then two replicas are replaced
(`palisade cluster replace replica-N`), one added (`cluster add replica`)
and one removed (`cluster remove replica-N`). After each: the command says
what it did (`-o json` and text), `palisade member list` shows the members
and version it made, the daemons that were running keep their pids (none
restarted: they read the cluster file on SIGHUP), the added node runs with
--join and answers, and the removed one has exited, its log saying it was
removed. An add whose key may not change the members leaves a node that
runs but is not a member, says so and how to undo it, and `cluster remove`
undoes it. A replaced replica has exited and left the cluster file, its
identity and key; the new one runs on a new port and data directory, in the
replica set the lock group records, and the file lists it in the old one's
place; an added replica joins the set (4 replicas, W 3), a removed one
leaves it (3, W 3) as a replaced one leaves, and a second removal, which
would lower W, is refused; an addition with a key that may not change the
set is undone, leaving nothing of the new replica. A client's file that names only the lock group
then puts, gets and shows that set. Every step of the loop succeeds, tokens strictly increase, and
every key reads back. Then `cluster down` stops the added nodes too, and
`cluster up` brings the same members back (the added nodes without --join)
and elects a master, though only one of the first three nodes is left.
Bad input: no cluster, not up, lockd-99, replica-99 to replace, a replacement on a cluster started --insecure, and
--base-port on a cluster whose ports no longer follow it.

Usage: cluster_nodes_test.py SOURCE_DIR PALISADE
"""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

SOURCE = Path(sys.argv[1]).resolve()
PALISADE = Path(sys.argv[2]).resolve()
sys.path.insert(0, str(SOURCE / "contrib" / "grafana"))
from metrics_cluster import LockLoad, MetricsCluster, exited, http_get, wait_until  # noqa: E402
from members_test import members  # noqa: E402


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def palisade(*args, timeout=120):
    """Runs `palisade ARGS...` and shows what it printed."""
    started = time.monotonic()
    done = subprocess.run([str(PALISADE), *map(str, args)], capture_output=True, text=True, timeout=timeout)
    print(f"+ palisade {' '.join(map(str, args))}: exit {done.returncode} in {time.monotonic() - started:.1f} s",
          flush=True)
    for line in (done.stdout + done.stderr).splitlines():
        print("    " + line, flush=True)
    return done


def refused(args, code, words):
    done = palisade(*args)
    check(done.returncode == code, f"palisade {' '.join(map(str, args))}: exit {done.returncode}, not {code}")
    check(words in done.stderr, f"palisade {' '.join(map(str, args))} did not say '{words}': {done.stderr}")


def check_members(cluster, version, ids):
    # A master may be moving (an election under a slow build, such as TSan's):
    # ask until one answers with every member, for up to 30 s.
    deadline = time.monotonic() + 30
    while True:
        try:
            got_version, got_ids, roles = members(cluster)
            if list(roles.values()).count("master") == 1 and "not answering" not in roles.values():
                break
        except RuntimeError as no_master:
            if time.monotonic() >= deadline:
                raise
            print(f"    (asking again: {no_master})", flush=True)
        if time.monotonic() >= deadline:
            break
        time.sleep(0.5)
    check((got_version, got_ids) == (version, ids), f"members: version {got_version}, {got_ids}; not {version}, {ids}")
    check(list(roles.values()).count("master") == 1, f"not one master among the members: {roles}")
    check("not answering" not in roles.values(), f"a member does not answer: {roles}")
    return roles


def running(cluster):
    """{name: pid} of the daemons `cluster status` shows running."""
    return {d["name"]: d["pid"] for d in cluster.status() if d["state"] == "running"}


def check_kept(cluster, before):
    """The daemons that ran before run still, with the same pids: none was restarted."""
    now = running(cluster)
    for name, pid in before.items():
        check(now.get(name) == pid, f"{name} was pid {pid}, now {now.get(name)}: restarted or stopped")


def argv(pid):
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")


def recorded(cluster):
    """{name: pid} of DIR/daemons."""
    lines = (cluster.dir / "daemons").read_text().splitlines()
    return {line.split()[0]: int(line.split()[1]) for line in lines if line}


def lockd_ids_in_file(cluster):
    text = (cluster.dir / "cluster.toml").read_text()
    return sorted(int(chunk.split("id = ")[1].split()[0]) for chunk in text.split("[[lockd]]")[1:])


def check_gone(cluster, name, pid):
    """A removed node: exited, out of DIR/daemons, the cluster file (entry, identity) and DIR/keys."""
    check(exited(pid), f"{name} (pid {pid}) still runs")
    check(name not in recorded(cluster), f"{name} is still in DIR/daemons")
    node = int(name.split("-")[1])
    check(node not in lockd_ids_in_file(cluster), f"{name} is still a [[lockd]] of the cluster file")
    check(f"'{name}'" not in (cluster.dir / "cluster.toml").read_text(), f"{name}'s identity is still listed")
    check(not (cluster.dir / "keys" / f"{name}.key").exists(), f"{name}'s key file is still there")


def add_json(cluster, version, ids):
    before = running(cluster)
    done = palisade("cluster", "add", "lockd", "--dir", cluster.dir, "-o", "json")
    check(done.returncode == 0, f"cluster add lockd -o json: exit {done.returncode}")
    added = json.loads(done.stdout)
    name = f"lockd-{ids[-1]}"
    check(added["name"] == name and added["id"] == ids[-1], f"added {added['name']}, not {name}")
    check((added["members_version"], added["members"]) == (version, ids), f"add reported {added}")
    check(added["role"] == "follower", f"{name} reports role {added['role']}")
    check(added["dir"] == str(cluster.dir) and added["log"] == str(cluster.dir / f"{name}.log"), f"paths: {added}")
    pid = added["pid"]
    check(not exited(pid) and "--join" in argv(pid), f"{name} (pid {pid}) does not run with --join")
    check(recorded(cluster).get(name) == pid, f"DIR/daemons does not record {name} as pid {pid}")
    check(ids[-1] in lockd_ids_in_file(cluster), f"{name} is not in the cluster file")
    check((cluster.dir / "keys" / f"{name}.key").exists(), f"no key file for {name}")
    # The cluster runs with metrics: so does the node added to it.
    check(added["metrics"] is not None, f"{name} serves no metrics")
    wait_until(f"{name}'s /readyz", lambda: http_get(added["metrics"], "/readyz")[0] == 200, timeout=30)
    check_kept(cluster, before)
    check_members(cluster, version, ids)
    return pid


def add_text(cluster, version, ids):
    before = running(cluster)
    done = palisade("cluster", "add", "lockd", "--dir", cluster.dir)
    check(done.returncode == 0, f"cluster add lockd: exit {done.returncode}")
    name = f"lockd-{ids[-1]}"
    for words in [f"added {name} to the cluster in {cluster.dir}: pid ",
                  f"lock group members, version {version}: {', '.join(map(str, ids))} ({name}: follower)",
                  f"log: {cluster.dir}/{name}.log"]:
        check(words in done.stdout, f"cluster add did not say '{words}'")
    check_kept(cluster, before)
    check_members(cluster, version, ids)
    return recorded(cluster)[name]


def add_not_member(cluster, version, ids):
    """An add whose key is not an admin's: the node runs but is not a member; it says so and how to undo it."""
    ops_key = cluster.dir / "keys" / "ops.key"
    made = json.loads(palisade("keygen", "ops", "--out", ops_key, "-o", "json").stdout)
    with open(cluster.dir / "cluster.toml", "a") as f:
        f.write(f'\n[[identity]]\nname = "ops"\nkeys = ["{made["public_key"]}"]\n')
    for pid in running(cluster).values():
        os.kill(pid, signal.SIGHUP)
    wait_until("the daemons to let ops connect",
               lambda: cluster.cli("--key", ops_key, "member", "list", check=False).returncode == 0, timeout=30)
    before = running(cluster)
    name = f"lockd-{ids[-1] + 1}"
    done = palisade("cluster", "add", "lockd", "--dir", cluster.dir, "--key", ops_key)
    check(done.returncode == 9, f"cluster add with a key that is not an admin's: exit {done.returncode}, not 9")
    for words in [f"{name} runs (pid ", "is not a member of the lock group: permission_denied",
                  f"member add {ids[-1] + 1}", f"palisade cluster remove {name} --dir {cluster.dir}"]:
        check(words in done.stderr, f"cluster add did not say '{words}'")
    check_kept(cluster, before)
    check_members(cluster, version, ids)
    pid = running(cluster).get(name)
    check(pid is not None, f"{name} does not run")
    # Undone as it says.
    done = palisade("cluster", "remove", name, "--dir", cluster.dir)
    check(done.returncode == 0, f"cluster remove {name}: exit {done.returncode}")
    check(f"{name} was not a member of the lock group: members {', '.join(map(str, ids))}, version {version}"
          in done.stdout, f"cluster remove {name} did not say it was not a member")
    check_gone(cluster, name, pid)
    check("'ops'" in (cluster.dir / "cluster.toml").read_text(), "the ops identity went with the node")
    check_kept(cluster, before)
    check_members(cluster, version, ids)


def remove_master(cluster, version, ids):
    _, _, roles = members(cluster)
    master = next(i for i, role in roles.items() if role == "master")
    name = f"lockd-{master}"
    pid = running(cluster)[name]
    before = {n: p for n, p in running(cluster).items() if n != name}
    done = palisade("cluster", "remove", name, "--dir", cluster.dir, "-o", "json")
    check(done.returncode == 0, f"cluster remove {name}: exit {done.returncode}")
    removed = json.loads(done.stdout)
    left = [i for i in ids if i != master]
    check(removed["was_member"] and removed["stopped"] and not removed["purged"], f"remove reported {removed}")
    check((removed["members_version"], removed["members"]) == (version, left), f"remove reported {removed}")
    check(removed["master"] not in (None, name), f"master after removing {name}: {removed['master']}")
    check_gone(cluster, name, pid)
    check("removed from the lock group" in (cluster.dir / f"{name}.log").read_text(),
          f"{name}'s log does not say it was removed")
    check(Path(removed["data_dir"]).is_dir(), f"{name}'s data directory was not kept")
    check_kept(cluster, before)
    check_members(cluster, version, left)
    return master, left


def remove_purged(cluster, node, version, ids):
    name = f"lockd-{node}"
    pid = running(cluster)[name]
    before = {n: p for n, p in running(cluster).items() if n != name}
    done = palisade("cluster", "remove", name, "--dir", cluster.dir, "--purge")
    check(done.returncode == 0, f"cluster remove {name} --purge: exit {done.returncode}")
    left = [i for i in ids if i != node]
    for words in [f"{name} left the lock group: members {', '.join(map(str, left))}, version {version}",
                  f"stopped {name} (pid {pid})", f"removed its data {cluster.dir}/{name} and log"]:
        check(words in done.stdout, f"cluster remove did not say '{words}'")
    check_gone(cluster, name, pid)
    check(not (cluster.dir / name).exists() and not (cluster.dir / f"{name}.log").exists(),
          f"--purge left {name}'s data or log")
    check_kept(cluster, before)
    check_members(cluster, version, left)
    return left


def replica_set(cluster):
    """(version, [addresses]) of the replica set `member list -o json` shows."""
    listed = cluster.member_list()["replicas"]
    return listed["version"], [r["address"] for r in listed["replicas"]]


def check_left(cluster, name, pid):
    """Replica NAME left: exited, out of DIR/daemons, its identity out of the file and its key gone."""
    check(exited(pid), f"{name} (pid {pid}) still runs")
    check(name not in recorded(cluster), f"{name} is still in DIR/daemons")
    text = (cluster.dir / "cluster.toml").read_text()
    check(f"'{name}'" not in text and not (cluster.dir / "keys" / f"{name}.key").exists(),
          f"{name}'s identity or key is still there")


def check_joined(cluster, new, endpoint, version, size):
    """Replica NEW serves on its own data directory, in the file's set and in replica set VERSION of SIZE."""
    text = (cluster.dir / "cluster.toml").read_text()
    check(f"identity = '{new}'" in text and "spare" not in text, f"the cluster file does not list {new} in the set")
    check(new in running(cluster) and (cluster.dir / new).is_dir(), f"{new} does not run on its own data directory")
    got_version, addresses = replica_set(cluster)
    check(got_version == version and endpoint in addresses and len(addresses) == size,
          f"replica set: version {got_version}, {addresses}")


def replace_replica(cluster, name, version, purge):
    """`cluster replace NAME`: the new replica serves in the set, the old one is gone; the new one's name."""
    pid = running(cluster)[name]
    before = {n: p for n, p in running(cluster).items() if n != name}
    args = ["cluster", "replace", name, "--dir", cluster.dir] + (["--purge", "-o", "json"] if purge else [])
    done = palisade(*args)
    check(done.returncode == 0, f"cluster replace {name}: exit {done.returncode}")
    if purge:
        out = json.loads(done.stdout)
        new, endpoint = out["name"], out["endpoint"]
        check(out["replaced"] == name and out["replica_set_version"] == version and out["bytes_moved"] > 0,
              f"cluster replace -o json: {out}")
        check(not (cluster.dir / name).exists() and not (cluster.dir / f"{name}.log").exists(),
              f"--purge left {name}'s data or log")
    else:
        line = next(li for li in done.stdout.splitlines() if li.startswith(f"replaced {name} "))
        new, endpoint = line.split(" by ")[1].split()[0], line.split(" by ")[1].split()[1].strip("()")
        for words in [f"replica set version {version}: 3 replicas, W=2 R=2", f"stopped {name} and took it out",
                      "paused writes: replica set version",
                      f"kept its data {cluster.dir}/{name}"]:
            check(words in done.stdout, f"cluster replace did not say '{words}'")
        check((cluster.dir / name).is_dir(), f"{name}'s data is gone without --purge")
    check_left(cluster, name, pid)
    check_joined(cluster, new, endpoint, version, 3)
    check_kept(cluster, before)
    return new


def add_replica_refused(cluster, version):
    """`cluster add replica` with a key that may not change the set: undone, nothing of the new replica left."""
    before = running(cluster)
    config = tomllib.loads((cluster.dir / "cluster.toml").read_text())
    keys = sorted(p.name for p in (cluster.dir / "keys").iterdir())
    done = palisade("cluster", "add", "replica", "--dir", cluster.dir, "--key", cluster.dir / "keys" / "ops.key")
    check(done.returncode == 9, f"cluster add replica with a key that is not an admin's: exit {done.returncode}")
    check("the replica set did not change (replica-" in done.stderr and "is gone again" in done.stderr,
          f"cluster add replica did not say it undid the addition: {done.stderr}")
    name = done.stderr.split("the replica set did not change (")[1].split()[0]
    check(running(cluster) == before, f"daemons after the undone addition: {running(cluster)}, not {before}")
    check(name not in recorded(cluster), f"{name} is still in DIR/daemons")
    check(tomllib.loads((cluster.dir / "cluster.toml").read_text()) == config, "the cluster file changed")
    check(sorted(p.name for p in (cluster.dir / "keys").iterdir()) == keys, f"{name}'s key is left")
    check(not (cluster.dir / name).exists(), f"{name}'s data is left")
    got_version, addresses = replica_set(cluster)
    check(got_version == version and len(addresses) == 3, f"replica set after the refusal: {got_version}")


def add_replica(cluster, version):
    """`cluster add replica`: a new replica-N joins the set, four replicas with W 3; its name."""
    before = running(cluster)
    done = palisade("cluster", "add", "replica", "--dir", cluster.dir)
    check(done.returncode == 0, f"cluster add replica: exit {done.returncode}: {done.stderr}")
    line = next(li for li in done.stdout.splitlines() if li.startswith("added replica-"))
    new, endpoint = line.split()[1], line.split()[2].strip("()")
    check(f"replica set version {version}: 4 replicas, W=3 R=2" in done.stdout, f"cluster add replica: {done.stdout}")
    check_joined(cluster, new, endpoint, version, 4)
    check_kept(cluster, before)
    return new


def remove_refused_while_stopped(cluster, name, staying, version):
    """`cluster remove NAME` while a replica that would stay is stopped: refused (exit 4), the set unchanged."""
    pid = running(cluster)[staying]
    os.kill(pid, signal.SIGSTOP)
    try:
        refused(["cluster", "remove", name, "--dir", cluster.dir], 4, "which stays, does not answer")
    finally:
        os.kill(pid, signal.SIGCONT)
    got_version, addresses = replica_set(cluster)
    check(got_version == version and len(addresses) == 4, f"replica set after the refusal: {got_version}, {addresses}")
    check(name in running(cluster), f"{name} stopped although its removal was refused")


def remove_replica(cluster, name, version):
    """`cluster remove NAME -o json` of a replica: it leaves the set (three, W 3), stops, and leaves the file."""
    pid = running(cluster)[name]
    before = {n: p for n, p in running(cluster).items() if n != name}
    done = palisade("cluster", "remove", name, "--dir", cluster.dir, "-o", "json")
    check(done.returncode == 0, f"cluster remove {name}: exit {done.returncode}: {done.stderr}")
    out = json.loads(done.stdout)
    check(out["removed"] == name and out["replica_set_version"] == version and out["write_quorum"] == 3 and
          "name" not in out and "replaced" not in out, f"cluster remove {name} -o json: {out}")
    check_left(cluster, name, pid)
    got_version, addresses = replica_set(cluster)
    check(got_version == version and out["removed_endpoint"] not in addresses and len(addresses) == 3,
          f"replica set: version {got_version}, {addresses}")
    check_kept(cluster, before)


def lock_group_only_client(cluster, version, member):
    """A client's cluster file that names only the lock group: put, get and status take the set it records."""
    blocks = (cluster.dir / "cluster.toml").read_text().split("\n\n")
    only = "\n\n".join(b for b in blocks if not b.lstrip().startswith(("[[replica]]", "[quorum]")))
    check("[[replica]]" not in only and "[[lockd]]" in only, f"the file without replicas: {only}")
    path = cluster.dir / "client.toml"
    path.write_text(only)
    try:
        done = palisade("--cluster", path, "put", "lock-group-only", "v")
        check(done.returncode == 0, f"put from a file naming only the lock group: exit {done.returncode}")
        done = palisade("--cluster", path, "get", "lock-group-only")
        check(done.returncode == 0 and done.stdout == "v\n", f"get from it: exit {done.returncode}, {done.stdout!r}")
        done = palisade("--cluster", path, "status", "-o", "json")
        shown = [r["endpoint"] for r in json.loads(done.stdout)["replicas"]]
        check(shown == replica_set(cluster)[1] and replica_set(cluster)[0] == version,
              f"status from it shows replicas {shown}, not the set the lock group records")
        spare_from_lock_group_only_file(cluster, path, member, version)
    finally:
        path.unlink()


def spare_from_lock_group_only_file(cluster, path, member, version):
    """A replica started from a file that names only the lock group, with the key of MEMBER (a replica identity) on
    a new port: it takes the set over CurveZMQ from the lock group and, not in it, is a spare."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    replica = PALISADE.parent.parent / "replica" / "palisade-replica"
    log = cluster.dir / "spare-from-lock-group.log"
    with open(log, "w") as out:
        daemon = subprocess.Popen([str(replica), "--data-dir", cluster.dir / "spare-from-lock-group", "--listen",
                                   f"tcp://127.0.0.1:{port}", "--cluster", path, "--key",
                                   cluster.dir / "keys" / f"{member}.key"], stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until("the replica to say it is a spare", lambda: "a spare of" in log.read_text(), timeout=30)
        text = log.read_text()
        check(f"names only the lock group: took replica set version {version} from it, 3 replicas (W=3 R=2), which "
              "do not include this one" in text, f"the replica's log: {text}")
    finally:
        daemon.terminate()
        daemon.wait(timeout=30)


def down_and_up(cluster, version, ids, replicas):
    pids = running(cluster)
    done = palisade("cluster", "down", "--dir", cluster.dir)
    check(done.returncode == 0 and f"stopped {len(pids)} daemons" in done.stdout, "cluster down")
    for name, pid in pids.items():
        check(exited(pid), f"{name} (pid {pid}) runs after cluster down")
    refused(["cluster", "add", "lockd", "--dir", cluster.dir], 4, "is not up: start it with `palisade cluster up")
    refused(["cluster", "replace", "replica-2", "--dir", cluster.dir], 4, "is not up: start it with `palisade cluster up")
    done = palisade("cluster", "up", "--dir", cluster.dir, "-o", "json")
    check(done.returncode == 0, f"cluster up after down: exit {done.returncode}")
    up = json.loads(done.stdout)
    names = sorted(d["name"] for d in up["daemons"])
    check(names == sorted([f"lockd-{i}" for i in ids] + replicas),
          f"cluster up started {names}")
    check(up["master"] in [f"lockd-{i}" for i in ids], f"cluster up: master {up['master']}")
    for d in up["daemons"]:
        check(d["started"] and "--join" not in argv(d["pid"]), f"{d['name']} started again with --join")
    check_members(cluster, version, ids)
    done = palisade("cluster", "status", "--dir", cluster.dir)
    check(done.returncode == 0 and "(healthy)" in done.stdout, "cluster status after up: not healthy")
    for i in ids:
        check(f"lockd-{i} " in done.stdout, f"cluster status does not list lockd-{i}")
    cluster.cli("put", "after-restart", "yes")
    check(cluster.cli("get", "after-restart").stdout.strip() == "yes", "after-restart does not read back")


def main():
    with tempfile.TemporaryDirectory(prefix="palisade-cluster-nodes-") as tmp:
        refused(["cluster", "add", "lockd", "--dir", Path(tmp) / "nowhere"], 4, "no cluster in")
        refused(["cluster", "replace", "replica-0", "--dir", Path(tmp) / "nowhere"], 4, "no cluster in")
        plain = Path(tmp) / "plain"
        check(palisade("cluster", "up", "--dir", plain, "--insecure").returncode == 0, "cluster up --insecure")
        try:
            refused(["cluster", "replace", "replica-0", "--dir", plain], 2, "was started --insecure")
        finally:
            palisade("cluster", "down", "--dir", plain, "--purge")
        with MetricsCluster(PALISADE, Path(tmp) / "cluster", lockd=3, replicas=3) as cluster:
            d = cluster.dir
            refused(["cluster", "remove", "lockd-99", "--dir", d], 2, "lockd-99 is not a node of the cluster in")
            check_members(cluster, 0, [1, 2, 3])

            load = LockLoad(cluster)
            load.start()
            try:
                load.wait_for_steps(3)
                add_json(cluster, 1, [1, 2, 3, 4])
                load.wait_for_steps(3)
                add_text(cluster, 2, [1, 2, 3, 4, 5])
                load.wait_for_steps(3)
                add_not_member(cluster, 2, [1, 2, 3, 4, 5])
                load.wait_for_steps(3)
                master, ids = remove_master(cluster, 3, [1, 2, 3, 4, 5])
                load.wait_for_steps(3)
                # Another of the first three: one of them is left.
                ids = remove_purged(cluster, min(i for i in ids if i <= 3), 4, ids)
                load.wait_for_steps(3)
                first = replace_replica(cluster, "replica-1", 2, purge=False)
                load.wait_for_steps(3)
                second = replace_replica(cluster, "replica-0", 4, purge=True)
                load.wait_for_steps(3)
                add_replica_refused(cluster, 4)
                added = add_replica(cluster, 6)
                load.wait_for_steps(3)
                remove_refused_while_stopped(cluster, first, added, 6)
                load.wait_for_steps(3)
                remove_replica(cluster, first, 8)
                load.wait_for_steps(3)
                lock_group_only_client(cluster, 8, added)
            finally:
                load.stopping.set()
                load.join(timeout=180)
            tokens = load.verify()

            refused(["cluster", "up", "--dir", d, "--base-port", cluster.base_port], 2,
                    f"--base-port {cluster.base_port} would put lockd-{ids[0]} on port {cluster.base_port}, but it "
                    f"listens on")
            refused(["cluster", "replace", "replica-99", "--dir", d], 2, "'replica-99' is not a replica of the cluster")
            refused(["cluster", "remove", second, "--dir", d], 2, "W 3 and R 2 must be within 1..2")
            down_and_up(cluster, 4, ids, ["replica-2", second, added])
            print(f"ok: cluster add lockd twice, remove the master's node (lockd-{master}) and another, replace "
                  f"replica-1 by {first} and replica-0 by {second}, add {added} and remove {first}, under load: "
                  f"{len(load.done)} lock-and-put steps all succeeded, tokens {tokens[0]}..{tokens[-1]} strictly "
                  f"increasing, every key read back; no daemon restarted; down and up again with members {ids}")


if __name__ == "__main__":
    main()
