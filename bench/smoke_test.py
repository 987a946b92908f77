#!/usr/bin/env python3
"""Smoke test of one end-to-end benchmark: runs it for a moment at 1 and 2
clients and checks that it exits 0 (no failed call) and that its JSON holds
every level it should, each with operations, latencies and no errors, and its
targets. It measures nothing: speed is for the benchmark itself, run by hand.
"peers" is palisade-peer-bench against palisade with --links both: every point
with CURVE and with plaintext links, and CURVE's cost (a miss is no failure).

    smoke_test.py quorum|replica|lock|peers BENCH_BINARY
"""
import json
import os
import subprocess
import sys
import tempfile

SHORT = ["--seconds", "0.2", "--floor-seconds", "0.1", "--clients", "1,2"]
# One run without metrics and one served and scraped: the cost of serving metrics.
OVERHEAD = ["--overhead-rounds", "1", "--scrape-ms", "50"]
ARGS = {"quorum": SHORT, "replica": SHORT + OVERHEAD, "lock": SHORT + OVERHEAD + ["--handoff-clients", "2"],
        "peers": ["--system", "palisade", "--links", "both", "--duration", "0.2", "--warmup", "0.2",
                  "--clients", "1,2", "--handoff-clients", "2", "--get-keys", "50"]}


def check_level(level, count_key="ops"):
    assert level[count_key] > 0, level
    assert level["errors"] == 0, level
    assert 0 < level["p50_ms"] <= level["p99_ms"], level


def check_targets(data, count):
    assert len(data["targets"]) == count, data["targets"]
    for t in data["targets"]:
        assert t["measured"] > 0 and t["bound"] > 0 and isinstance(t["pass"], bool), t


def check_overhead(data):
    """Both runs at the largest level; the served one was scraped, every scrape answered, and what
    a scrape costs was measured and turned into the share of the daemons' CPU the target judges."""
    o = data["metrics_overhead"]
    assert o["clients"] == 2 and o["scrape_ms"] == 50, o
    assert [r["metrics"] for r in o["runs"]] == [False, True], o
    off, served = o["runs"]
    assert off["ops_per_s"] > 0 and served["ops_per_s"] > 0, o
    assert off["scrapes"] == 0 and served["scrapes"] >= 1 and served["failed_scrapes"] == 0, o
    assert off["scrape_cpu_us"] == 0 and served["scrape_cpu_us"] > 0, o
    assert o["median_ops_per_s_served"] == served["ops_per_s"], o
    share = o["daemons"] * (1000 / o["scrape_ms"]) * served["scrape_cpu_us"] / (
        off["daemon_cpu_us_per_op"] * off["ops_per_s"]) if off["daemon_cpu_us_per_op"] > 0 else 0
    assert abs(o["serving_cpu_share"] - share) <= 1e-4 * max(share, 1e-9), (o, share)
    target = data["targets"][-1]
    assert target["name"].startswith("serving metrics, scraped every 50 ms"), target
    assert target["bound"] == 2 and abs(target["measured"] - 100 * o["serving_cpu_share"]) <= 1e-4 * max(
        target["measured"], 1e-9), target


def check_quorum(data):
    got = sorted((l["op"], l["stores"], l["clients"]) for l in data["levels"])
    # With one client both store models are the same, so it runs once.
    want = sorted((op, stores, clients) for op in ("put", "get")
                  for stores, clients in (("per-client", 1), ("per-client", 2), ("isolated", 2)))
    assert got == want, got
    for level in data["levels"]:
        check_level(level)
    assert data["floor"]["round_trip_p50_ms"] > 0 and data["floor"]["synced_commit_p50_ms"] > 0, data["floor"]
    check_targets(data, 2)  # the 64-client ones need a 64-client level


def check_replica(data):
    assert [l["clients"] for l in data["levels"]] == [1, 2], data["levels"]
    for level in data["levels"]:
        check_level(level)
    check_targets(data, 2)
    check_overhead(data)


def check_lock(data):
    got = sorted((l["cycle"], l["clients"]) for l in data["levels"])
    assert got == [("distinct", 1), ("distinct", 2), ("handoff", 2)], got
    for level in data["levels"]:
        check_level(level, "cycles")
    check_targets(data, 2)
    check_overhead(data)


def check_peers(data):
    assert data["links"] == "both", data["links"]
    assert "CURVE links" in data["topology"] and "plaintext links" in data["plaintext"]["topology"], data
    want = [(w, c) for w in ("lock", "handoff", "put", "get") for c in ((2,) if w == "handoff" else (1, 2))]
    for points in (data["points"], data["plaintext"]["points"]):
        assert [(p["workload"], p["clients"]) for p in points] == want, points
        for p in points:
            check_level(p)
            # CPU time comes in clock ticks (10 ms): a 0.2 s point may see none.
            assert p["server_cpu_us_per_op"] >= 0 and p["client_cpu_us_per_op"] >= 0, p
    # One entry per lock, put and get point, in order, but for points whose
    # plaintext CPU was too short to measure (0 ticks).
    costs = data["curve_cost"]
    points = [(c["workload"], c["clients"]) for c in costs]
    measured = [x for x in want if x[0] != "handoff"]
    assert points == [x for x in measured if x in points] and len(set(points)) == len(points), costs
    for c in costs:
        assert c["curve_cpu_us_per_op"] >= 0 and c["plaintext_cpu_us_per_op"] > 0, c
        assert abs(c["ratio"] - c["curve_cpu_us_per_op"] / c["plaintext_cpu_us_per_op"]) < 1e-9, c
        assert c["at_most"] == 1.25 and c["pass"] == (c["ratio"] <= 1.25), c


def main():
    kind, binary = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "bench.json")
        cmd = [binary] + ARGS[kind] + ["--tmp-dir", tmp, "--json", out]
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=100)
        print(run.stdout)
        assert run.returncode == 0, "exit %d: %s" % (run.returncode, run.stderr)
        with open(out) as f:
            data = json.load(f)
    {"quorum": check_quorum, "replica": check_replica, "lock": check_lock, "peers": check_peers}[kind](data)
    print("ok: %s bench" % kind)


if __name__ == "__main__":
    main()
