#!/usr/bin/env python3
"""scripts/bench-peers: how the targets table prints a ratio, and that a ratio
just under its bound is a miss that reads as one; palisade's plaintext rows and
CURVE's cost beside its CURVE figures."""
import importlib.machinery
import importlib.util
import os
import sys

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "bench-peers")


def load():
    loader = importlib.machinery.SourceFileLoader("bench_peers", SCRIPT)
    spec = importlib.util.spec_from_loader("bench_peers", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def main():
    bp = load()
    assert bp.shown_ratio(2.561, 2) == "2.56x"
    assert bp.shown_ratio(1.997, 2) == "1.997x"  # 2.00x would read as met
    assert bp.shown_ratio(3.996, 4) == "3.996x"
    assert bp.shown_ratio(3.94, 4) == "3.94x"
    assert bp.shown_ratio(4.0, 4) == "4.00x"
    # The targets table, from results of two systems.
    def points(ops):
        return [{"workload": "lock", "clients": 1, "ops_per_s": ops, "p50_ms": 1.0, "p99_ms": 2.0, "errors": 0}]
    results = {"palisade": {"points": points(599.1)}, "etcd": {"points": points(300.0)}}
    targets = bp.targets(results)
    assert targets == [{"workload": "lock", "clients": 1, "peer": "etcd", "at_least": 2, "ratio": 1.997,
                        "met": False}], targets
    # --repeat: per point, the run with the median ops/s, whole, and every run's ops/s.
    def run(lock_ops, put_ops, p99):
        return {"version": "v", "points": [
            {"workload": "lock", "clients": 1, "ops_per_s": lock_ops, "p50_ms": 1.0, "p99_ms": p99, "errors": 0},
            {"workload": "put", "clients": 1, "ops_per_s": put_ops, "p50_ms": 1.0, "p99_ms": p99, "errors": 0}]}
    merged = bp.median_runs([run(300, 900, 7.0), run(100, 700, 5.0), run(200, 800, 6.0)])
    lock, put = merged["points"]
    assert (lock["ops_per_s"], lock["p99_ms"], lock["runs_ops_per_s"]) == (200, 6.0, [300, 100, 200]), lock
    assert (put["ops_per_s"], put["p99_ms"]) == (800, 6.0), put
    assert bp.median_runs([run(300, 900, 7.0), run(100, 700, 5.0)])["points"][0]["ops_per_s"] == 100  # lower middle
    assert bp.median_runs([run(300, 900, 7.0)])["points"][0]["ops_per_s"] == 300
    # A run whose point failed operations is left out of that point's median, unless every run failed some.
    def failed(run_result):
        return {**run_result, "points": [{**p, "errors": 1} for p in run_result["points"]]}
    stalled = bp.median_runs([failed(run(14, 900, 9.0)), failed(run(44, 700, 9.0)), run(187, 800, 6.0)])
    assert (stalled["points"][0]["ops_per_s"], stalled["points"][0]["runs_ops_per_s"]) == (187, [14, 44, 187])
    every = bp.median_runs([failed(run(14, 900, 9.0)), failed(run(44, 700, 9.0)), failed(run(187, 800, 6.0))])
    assert every["points"][0]["ops_per_s"] == 44, every
    # A point one run lacks: the median of the runs that have it, and None in its place.
    short = {"version": "v", "points": run(150, 0, 1.0)["points"][:1]}
    merged_short = bp.median_runs([short, run(300, 900, 7.0), run(100, 700, 5.0)])
    assert [p["workload"] for p in merged_short["points"]] == ["lock", "put"], merged_short
    assert merged_short["points"][1]["runs_ops_per_s"] == [None, 900, 700], merged_short
    assert merged_short["points"][1]["ops_per_s"] == 700  # the lower middle of two
    info = {"machine": {"date": "d", "cpu": "c", "cores": 2, "memory_gib": 1, "os": "o", "kernel": "k",
                        "data_fs": "ext4", "load_at_start": 0.0}, "duration_s": 5, "repeat": 3}
    table = bp.markdown({"palisade": {**merged, "settings": "s", "topology": "t"}}, info, "cmd")
    assert "| lock | 1 | palisade | 200 (100-300) |" in table, table
    assert "ran 3 times" in table, table
    # The targets table prints the ratio the rows print (4.23496 is 4.23x in both, not 4.235, then 4.24x).
    def one(ops):
        return {"points": [{"workload": "lock", "clients": 16, "ops_per_s": ops, "p50_ms": 1.0, "p99_ms": 2.0,
                            "errors": 0}], "version": "v", "settings": "s", "topology": "t"}
    table = bp.markdown({"palisade": one(3471.4), "etcd": one(819.7)}, info, "cmd")
    row_ratio = [line for line in table.splitlines() if line.startswith("| lock | 16 | etcd |")][0].split("|")[-2].strip()
    target_ratio = [line for line in table.splitlines() if line.startswith("| lock | 16 | etcd | ≥")][0].split("|")[5].strip()
    assert row_ratio == target_ratio, (row_ratio, target_ratio)
    # An at-most bound: 1.253 against at most 1.25 is a miss and reads as one.
    assert bp.shown_ratio(1.253, 1.25, at_most=True) == "1.253x"
    assert bp.shown_ratio(1.246, 1.25, at_most=True) == "1.25x"
    assert bp.shown_ratio(1.31, 1.25, at_most=True) == "1.31x"
    # palisade run with --links both: its CURVE points are palisade's, its plaintext ones a row beside them,
    # and CURVE's cost as palisade-peer-bench computed it.
    def cost(ratio):
        return {"workload": "lock", "clients": 16, "curve_cpu_us_per_op": 120 * ratio,
                "plaintext_cpu_us_per_op": 120.0, "ratio": ratio, "at_most": 1.25, "pass": ratio <= 1.25}
    def both(curve_ops, plaintext_ops, ratio):
        return {**one(curve_ops), "plaintext": {**one(plaintext_ops), "topology": "plain"},
                "curve_cost": [cost(ratio)]}
    table = bp.markdown({"palisade": both(3000, 3500, 1.253), "etcd": one(1000)}, info, "cmd")
    rows = [line for line in table.splitlines() if line.startswith("| lock | 16 |")]
    assert [r.split("|")[3].strip() for r in rows[:3]] == ["palisade", "palisade (plaintext)", "etcd"], rows
    assert rows[2].split("|")[-2].strip() == "3.00x", rows  # palisade's ratio is CURVE's
    assert "| palisade (plaintext) | v | the same" in table, table
    assert "| lock | 16 | 150 | 120 | 1.253x | MISSED |" in table, table
    # --repeat: plaintext points are medians too, and CURVE's cost is the median run's.
    merged = bp.median_runs([both(3000, 3600, 1.3), both(2800, 3400, 1.1), both(2900, 3500, 1.2)])
    assert merged["points"][0]["ops_per_s"] == 2900, merged
    assert merged["plaintext"]["points"][0]["ops_per_s"] == 3500, merged
    assert merged["plaintext"]["topology"] == "plain", merged
    assert merged["curve_cost"] == [cost(1.2)], merged["curve_cost"]
    print("ok")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"FAILED: {e!r}", file=sys.stderr)
        raise
