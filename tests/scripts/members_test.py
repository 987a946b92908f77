#!/usr/bin/env python3
"""`palisade member` on a local cluster of five lockd nodes, under load.

While a loop takes a lock and writes under it (`palisade lock` and `palisade
put`, as a person would), the lock group goes from five members to three,
back to five, then replaces its master's node by another, each change with
one `palisade member` command. Every change is applied (the version counts
them, `member list` shows the new members), the removed master stops
leading, every step of the loop succeeds, tokens strictly increase, and every
key the loop wrote reads back. Bad ids are usage errors that change nothing.

Usage: members_test.py SOURCE_DIR PALISADE
"""
import json
import sys
import tempfile
import time
from pathlib import Path

SOURCE = Path(sys.argv[1]).resolve()
PALISADE = Path(sys.argv[2]).resolve()
sys.path.insert(0, str(SOURCE / "contrib" / "grafana"))
from metrics_cluster import LockLoad, MetricsCluster, wait_until  # noqa: E402


def check(condition, message):
    if not condition:
        sys.exit("FAIL: " + message)


def members(cluster):
    """(version, [ids], {id: role}) as `palisade member list -o json` prints them."""
    done = cluster.cli("member", "list", "-o", "json")
    listed = json.loads(done.stdout)
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

            load = LockLoad(cluster)
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
                check((version, ids) == (2, [1, 2, 3, 4, 5]), f"after adding {dropped} back: version {version}, {ids}")
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
            finally:
                load.stopping.set()
                load.join(timeout=180)
            check(not load.failed, f"{len(load.failed)} of {load.steps()} steps failed: {load.failed[:3]}")
            tokens = [token for _, token in load.done]
            check(all(a < b for a, b in zip(tokens, tokens[1:])), f"tokens did not strictly increase: {tokens}")
            for n, _ in load.done:
                got = cluster.cli("get", f"roll-{n}").stdout.strip()
                check(got == str(n), f"roll-{n}, acknowledged, reads back {got!r}")
            print(f"ok: 5 -> 3 -> 5 -> 4 members and the master's node replaced, under load: {len(load.done)} "
                  f"lock-and-put steps all succeeded, tokens {tokens[0]}..{tokens[-1]} strictly increasing, every "
                  f"key read back")


if __name__ == "__main__":
    main()
