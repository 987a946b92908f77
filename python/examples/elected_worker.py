#!/usr/bin/env python3
"""elected_worker.py CLUSTER_FILE KEY_FILE NAME [--ttl SECONDS] [--steps N]

A worker that does its work only while it leads election "workers", and
fences every write with its leadership's grant: counts to N in key
"workers/counter". Were it paused past its session's lease (a GC pause,
SIGSTOP) and another worker elected meanwhile, its next write is refused
(palisade.NoSession or palisade.Fenced) and it stops: a deposed leader never
writes over its successor. KEY_FILE: "-" for a cluster on plaintext links.
"""
import argparse
import sys
import time

import palisade


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("cluster_file")
    parser.add_argument("key_file")
    parser.add_argument("name")
    parser.add_argument("--ttl", type=float, default=0, help="the session's lease in seconds (0: the cluster's)")
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()

    cluster = palisade.ClusterFile(args.cluster_file, key="" if args.key_file == "-" else args.key_file)
    store = palisade.QuorumStore(cluster)
    locks = palisade.LockClient(cluster, store=store, session_ttl=args.ttl)
    election = palisade.Election(locks, store, "workers", key="workers/leader")

    lease = election.campaign(args.name.encode(), wait=3600)
    print(f"leading token {lease.token}", flush=True)
    try:
        for _ in range(args.steps):
            current = store.get("workers/counter")
            count = int(current.value) if current else 0
            store.put("workers/counter", str(count + 1).encode(), lease=lease)
            print(f"wrote {count + 1}", flush=True)
            time.sleep(0.05)
    except (palisade.NoSession, palisade.Fenced) as deposed:
        print(f"deposed: {deposed.code}", flush=True)
        return 3
    election.resign(lease)
    print("resigned", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
