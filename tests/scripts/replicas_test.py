#!/usr/bin/env python3
"""`palisade member replace|add|remove --replica` on a local cluster, under load.

While a loop takes a lock and writes under it (`palisade lock` and `palisade
put`, as a person would), each of the three replicas is replaced, one by one,
by a new replica on a new port and a new data directory, as
docs/operations.md ("Replacing a replica") tells a person to: `palisade
keygen`, the new `[[identity]]` and `[[replica]]` (spare = true) entries
appended to the cluster file, SIGHUP to the running daemons (no restart: their
pids stay), the new replica started, `palisade member replace --replica OLD
--with ENDPOINT`, the old replica stopped and the file's entries brought up to
date; the last one is killed (SIGKILL) before it is replaced, as a machine
that died. Every replacement is recorded by the lock group (two versions each: the
pause, then the new set), no step of the loop fails (a put in the
pause waits it out), tokens strictly increase, and every key the loop
wrote reads back from the new replicas alone. Bad requests are usage errors
that change nothing. The fence floors come with the fill: a holder superseded
before the replacements is still refused (by the floor alone: a key never
written) once every replica is new. Then a fourth replica is added (`member add --replica ENDPOINT`: W becomes
3) and one of the three removed (`member remove --replica ID`: W stays 3,
every replica that stays answering), still under load, and the keys read
back again. Then each of the three lockd nodes is replaced the same way
(members_test's steps: `palisade member replace OLD NEW`, the new node
started with --join), under the same load. At the end, docs/cli.md's paused holder: stopped past its lease,
its late writes are refused on every key. Each change's time, pause and
bytes moved are printed.

Usage: replicas_test.py SOURCE_DIR PALISADE
"""
import json
import os
import re
import signal
import socket
import sys
import tempfile
from pathlib import Path

SOURCE = Path(sys.argv[1]).resolve()
PALISADE = Path(sys.argv[2]).resolve()
sys.path.insert(0, str(SOURCE / "contrib" / "grafana"))
sys.path.insert(0, str(SOURCE / "tests" / "scripts"))
from metrics_cluster import LockLoad, MetricsCluster, append_to_file, exited, replace_file, wait_until  # noqa: E402
from members_test import NewDaemons, NewNodes, check, check_refused, replace_every_member, zombie_drill  # noqa: E402

REPLICA = PALISADE.parent.parent / "replica" / "palisade-replica"


def replica_set(cluster):
    """The lock group's record of the replica set, as `palisade member list -o json` prints it."""
    return cluster.member_list()["replicas"]


class NewReplicas(NewDaemons):
    """The replicas this test adds."""

    def add_to_file(self, name):
        """The replica's identity and endpoint, a spare, appended to the cluster file; its endpoint."""
        endpoint = f"tcp://127.0.0.1:{self.new_identity(name, 'replica')}"
        append_to_file(self.cluster.cluster_file,
                       f"\n[[replica]]\nendpoint = '{endpoint}'\nidentity = '{name}'\nspare = true\n")
        return endpoint

    def start_replica(self, name, endpoint):
        self.start(name, [str(REPLICA), "--cluster", self.cluster.cluster_file, "--data-dir",
                          str(self.cluster.dir / name), "--listen", endpoint, "--key",
                          str(self.cluster.dir / "keys" / f"{name}.key")])


def remove_from_file(cluster_file, endpoint):
    """A replica's [[replica]] entry and identity out of the cluster file."""
    text = Path(cluster_file).read_text()
    blocks = re.split(r"\n(?=\[)", text)
    old = next(b for b in blocks if b.startswith("[[replica]]") and f"'{endpoint}'" in b.replace('"', "'"))
    identity = re.search(r"identity = ['\"]([^'\"]+)['\"]", old).group(1)
    kept = [b for b in blocks if b is not old and not (b.startswith("[[identity]]") and
                                                      re.search(rf"name = ['\"]{identity}['\"]", b))]
    check(len(kept) == len(blocks) - 2, f"{endpoint}'s entries are not both in the cluster file")
    replace_file(cluster_file, "\n".join(kept))


def unspare(cluster_file, endpoint):
    """The replica on `endpoint` a member: no longer a spare in the cluster file."""
    text = Path(cluster_file).read_text()
    spare = re.search(rf"endpoint = '{re.escape(endpoint)}'\nidentity = '[^']+'\nspare = true\n", text)
    check(spare is not None, f"{endpoint} is not a spare of the cluster file")
    replace_file(cluster_file, text.replace(spare.group(0), spare.group(0).removesuffix("spare = true\n")))


def update_file(cluster_file, old_endpoint, new_endpoint):
    """The old replica's [[replica]] entry and identity out of the cluster file, the new one no longer spare."""
    remove_from_file(cluster_file, old_endpoint)
    unspare(cluster_file, new_endpoint)


def change(cluster, args):
    """`palisade member ARGS -o json`, which must succeed; its JSON."""
    done = cluster.cli("member", *args, "-o", "json", check=False, timeout=180)
    print(f"+ palisade member {' '.join(str(a) for a in args)}: exit {done.returncode}: "
          f"{done.stdout.strip()} {done.stderr.strip()}", flush=True)
    check(done.returncode == 0, f"member {args}: exit {done.returncode}: {done.stderr}")
    return json.loads(done.stdout)


def add_then_remove(cluster, load, new):
    """A fourth replica added, then the first of the three removed; returns the report lines."""
    before = replica_set(cluster)
    name = "replica-new-added"
    endpoint = new.add_to_file(name)
    for pid in {**cluster.pids, **new.pids()}.values():
        os.kill(pid, signal.SIGHUP)
    new.start_replica(name, endpoint)
    wait_until(f"{name} to answer", lambda: answers(cluster, endpoint, new.procs[name]), timeout=30)
    # A spare takes versions only from a fill until a set lists it (docs/design.md "The replica set").
    log = (new.dir / f"{name}.log").read_text()
    check("a spare of" in log, f"{name} does not say it is a spare: {log}")
    added = change(cluster, ["add", "--replica", endpoint])
    after = replica_set(cluster)
    check(after["version"] == before["version"] + 2 and len(after["replicas"]) == 4 and
          after["write_quorum"] == 3 and after["read_quorum"] == 2,
          f"after adding {endpoint}: {after}, before {before}")
    unspare(cluster.cluster_file, endpoint)
    check_floor_carried(cluster, endpoint)
    load.wait_for_steps(3)

    leaving = after["replicas"][0]
    removed = change(cluster, ["remove", "--replica", leaving["id"]])
    final = replica_set(cluster)
    addresses = [r["address"] for r in final["replicas"]]
    check(final["version"] == after["version"] + 2 and len(addresses) == 3 and leaving["address"] not in addresses
          and final["write_quorum"] == 3 and final["read_quorum"] == 2,
          f"after removing replica {leaving['id']}: {final}")
    old_name = next(n for n, proc in new.procs.items() if leaving["address"] in " ".join(proc.args))
    stop(cluster, new, old_name, signal.SIGTERM)
    remove_from_file(cluster.cluster_file, leaving["address"])
    for pid in {**cluster.pids, **new.pids()}.values():
        os.kill(pid, signal.SIGHUP)
    load.wait_for_steps(3)
    return [f"added {endpoint} in {added['took_ms']} ms, writes paused {added['paused_ms']} ms, "
            f"{added['bytes_moved']} bytes moved",
            f"removed replica {leaving['id']} in {removed['took_ms']} ms, writes paused {removed['paused_ms']} ms, "
            f"{removed['bytes_moved']} bytes moved, {removed['versions_sent']} versions sent"]


def replace_every_replica(cluster, load, new):
    """Each replica replaced by a new one on a new port and data directory; returns the report lines."""
    report = []
    first = replica_set(cluster)
    for number, old in enumerate(list(first["replicas"])):
        before = replica_set(cluster)
        name = f"replica-new-{number}"
        running = {**cluster.pids, **new.pids()}
        endpoint = new.add_to_file(name)
        for pid in running.values():
            os.kill(pid, signal.SIGHUP)
        new.start_replica(name, endpoint)
        wait_until(f"{name} to answer", lambda: answers(cluster, endpoint, new.procs[name]), timeout=30)
        # The last one is dead first, as a machine that died for good.
        old_name = next((n for n, pid in running.items() if old["address"] in " ".join(argv(pid))), None)
        check(old_name is not None, f"no running daemon serves {old['address']}")
        dead = number == len(first["replicas"]) - 1
        if dead:
            stop(cluster, new, old_name, signal.SIGKILL)
        done = cluster.cli("member", "replace", "--replica", old["id"], "--with", endpoint, "-o", "json",
                           check=False, timeout=180)
        print(f"+ palisade member replace --replica {old['id']} --with {endpoint}: exit {done.returncode}: "
              f"{done.stdout.strip()} {done.stderr.strip()}", flush=True)
        check(done.returncode == 0, f"replacing replica {old['id']}: exit {done.returncode}: {done.stderr}")
        out = json.loads(done.stdout)
        after = replica_set(cluster)
        addresses = [r["address"] for r in after["replicas"]]
        check(after["version"] == before["version"] + 2 and after["phase"] == "serving",
              f"after replacing {old['id']}: version {after['version']} {after['phase']}, before {before['version']}")
        check(old["address"] not in addresses and endpoint in addresses and len(addresses) == 3,
              f"after replacing {old['address']} by {endpoint}: {addresses}")
        # The old replica leaves: stopped, and out of the file.
        if not dead:
            stop(cluster, new, old_name, signal.SIGTERM)
        update_file(cluster.cluster_file, old["address"], endpoint)
        for name_now, pid in {**cluster.pids, **new.pids()}.items():
            os.kill(pid, signal.SIGHUP)
            if name_now in running:
                check(running[name_now] == pid and not exited(pid), f"{name_now} was restarted or died")
        check_floor_carried(cluster, endpoint)
        load.wait_for_steps(3)
        report.append(f"{'dead ' if dead else ''}replica {old['id']} -> {after['replicas'][-1]['id']} ({endpoint}) "
                      f"in {out['took_ms']} ms, "
                      f"writes paused {out['paused_ms']} ms, {out['bytes_moved']} bytes moved, "
                      f"{out['versions_sent']} versions and {out['floors_raised']} floors sent, "
                      f"{out['completed']} pending versions completed")
        print("+ " + report[-1], flush=True)
    return report


def superseded_sequencer(cluster):
    """The sequencer of a grant of lock 'carried' that a later grant superseded: its fence floor, and nothing
    else, refuses a write with it (of a key never written)."""
    first = cluster.cli("lock", "carried", "--", "sh", "-c", "echo $PALISADE_SEQUENCER").stdout.strip()
    cluster.cli("lock", "carried", "--", "true")  # the acquire fences a write quorum
    check_zombie_refused(cluster, first, "before the replacements")
    floors = [floors_of(cluster, r["address"]).get("carried") for r in replica_set(cluster)["replicas"]]
    check(max(f or 0 for f in floors) > 0, f"no first replica holds a floor of 'carried': {floors}")
    CARRIED_FLOOR.append(max(f or 0 for f in floors))
    return first


def floors_of(cluster, endpoint):
    status = json.loads(cluster.cli("status", "-o", "json").stdout)
    replica = next(r for r in status["replicas"] if r["endpoint"] == endpoint)
    return replica["floors"]


def check_floor_carried(cluster, endpoint):
    """The new replica holds lock 'carried''s fence floor, which only the fill could have given it: it refuses
    the superseded holder on its own, as the replica it replaced did."""
    floor = floors_of(cluster, endpoint).get("carried")
    check(floor is not None and floor == CARRIED_FLOOR[0], f"{endpoint}'s floor of 'carried' is {floor}, "
          f"the first replicas' {CARRIED_FLOOR[0]}")


CARRIED_FLOOR = []  # the floor the first replicas hold


def check_zombie_refused(cluster, sequencer, when):
    late = cluster.cli("put", "never-written", "zombie", "--sequencer", sequencer, check=False)
    check(late.returncode == 3 and "fenced" in late.stderr,
          f"a superseded holder's put {when}: exit {late.returncode}: {late.stderr}")


def answers(cluster, endpoint, proc):
    """Whether the replica on `endpoint` accepts connections; a replica that exited fails the test."""
    check(proc.poll() is None, f"the new replica on {endpoint} exited {proc.returncode} (its log says why)")
    host, port = endpoint.removeprefix("tcp://").rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=1).close()
        return True
    except OSError:
        return False


def stop(cluster, new, name, sig):
    if name in cluster.pids:
        cluster.kill(name, sig)
    else:
        new.procs[name].send_signal(sig)
        new.stop(name)


def argv(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_text().split("\0")
    except OSError:
        return []


def main():
    with tempfile.TemporaryDirectory(prefix="palisade-replicas-") as tmp:
        with MetricsCluster(PALISADE, Path(tmp) / "cluster", lockd=3, replicas=3) as cluster:
            first = replica_set(cluster)
            check(first["version"] == 0 and [r["id"] for r in first["replicas"]] == [1, 2, 3],
                  f"a new cluster's replica set: {first}")
            check_refused(cluster, ["replace", "--replica", "9", "--with", "tcp://127.0.0.1:1"], 2, "not in")
            check_refused(cluster, ["replace", "--replica", "1", "--with", "tcp://127.0.0.1:1"], 2,
                          "not a [[replica]]")
            check_refused(cluster, ["replace", "--replica", "1"], 2, "--with ENDPOINT")
            check_refused(cluster, ["add", "--replica", "tcp://127.0.0.1:1"], 2, "not a [[replica]]")
            check_refused(cluster, ["add", "--replica", "tcp://127.0.0.1:1", "7"], 2, "no node ids")
            check_refused(cluster, ["remove", "--replica", "1", "--write-quorum", "1"], 2, "W never falls")
            check_refused(cluster, ["remove", "--replica", "9"], 2, "not in")
            check(replica_set(cluster)["version"] == 0, "a refused replacement changed the replica set")

            load = LockLoad(cluster)
            new = NewReplicas(cluster)
            new.first_port = 30000  # apart from members_test's, which may run at the same time
            nodes = NewNodes(cluster)
            nodes.first_port = 30400
            try:  # the replicas it started stop whatever fails
                zombie = superseded_sequencer(cluster)
                load.start()
                try:
                    load.wait_for_steps(3)
                    report = replace_every_replica(cluster, load, new)
                    report += add_then_remove(cluster, load, new)
                    # Then each lockd node, the same way, under the same load.
                    report += replace_every_member(cluster, load, nodes)
                finally:
                    load.stopping.set()
                    load.join(timeout=180)
                remaining = [r["address"] for r in replica_set(cluster)["replicas"]]
                check(len(remaining) == 3 and not any(a in remaining for a in (r["address"] for r in first["replicas"])),
                      f"a first replica is still in the set: {remaining}")
                # Every key reads back from the new replicas: the first ones are gone.
                tokens = load.verify()
                # The floor came with the fill: the new replicas refuse the superseded holder as the first did.
                check_zombie_refused(cluster, zombie, "after every replica was replaced")
                zombie_drill(cluster)
            finally:
                new.stop_all()
                nodes.stop_all()
            print("replacements: " + "; ".join(report))
            print(f"ok: every replica replaced by a new one on a new port and data directory, one added and one "
                  f"removed, then every lockd node replaced the same way, under load: "
                  f"{len(load.done)} lock-and-put steps all succeeded, tokens {tokens[0]}..{tokens[-1]} strictly "
                  f"increasing, every acknowledged key read "
                  f"back from the new replicas, and the paused holder's late writes refused")


if __name__ == "__main__":
    main()
